"""Golden renders of the terminal report, and the ASCII fallback for GBK/cp1252 consoles."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from golden import GOLDEN

from shop_r1_doctor.diagnose import Diagnosis, diagnose
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.render.terminal import ASCII, UNICODE, render_terminal, symbols_for


def _broken() -> Diagnosis:
    return Diagnosis.from_json(json.loads((GOLDEN / "broken.report.json").read_text()))


def test_broken_machine_render(golden):
    golden(GOLDEN / "broken.txt", render_terminal(_broken()))


def test_broken_machine_verbose_render(golden):
    golden(GOLDEN / "broken-verbose.txt", render_terminal(_broken(), verbose=True))


def test_ascii_render_for_cp1252(golden):
    text = render_terminal(_broken(), encoding="cp1252")
    text.encode("cp1252")  # never raises
    golden(GOLDEN / "broken-ascii.txt", text)


@pytest.mark.parametrize("encoding", ["gbk", "cp1252", "cp437", "ascii", "no-such-codec"])
def test_any_console_encoding_renders(encoding):
    text = render_terminal(_broken(), verbose=True, encoding=encoding)
    assert "[X] PyTorch" in text or "[CRASH] PyTorch" in text
    if encoding != "no-such-codec":
        text.encode(encoding)


def test_symbols_fall_back_to_ascii():
    assert symbols_for("utf-8") is UNICODE
    assert symbols_for("gbk") is ASCII  # GBK has √ but no ✓ ✗ ☠
    assert symbols_for("cp1252") is ASCII
    assert symbols_for(None) is ASCII


def test_marks_follow_severity_and_probe_state():
    lines = render_terminal(_broken()).splitlines()
    heads = {
        line.split(" ", 1)[1].split(":")[0]: line.split(" ", 1)[0]
        for line in lines
        if line.startswith("[")
    }
    assert heads["PyTorch"] == "[☠]"  # its probe crashed
    assert heads["FlashAttention 2.8.3"] == "[✗]"
    assert heads["GPUs"] == "[!]"
    assert heads["System"] == "[✓]"
    assert (
        lines[-1]
        == "Doctor summary (profile: hopper): 3 errors, 1 warning. Fix the errors before training."
    )


def test_recorded_h100_render(golden):
    """The real H100, replayed: the whole pipeline (checks, profile) as the user sees it."""
    snap = json.loads((GOLDEN / "h100-replayed.snapshot.json").read_text())
    golden(GOLDEN / "h100.txt", render_terminal(diagnose(snap)))


def test_gbk_console_does_not_crash_the_doctor():
    env = {**os.environ, "PYTHONIOENCODING": "gbk", "NO_COLOR": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "doctor",
            "--snapshot",
            str(GOLDEN / "broken.report.json"),
        ],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout.decode("gbk")
    assert "[CRASH] PyTorch" in out and "Traceback" not in proc.stderr.decode("gbk")


def test_fast_mode_marks_unprobed_subjects():
    snap = json.loads((GOLDEN / "h100-replayed.snapshot.json").read_text())
    del snap["torch"]
    snap["probes"]["torch"] = {"status": "skipped", "seconds": 0.0, "detail": "skipped (--fast)"}
    text = render_terminal(Diagnosis(snap))
    assert "[-] PyTorch: not probed: skipped (--fast)" in text.splitlines()


@pytest.mark.parametrize(
    ("snap", "headline"),
    [
        # a container without NVML: torch's devices, as the checks see them
        (
            {"gpus": [], "torch": {"version": "2.6.0", "capabilities": ["9.0", "9.0"]}},
            "GPUs: 2x ? (cc 9.0) (seen by torch; no NVML or nvidia-smi list)",
        ),
        (
            {"gpus": [], "torch": {"version": "2.6.0", "capabilities": []}},
            "GPUs: no NVIDIA GPU found",
        ),
        ({"torch": {"version": "2.6.0"}}, "GPUs: unknown"),
        (
            {"gpus": [{"index": 0, "name": "NVIDIA H100", "compute_capability": "9.0"}]},
            "GPUs: 1x NVIDIA H100 (cc 9.0)",
        ),
    ],
)
def test_gpu_headline_names_the_gpus_the_checks_judge(snap, headline):
    from shop_r1_doctor.render.facts_text import gpu_headline

    assert gpu_headline(Facts(snap)) == headline
