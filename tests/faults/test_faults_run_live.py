"""`shop-r1 run --json --fast --` around a fault case, in its own wrapper: what the run's
diagnosis leads with, at which severity, and from which evidence (benchmarks/faults_run.py
scores every case this way; these are one of each kind).

- the log and the doctor's snapshot taken inside the limit join (a low `ulimit -n`);
- the log alone cannot show the cause, what the run saw does (a memory cgroup's OOM kill);
- the log names the cause and the doctor the place (a full disk at a checkpoint: the log's
  ENOSPC, the snapshot's file system with no room left) as one cause;
- the user's own bug: nothing about the machine is claimed as its cause at error level
  (a read-only HF_HOME the doctor finds, which the log does not show, is a warning).

Root on Linux is needed (cgroups, mount namespaces).
"""

from __future__ import annotations

import pytest

from shop_r1_doctor.causes import rank_causes

from .case import missing_requirement
from .run_join import causes, run_under_doctor
from .suite import all_cases

CASES = {c.id: c for c in all_cases()}
# (fault case, lead code, lead severity, the sources of the lead's evidence)
LEADS = [
    ("fd_limit/main_keeps_batches", "DATALOADER_FD_LIMIT", "error", ("log", "doctor")),
    ("host_memory/cgroup_oom_kill", "HOST_OOM_KILLED", "error", ("run",)),
    ("disk_full/torch_save", "DISK_FULL_AT_CHECKPOINT", "error", ("log", "doctor")),
]
# (the user's own bug, what the doctor finds true of the machine it failed on)
NEGATIVES = [
    ("user_bugs/reward_raises", ()),
    ("cache_readonly/map_key_error_readonly_home", ("CACHE_DIR_NOT_WRITABLE",)),
]


def _joined(case_id: str):
    case = CASES[case_id]
    why = missing_requirement(case)
    if why:
        pytest.skip(f"{case_id}: {why}")
    joined = run_under_doctor(case)
    assert joined.diagnosis is not None, f"{joined.problem}:\n{joined.captured.output[-3000:]}"
    assert joined.diagnosis["run"]["failed"] is True, joined.captured.output[-2000:]
    assert joined.diagnosis["doctor"]["error"] is None
    return joined


@pytest.mark.parametrize(
    ("case_id", "code", "severity", "sources"), LEADS, ids=[r[0] for r in LEADS]
)
def test_run_leads_with_the_cause(case_id: str, code: str, severity: str, sources: tuple[str, ...]):
    joined = _joined(case_id)
    named = causes(joined.diagnosis)
    assert named, joined.diagnosis
    assert named[0] == (code, severity, sources), named
    alone = [c.code for c in rank_causes(joined.log, machine_feeds=False).causes]
    if "log" in sources:  # the run's own log (output.log) reads as the same cause
        assert alone[:1] == [code], alone
    else:  # only what the run saw shows it: the log alone names no cause
        assert alone == [], alone


@pytest.mark.parametrize(("case_id", "machine"), NEGATIVES, ids=[r[0] for r in NEGATIVES])
def test_a_user_bug_gets_no_error_level_cause_from_the_machine(case_id: str, machine: tuple):
    joined = _joined(case_id)
    named = causes(joined.diagnosis)
    assert [c for c in named if c[1] == "error"] == [], named
    # Beyond what the log alone names (nothing, here), only the doctor's findings on the
    # machine, each a warning at most: nothing in the log shows the run failed of them.
    alone = [c.code for c in rank_causes(joined.log, machine_feeds=False).causes]
    extra = [c for c in named if c[0] not in alone]
    assert [c for c in extra if c[1:] != ("warning", ("doctor",))] == [], named
    assert set(machine) <= {c[0] for c in extra}, named
    if not machine:
        assert extra == [], named
