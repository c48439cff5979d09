"""`shop-r1 setup` through the real entry point: dry-run goldens per GPU profile, the
`shop-r1.setup/1` JSON, and bad input as one line with exit 2."""

from __future__ import annotations

import json

import pytest
from golden import GOLDEN
from machines import snapshot_path
from repo_paths import FIXTURES, ROOT
from typer.testing import CliRunner

from shop_r1.cli import app

SETUP_GOLDEN = GOLDEN / "setup"
# paths relative to the repository (the tests chdir there): goldens name no machine's paths
RTX5090_570 = str((FIXTURES / "real_dumps" / "vllm-29864-4x-rtx5090.txt").relative_to(ROOT))


def machine(name: str) -> str:
    return str(snapshot_path(name).relative_to(ROOT))


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


# fixed interpreter and source: the golden must not name this machine's paths
FIXED = [
    "--python",
    "python3.12",
    "--shop-r1",
    "shop-r1",
    "--venv",
    "/opt/envs/train",
    "--installer",
    "pip",
]


def invoke(*args: str):
    return CliRunner().invoke(app, ["setup", *args])


# (golden name, profile, the machine whose facts decide)
CASES = [
    ("hopper-h100", "hopper", ["--snapshot", machine("h100")]),
    ("ada-4090", "ada", ["--snapshot", machine("ada4090")]),
    ("turing-t4", "turing", ["--snapshot", machine("t4")]),
    ("blackwell-rtx-driver570", "blackwell-rtx", ["--from", RTX5090_570]),
    ("blackwell-family", "blackwell", ["--snapshot", machine("cpu")]),
    ("cpu", "cpu", ["--snapshot", machine("cpu")]),
]


@pytest.mark.parametrize(("name", "profile", "machine"), CASES, ids=[c[0] for c in CASES])
def test_dry_run_golden(name, profile, machine, golden):
    result = invoke("--profile", profile, *machine, *FIXED, "--dry-run")
    assert result.exit_code == 0, result.output
    golden(SETUP_GOLDEN / f"{name}.txt", result.stdout)


def test_json_is_the_versioned_contract():
    result = invoke("--from", RTX5090_570, *FIXED, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "shop-r1.setup/1"
    assert doc["profile"] == "blackwell-rtx" and doc["dry_run"] is True and doc["result"] is None
    assert doc["torch"]["variant"] == "cu128"
    assert doc["target"]["driver"] == "570.172.08"
    assert [s["name"] for s in doc["steps"]][:2] == ["venv", "torch"]
    assert "torch==2.11.0+cu128" in doc["files"]["constraints.txt"]["text"]


def test_profile_from_the_machine_when_not_given():
    result = invoke("--snapshot", machine("h100"), *FIXED, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["profile"] == "hopper" and doc["profile_how"].startswith("matched snapshot")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "blackwel"], "--profile blackwel: not a profile"),
        (["--profile", "cpu", "--installer", "conda"], "--installer conda: choose auto, uv or pip"),
        (["--profile", "cpu", "--with", "verl"], "--with verl: profile cpu has no extras.verl"),
        (["--profile", "hopper", "--snapshot", "/nonexistent.json"], "/nonexistent.json"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message):
    result = invoke(*FIXED, *args, "--dry-run")
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], result.output


def test_refuses_an_existing_non_empty_venv(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    result = invoke("--profile", "cpu", "--snapshot", machine("cpu"), "--venv", str(tmp_path))
    assert result.exit_code == 2
    assert "exists and is not empty" in result.output and (tmp_path / "keep.txt").exists()


def test_refuses_the_active_environment():
    import sys

    result = invoke("--profile", "cpu", "--snapshot", machine("cpu"), "--venv", sys.prefix)
    assert result.exit_code == 2
    assert "is the environment shop-r1 runs in" in result.output
