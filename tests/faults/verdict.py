"""What the log diagnosis must say about a fault, shared by the recorded and live tests."""

from __future__ import annotations

import re

from .case import FaultCase

_OOM_KILLS = re.compile(r"(?:^|\s)oom_kill (\d+)", re.M)


def check_diagnosis(case: FaultCase, log: str, exit_code: int, evidence: dict[str, str]) -> None:
    """Assert what `shop-r1 report --log` (causes.rank_causes, the log alone) makes of it."""
    from shop_r1_doctor.causes import rank_causes

    assert exit_code != 0, f"{case.id}: the driver exited 0; the failure did not happen"
    causes = rank_causes(log, machine_feeds=False).causes
    named = [c.code for c in causes]
    if not case.expected:  # the user's own bug: no error-level cause may be claimed
        errors = [c.code for c in causes if c.severity == "error"]
        assert not errors, f"{case.id}: a user bug reported as {errors}"
        return
    if not case.log_shows_cause:
        kills = [int(n) for v in evidence.values() for n in _OOM_KILLS.findall(v)]
        assert exit_code in (-9, 137), f"{case.id}: exit {exit_code}, not a SIGKILL"
        assert kills and max(kills) >= 1, f"{case.id}: the cgroup records no OOM kill: {evidence}"
        return
    if case.log_reads_as:
        assert named and named[0] in case.log_reads_as, (
            f"{case.id}: leads with {named[:1]}, the log reads as {list(case.log_reads_as)}"
        )
        assert causes[0].severity != "error", f"{case.id}: {named[0]} claimed at error level"
        return
    assert named, f"{case.id}: no cause named; expected {list(case.expected)}"
    assert named[0] in case.expected, (
        f"{case.id}: leads with {named[0]}, expected {list(case.expected)} (all: {named})"
    )
