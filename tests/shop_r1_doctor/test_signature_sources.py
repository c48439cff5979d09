"""Signatures read messages the frameworks really print: each `printed_by` citation is
found again in the messages extracted from that framework's source
(knowledge/framework_messages/, written by scripts/extract_messages.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re

import pytest
from repo_paths import load_script

from shop_r1_doctor.framework_messages import (
    MESSAGES_DIR,
    cited_message,
    kept_versions,
    load_messages,
)
from shop_r1_doctor.logscan import Signature, load_signatures


def _script():  # scripts/ is no package; load the extractor as a module
    return load_script("scripts/extract_messages.py")


def unread_citations(signatures: tuple[Signature, ...]) -> list[str]:
    """`id: why` for each citation whose message the kept list no longer has."""
    kept = kept_versions()
    out = []
    for sig in signatures:
        for cite in sig.printed_by:
            if cite.outside is not None:
                continue
            assert cite.package and cite.version and cite.at
            if kept.get(cite.package) != cite.version:
                out.append(
                    f"{sig.id}: cites {cite.package} {cite.version}, the kept messages are of "
                    f"{cite.package} {kept.get(cite.package)}"
                )
            elif (
                cited_message(cite.package, cite.version, cite.at, sig.pattern, sig.example) is None
            ):
                out.append(
                    f"{sig.id}: no message at {cite.package} {cite.version} {cite.at} that it reads"
                )
    return out


def test_every_cited_message_is_still_printed_by_its_framework():
    assert unread_citations(load_signatures()) == []


def test_a_signature_for_text_nobody_prints_is_named():
    sigs = load_signatures()
    sig = next(s for s in sigs if s.id == "bf16-setup-no-gpu")
    reworded = Signature(
        id=sig.id,
        code=sig.code,
        pattern=re.compile("Your setup has no bf16 GPU"),
        title=sig.title,
        try_=sig.try_,
        source=sig.source,
        example="ValueError: Your setup has no bf16 GPU.",
        printed_by=sig.printed_by,
    )
    assert [line.split(":")[0] for line in unread_citations((reworded,))] == ["bf16-setup-no-gpu"]


def test_citations_cover_frameworks_and_outside():
    sigs = load_signatures()
    sourced = {c.package for s in sigs for c in s.printed_by if c.package}
    outside = [s.id for s in sigs if any(c.outside for c in s.printed_by)]
    # the stack's main message sources are all cited at least once
    assert {"torch", "transformers", "trl", "huggingface_hub", "flash_attn"} <= sourced
    assert "killed-by-oom" in outside


def test_kept_files_are_well_formed():
    for package, version in kept_versions().items():
        rows = load_messages(package, version)
        assert rows, f"{package}-{version}.jsonl is empty"
        for m in rows[:50]:
            assert m.text and m.file and m.kind
            assert m.regex.search(m.text.replace("{}", "X"))


def test_python_sites_become_regexes():
    mod = _script()
    src = (
        "def f(x):\n"
        "    msg = f'CUDA driver {x} is too old'\n"
        "    raise RuntimeError(msg)\n"
        "def g(n):\n"
        "    warnings.warn('only %d GPUs visible' % n)\n"
        "    logger.warning('NCCL timeout after {} s'.format(n))\n"
        "    raise ValueError('port ' + str(n) + ' is in use')\n"
    )
    got = {(m.text, m.line, m.kind) for m in mod.python_messages(src, "f.py")}
    assert got == {
        ("CUDA driver {} is too old", 2, "raise RuntimeError"),
        ("only {} GPUs visible", 5, "warn"),
        ("NCCL timeout after {} s", 6, "log warning"),
        ("port {} is in use", 7, "raise ValueError"),
    }


def test_a_name_given_several_values_gives_one_message_per_value():
    """bitsandbytes sets BNB_BACKEND = "CPU"/"CUDA"/"XPU" by platform; the message it
    formats into is printed with each, not only with the last ("Configured XPU binary")."""
    mod = _script()
    src = (
        "BACKEND = 'CPU'\n"
        "if cuda:\n"
        "    BACKEND = 'CUDA'\n"
        "else:\n"
        "    BACKEND = 'XPU'\n"
        "PREFIX = 'bitsandbytes'\n"
        "def load(path):\n"
        "    raise RuntimeError(f'{PREFIX}: configured {BACKEND} binary not found at {path}')\n"
    )
    got = sorted(m.text for m in mod.python_messages(src, "cextension.py"))
    assert got == [
        "bitsandbytes: configured CPU binary not found at {}",
        "bitsandbytes: configured CUDA binary not found at {}",
        "bitsandbytes: configured XPU binary not found at {}",
    ]


def test_cpp_checks_and_library_strings():
    mod = _script()
    cpp = 'x;\nTORCH_CHECK(is_sm8x || is_sm90,\n  "FlashAttention only supports Ampere GPUs or newer.");\n'
    [m] = mod.cpp_messages(cpp, "api.cpp")
    assert (m.text, m.line, m.kind) == (
        "FlashAttention only supports Ampere GPUs or newer.",
        2,
        "TORCH_CHECK",
    )
    blob = b"\x00_ZN3c105Error\x00%s:%d NCCL WARN Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx\x00ok\x00"
    texts = [m.text for m in mod.binary_messages(blob, "libnccl.so.2")]
    assert texts == [
        "{}:{} NCCL WARN Duplicate GPU detected : rank {} and rank {} both on CUDA device {}"
    ]


@pytest.mark.parametrize("dist", ["trl"])
def test_kept_list_is_what_the_script_extracts(dist, tmp_path):
    """The kept list is the script's output, not edited by hand (the installed release)."""
    version = importlib.metadata.version(dist)
    if kept_versions().get(dist) != version:
        pytest.skip(f"{dist} {version} installed, {kept_versions().get(dist)} kept")
    mod = _script()
    assert mod.main(["--installed", dist, "--out", str(tmp_path)]) == 0
    fresh = (tmp_path / f"{dist}-{version}.jsonl").read_text().splitlines()
    kept = (MESSAGES_DIR / f"{dist}-{version}.jsonl").read_text().splitlines()
    assert [json.loads(r) for r in fresh] == [json.loads(r) for r in kept]
