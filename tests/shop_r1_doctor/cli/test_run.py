"""`shop-r1 run` through the real entry point: exit codes, logs, reports, Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.secret_corpus import SECRETS

SHOP_R1 = [sys.executable, "-m", "shop_r1.cli"]
PY = sys.executable


def shop_r1_run(tmp_path, *command, extra=()):
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [*SHOP_R1, "run", "--fast", "--report-dir", str(run_dir), *extra, "--", *command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, run_dir


def test_failing_command_exit_code_is_propagated_and_reported(tmp_path):
    proc, run_dir = shop_r1_run(tmp_path, PY, "-c", "import sys; print('loading'); sys.exit(3)")
    assert proc.returncode == 3
    assert proc.stdout == "loading\n"  # shown live, unchanged
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "exited with code 3" in report
    assert f"report written to {run_dir / 'report.md'}" in proc.stderr
    log = (run_dir / "output.log").read_text(encoding="utf-8")
    assert log.endswith("] loading\n") and log.startswith("[")


def test_exit_0_with_empty_output_is_suspicious(tmp_path):
    proc, run_dir = shop_r1_run(tmp_path, PY, "-c", "pass")
    assert proc.returncode == 1
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "exited 0 but printed nothing (suspicious)" in report
    assert "The log is empty: the command printed nothing." in report


def test_training_command_that_ends_at_once_is_a_hint_not_a_wrong_interpreter(tmp_path):
    # The interpreter is this test's own: nothing shows another one, so no error is claimed.
    script = tmp_path / "train_grpo.py"
    script.write_text("print('done')\n", encoding="utf-8")
    proc, run_dir = shop_r1_run(tmp_path, PY, str(script), extra=("--json",))
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "shop-r1.diagnosis/1"
    assert doc["run"]["exit_status"] == 1 and doc["run"]["failed"] is True
    causes = {c["code"]: c["severity"] for c in doc["causes"]}
    assert causes.get("RUN_ENDED_AT_ONCE") == "info"
    assert "WRONG_PYTHON_INTERPRETER" not in causes
    assert not [c for c in doc["causes"] if c["severity"] == "error"]
    assert "done" in proc.stderr  # the command's own output moves to stderr under --json
    assert json.loads((run_dir / "diagnosis.json").read_text(encoding="utf-8")) == doc


def test_run_json_on_success_says_so(tmp_path):
    proc, _ = shop_r1_run(tmp_path, PY, "-c", "print('ok')", extra=("--json",))
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert (doc["schema"], doc["run"]["failed"], doc["causes"]) == (
        "shop-r1.diagnosis/1",
        False,
        [],
    )


@pytest.mark.parametrize(
    ("code", "sig", "status"),
    [
        ("import os; os.abort()", "SIGABRT", 134),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "SIGSEGV", 139),
    ],
)
def test_death_by_signal_is_reported_with_its_name(tmp_path, code, sig, status):
    proc, run_dir = shop_r1_run(tmp_path, PY, "-c", code)
    assert proc.returncode == status
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert f"was killed by {sig}" in report
    assert f"Ended: killed by {sig}" in report
    # PYTHONFAULTHANDLER=1 in the child: the report shows where Python was.
    assert "Fatal Python error:" in report
    assert 'File "<string>", line 1 in <module>' in report


def test_normal_run_writes_no_report(tmp_path):
    proc, run_dir = shop_r1_run(tmp_path, PY, "-c", "print('ok')")
    assert proc.returncode == 0
    assert proc.stdout == "ok\n"
    assert proc.stderr == ""
    assert not (run_dir / "report.md").exists()
    assert (run_dir / "output.log").read_text(encoding="utf-8").endswith("] ok\n")


def test_training_command_that_ends_at_once_is_suspicious(tmp_path):
    script = tmp_path / "train_sft.py"
    script.write_text("print('epoch 1 done')\n", encoding="utf-8")
    proc, run_dir = shop_r1_run(tmp_path, PY, str(script))
    assert proc.returncode == 1
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "sooner than a training run can (--min-seconds 60; suspicious)" in report
    proc, run_dir = shop_r1_run(tmp_path / "b", PY, str(script), extra=("--min-seconds", "0"))
    assert proc.returncode == 0
    assert not (run_dir / "report.md").exists()


def test_exit_0_with_a_silent_failure_in_the_log_is_reported(tmp_path):
    line = (
        "There seems not to be a single sample in your epoch_iterator, stopping training at step 0!"
    )
    proc, run_dir = shop_r1_run(
        tmp_path, PY, "-c", f"print({line!r})", extra=("--min-seconds", "0")
    )
    assert proc.returncode == 1
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "**TRAINER_ZERO_STEPS_TINY_DATASET**" in report


def test_secrets_in_command_and_output_stay_out_of_the_report(tmp_path):
    code = f"import sys; print('login with {SECRETS['hf']}'); sys.exit(1)"
    proc, run_dir = shop_r1_run(tmp_path, PY, "-c", code, "--api-key", SECRETS["bright_data"])
    assert proc.returncode == 1
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert SECRETS["hf"] not in report and SECRETS["bright_data"] not in report
    assert SECRETS["hf"] not in proc.stderr


def test_missing_executable_is_one_line_exit_2(tmp_path):
    proc, _ = shop_r1_run(tmp_path, str(tmp_path / "no-such-program"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("shop-r1: error: cannot start ")
    assert len(proc.stderr.strip().splitlines()) == 1


def _start_with(sigint, argv):
    """Start `argv` with SIGINT set as a terminal (SIG_DFL) or a script's `cmd &` (SIG_IGN)
    would: the test must not depend on how the CI runner started pytest."""
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )


def _signal_state(pid):
    """Each process's ignored/caught signal masks, for a failure message."""
    import psutil

    lines = []
    for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        with contextlib.suppress(OSError, psutil.Error):
            status = Path(f"/proc/{p.pid}/status").read_text().splitlines()
            masks = [x for x in status if x.startswith(("State", "SigIgn", "SigCgt"))]
            lines.append(f"{p.pid} {p.cmdline()[:3]} {masks}")
    return "\n".join(lines)


