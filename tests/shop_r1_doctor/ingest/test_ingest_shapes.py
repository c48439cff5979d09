"""`doctor --from` on the shapes users paste package listings in (tests/fixtures/dump_shapes/).

Each fixture is written the way such pastes appear in issue threads: `pip freeze` with
underscores and `@ file://` lines, a `pip list | grep` excerpt without its header (one with
a single space after the longest name), and pip rows in a second fenced block after
collect_env. The facts asserted are the listed versions, under the names the checks ask.
"""

from __future__ import annotations

import pytest
from repo_paths import FIXTURES

from shop_r1_doctor.ingest import DumpError, parse_dump, snapshot_from_dump

SHAPES = FIXTURES / "dump_shapes"

CASES = {
    "pip-freeze-underscores.txt": {
        "flash-attn": "2.8.3",
        "liger-kernel": None,  # a wheel file: installed, version unknown
        "pyyaml": "6.0.2",
        "typing-extensions": "4.15.0",
        "certifi": None,
        "torch": "2.8.0+cu128",
    },
    "pip-list-grep.txt": {
        "flash-attn": "2.7.4.post1",
        "torch": "2.6.0",
        "vllm": "0.8.5.post1",
        "transformers": "4.51.3",
    },
    "pip-list-grep-one-space.txt": {"torch": "2.7.1+cu128", "torchvision": "0.22.1+cu128"},
    "issue-second-fence.txt": {
        "torch": "2.6.0+cu124",  # from collect_env, the first fence
        "flash-attn": "2.7.4.post1",
        "trl": "0.17.0",
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_listing_shape_is_read(name):
    snap = snapshot_from_dump((SHAPES / name).read_text(encoding="utf-8"), name)
    packages = snap["packages"]
    for dist, version in CASES[name].items():
        assert dist in packages, f"{dist} lost; read {sorted(packages)}"
        assert packages[dist].get("version") == version


def test_no_package_key_keeps_pip_freeze_spelling():
    snap = snapshot_from_dump((SHAPES / "pip-freeze-underscores.txt").read_text(), "f")
    assert not [k for k in snap["packages"] if "_" in k or k != k.lower()]


def test_prose_without_a_version_or_gpu_is_no_dump():
    # one row-like line of prose, no command, nothing it states about the machine
    with pytest.raises(DumpError):
        snapshot_from_dump("We use Ubuntu 22.04 and it fails.\n", "t")


def test_prose_is_not_a_listing_but_its_version_statement_is_read():
    # three columns, as a listing row has: prose, read for what it states and no more
    parts = parse_dump("```\ntorch 2.6.0 fails on import\n```\n", "t")
    assert [(p.parser, p.facts) for p in parts] == [
        ("prose", {"packages": {"torch": {"version": "2.6.0"}}})
    ]
