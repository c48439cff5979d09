"""Cause each CPU failure again and read it: a release that changes a message fails here.

Each case runs in seconds (a tmpfs of 1 MB, a 256 kB /dev/shm, a memory cgroup of a few
hundred MB, a busy port, a missing package); root on Linux is needed for the mount
namespaces and cgroups, and a case this machine cannot cause is skipped with the reason.
Cases with `live=False` (the Hub client retries for 25-50 s without a network) are only
read from their recordings.
"""

from __future__ import annotations

import pytest

from .case import FaultCase, missing_requirement, run_case
from .suite import all_cases
from .verdict import check_diagnosis

LIVE = [c for c in all_cases() if c.live]


@pytest.mark.parametrize("case", LIVE, ids=lambda c: c.id)
def test_live_failure_is_diagnosed(case: FaultCase):
    why = missing_requirement(case)
    if why:
        pytest.skip(f"{case.id}: {why}")
    captured = run_case(case)
    check_diagnosis(case, captured.output, captured.exit_code, captured.evidence)