@pytest.mark.skipif(os.name != "posix", reason="signals are POSIX")
def test_ctrl_c_is_forwarded_to_the_child_and_no_report_is_written(tmp_path):
    child = (
        "import sys, time\n"
        "try:\n"
        "    print('ready', flush=True); time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        "    print('child got SIGINT', flush=True); sys.exit(130)\n"
    )
    run_dir = tmp_path / "run"
    argv = [*SHOP_R1, "run", "--fast", "--report-dir", str(run_dir), "--", PY, "-c", child]
    proc = _start_with(signal.SIG_DFL, argv)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)  # a hang guard, not a speed assertion
    except subprocess.TimeoutExpired:
        state = _signal_state(proc.pid)
        proc.kill()
        pytest.fail(f"SIGINT was not forwarded; signal masks:\n{state}")
    assert out == "child got SIGINT\n"
    assert proc.returncode == 130
    assert "interrupted; log kept in" in err
    assert not (run_dir / "report.md").exists()


@pytest.mark.skipif(os.name != "posix", reason="signals are POSIX")
def test_sigint_ignored_by_our_starter_stays_ignored_like_a_shell(tmp_path):
    """`shop-r1 run -- cmd &` in a script: bash starts us with SIGINT ignored; the Ctrl-C
    meant for the script must not kill the command (the shell itself would not)."""
    child = (
        "import signal, time\n"
        "print('ready', signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True)\n"
        "time.sleep(1.5); print('done', flush=True)\n"
    )
    run_dir = tmp_path / "run"
    argv = [*SHOP_R1, "run", "--fast", "--report-dir", str(run_dir), "--", PY, "-c", child]
    proc = _start_with(signal.SIG_IGN, argv)
    assert proc.stdout.readline() == "ready True\n"  # the child inherited the ignore
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert out == "done\n" and proc.returncode == 0, err
    assert "interrupted" not in err
