"""Ctrl-C and SHOP_R1_DEBUG across the CLI: an interrupted command exits 130 with one
line and leaves no half-written file (a re-run works); a debug run shows the traceback.
Split from test_cli_bad_inputs.py, whose table covers bad input."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_errors import error_line
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.data.io import write_sessions
from shop_r1.data.synth import generate_sessions

ENTRY = "shop_r1.cli"
REFUSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens, connect is refused


def invoke(args: list[str]) -> Any:
    env = {"SHOP_R1_DEBUG": "", "NO_COLOR": "1", "COLUMNS": "200"}
    return CliRunner().invoke(app, args, env=env)


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    path = tmp_path / "gold.jsonl"
    write_sessions(generate_sessions(12, seed=1), path)
    return path


def test_ctrl_c_in_process_leaves_nothing_and_a_rerun_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while synth writes: exit 130, one line, no output and no temporary file;
    the same command then succeeds."""
    import shop_r1.data.synth as synth

    real = synth._session
    out = tmp_path / "s.jsonl"

    def interrupted(index: int, *a: Any) -> Any:
        if index == 5:
            raise KeyboardInterrupt
        return real(index, *a)

    monkeypatch.setattr(synth, "_session", interrupted)
    result = invoke(["data", "synth", "--sessions", "20", "-o", str(out)])
    assert "interrupted" in error_line(result, 130)
    assert list(tmp_path.iterdir()) == []  # neither s.jsonl nor .s.jsonl.*.part
    monkeypatch.setattr(synth, "_session", real)
    result = invoke(["data", "synth", "--sessions", "20", "-o", str(out)])
    assert result.exit_code == 0 and len(out.read_text().splitlines()) == 20


def test_ctrl_c_real_signal_mid_synth(tmp_path: Path) -> None:
    """A real SIGINT to a real process halfway through a long synth."""
    import signal
    import subprocess
    import time

    out = tmp_path / "big.jsonl"
    env = {**os.environ, "SHOP_R1_DEBUG": ""}
    cmd = [sys.executable, "-m", ENTRY, "data", "synth", "--sessions"]
    proc = subprocess.Popen(
        [*cmd, "10000000", "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # as a terminal would start it, whatever the CI runner did to pytest's SIGINT
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not any(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the temporary file exists: writing has begun
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["data", "stats", str(tmp_path / "missing.jsonl")], env={"SHOP_R1_DEBUG": "1"}
    )
    assert type(result.exception).__name__ == "ToolError"  # re-raised, not formatted


def test_ctrl_c_during_eval_retries_exits_at_once(sessions: Path, tmp_path: Path) -> None:
    """SIGINT while every worker waits out a retry backoff: exit 130 within seconds (it
    waited out the backoff, 30 s and more, before the workers were told to stop)."""
    import signal
    import subprocess
    import time

    cmd = [sys.executable, "-m", ENTRY, "eval", "--data", str(sessions)]
    cmd += ["--output-dir", str(tmp_path / "ev"), "--endpoint", REFUSED, "--served-model"]
    cmd += ["m", "--split", "all", "--retries", "6", "--timeout", "1"]
    env = {**os.environ, "SHOP_R1_DEBUG": ""}
    proc = subprocess.Popen(
        cmd,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(4)  # imports, then the first refusals: workers are now in their backoff
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - start < 25  # the bug waited out backoffs of 30 s and more
    assert [x for x in err.splitlines() if x.strip()][-1].startswith("shop-r1: error: interrupted")
    assert not (tmp_path / "ev" / "metrics.json").exists()
