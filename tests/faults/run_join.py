"""A fault case caused again with `shop-r1 run --json --` in front of its driver.

The wrapper is the case's own (tests/faults/case.py: namespaces, tmpfs, cgroup, ulimits,
another user), so `shop-r1 run` and the doctor's snapshot it takes on failure run inside
the limit the command fails under, as a user who wraps their command would. Shared by
tests/faults/test_limits_join_live.py and benchmarks/faults_run.py.
"""

from __future__ import annotations

import json
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .case import ROOT, Captured, FaultCase, Unavailable, run_case

# Where each run's report directory goes: outside every path a case mounts over (/tmp,
# /var/tmp, /run, /dev/shm, /usr/local, the case's own dir) and reachable by the user a
# case runs as. Ignored by git (/build/).
REPORTS = ROOT / "build" / "fault-runs"


@dataclass(frozen=True)
class JoinedRun:
    captured: Captured  # output: what the command printed (shop-r1 run's stderr)
    diagnosis: dict[str, Any] | None  # the shop-r1.diagnosis/1 document, None when none came
    log: str  # the command's log as `shop-r1 run` kept it (output.log), "" when it kept none
    problem: str = ""  # why there is no diagnosis


def run_argv(report_dir: Path, *, fast: bool = True) -> list[str]:
    """`python <these>` runs `shop-r1 run --json` (with --fast: no torch-importing probe)."""
    argv = ["-m", "shop_r1.cli", "run", "--json"]
    if fast:
        argv.append("--fast")
    return [*argv, "--report-dir", str(report_dir), "--"]


def cannot_start_python_as(user: str) -> str | None:
    """Why `shop-r1 run`, run as `user`, could not start this interpreter for the driver
    (an environment whose interpreter lies under a home the user cannot enter: setpriv's
    own exec of it works, a process of the user's cannot exec it again), or None."""
    probe = [
        "setpriv",
        f"--reuid={user}",
        f"--regid={pwd.getpwnam(user).pw_gid}",
        "--clear-groups",
        "/bin/sh",
        "-c",
        '"$0" -c ""',
        sys.executable,
    ]
    proc = subprocess.run(probe, capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode == 0:
        return None
    last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return (
        f"as {user}, a process cannot start {sys.executable} ({last}), so neither can shop-r1 run"
    )


def run_under_doctor(case: FaultCase, cache: Path | None = None, *, fast: bool = True) -> JoinedRun:
    """Cause `case` under `shop-r1 run --json [--fast] --`; its diagnosis and log.

    Raises as run_case does (RuntimeError: this machine cannot cause it; Unavailable:
    what it needs cannot be built here, or `shop-r1 run` could not start the driver as
    the case's user)."""
    if case.run_as is not None:
        why = cannot_start_python_as(case.run_as)
        if why:
            raise Unavailable(why)
    REPORTS.mkdir(parents=True, exist_ok=True)
    holder = Path(tempfile.mkdtemp(prefix=f"{case.name}-", dir=REPORTS))
    holder.chmod(0o777)  # a case run as another user creates its report directory here
    report_dir = holder / "run"
    try:
        # The probes that import torch take longer, the more so on a loaded machine.
        captured = run_case(
            case, cache, under=run_argv(report_dir, fast=fast), extra_seconds=60 if fast else 240
        )
        log_path = report_dir / "output.log"
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.exists() else ""
    finally:
        shutil.rmtree(holder, ignore_errors=True)
    text = (captured.stdout or "").strip()
    if not text:
        return JoinedRun(captured, None, log, f"no diagnosis on stdout (exit {captured.exit_code})")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return JoinedRun(captured, None, log, f"stdout is not one JSON document: {exc}")
    if not isinstance(doc, dict) or doc.get("schema") != "shop-r1.diagnosis/1":
        return JoinedRun(captured, None, log, "stdout is not a shop-r1.diagnosis/1 document")
    return JoinedRun(captured, doc, log)


def causes(doc: dict[str, Any] | None) -> list[tuple[str, str, tuple[str, ...]]]:
    """(code, severity, evidence sources) of each cause the diagnosis names, lead first."""
    if doc is None:
        return []
    return [
        (c["code"], c["severity"], tuple(dict.fromkeys(e["source"] for e in c["evidence"])))
        for c in doc.get("causes", [])
    ]


__all__ = [
    "REPORTS",
    "JoinedRun",
    "cannot_start_python_as",
    "causes",
    "run_argv",
    "run_under_doctor",
]
