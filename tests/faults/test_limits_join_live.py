"""`shop-r1 run` under the limit itself: the failure's log and the doctor's snapshot of the
same process tree name one cause, which leads with both pieces of evidence.

Each case re-causes a recorded fault (tests/faults: the same wrapper, cgroup, ulimit and
read-only mount) with `shop-r1 run --json --fast --` in front of the driver, so the doctor
probes from inside the limit the command failed under. Root on Linux is needed (cgroups,
mount namespaces); a cause whose log no signature reads yet (log_signatures.yaml) asserts
the doctor's finding and then skips the join, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from .case import ROOT, FaultCase, _pids_cgroup, build_command, missing_requirement
from .suite import all_cases

CASES = {c.id: c for c in all_cases()}
# (fault case, the code the snapshot and the log both name)
ROWS = [
    ("fd_limit/main_keeps_batches", "DATALOADER_FD_LIMIT"),
    ("process_limit/dataloader_fork", "PROCESS_LIMIT_REACHED"),
    ("cache_readonly/datasets_readonly_home", "CACHE_DIR_NOT_WRITABLE"),
]


def run_under_doctor(case: FaultCase) -> tuple[dict, str]:
    """The case's wrapper with `shop-r1 run --json --fast --` before the driver: the
    diagnosis document (stdout) and the command's own output (stderr)."""
    scratch = Path(tempfile.mkdtemp(prefix=f"shop-r1-join-{case.name}-"))
    group = procs = None
    try:
        if case.pids_limit is not None:
            group, procs, _ = _pids_cgroup(case.pids_limit)
        command = build_command(case, scratch, procs)
        driver = f"python -m tests.faults.{case.family} "
        assert driver in command, command
        command = command.replace(
            driver,
            f"python -m shop_r1.cli run --json --fast --report-dir {scratch}/run -- {driver}",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "CUDA_"))}
        env.update(
            HF_HOME=str(scratch / "hf-home"),
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
            TOKENIZERS_PARALLELISM="false",
            **case.env,
        )
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=case.timeout + 60,
            check=False,
        )
    finally:
        if group is not None:
            group.rmdir()
        shutil.rmtree(scratch, ignore_errors=True)
    assert proc.stdout.strip(), (
        f"no diagnosis on stdout (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    )
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize(("case_id", "code"), ROWS, ids=[r[0] for r in ROWS])
def test_run_under_the_limit_joins_log_and_snapshot(case_id: str, code: str):
    case = CASES[case_id]
    why = missing_requirement(case)
    if why:
        pytest.skip(f"{case_id}: {why}")
    doc, output = run_under_doctor(case)
    assert doc["run"]["failed"] is True, output[-2000:]
    assert doc["doctor"]["error"] is None
    assert code in [f["code"] for f in doc["doctor"]["findings"]], doc["doctor"]["findings"]
    lead = doc["causes"][0]
    if not any(
        e["source"] == "log" for c in doc["causes"] if c["code"] == code for e in c["evidence"]
    ):
        pytest.skip(
            f"{case_id}: the doctor found {code}; no log signature reads this failure as "
            f"{code} yet (log_signatures.yaml), so there is nothing to join (lead: {lead['code']})"
        )
    assert (lead["code"], lead["severity"]) == (code, "error"), doc["causes"]
    assert [(e["source"], e.get("code")) for e in lead["evidence"]] == [
        ("log", None),
        ("doctor", code),
    ]
