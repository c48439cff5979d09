"""Cause each CPU failure again and read it: a release that changes a message fails here.

Each case runs in seconds (a tmpfs of 1 MB, a 256 kB /dev/shm, a memory cgroup of a few
hundred MB, a busy port, a missing package); root on Linux is needed for the mount
namespaces and cgroups, and a case this machine cannot cause is skipped with the reason.
Cases with `live=False` (the Hub client retries for 25-50 s without a network) are only
read from their recordings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .case import FaultCase, Unavailable, missing_requirement, run_case
from .suite import all_cases
from .verdict import check_diagnosis

LIVE = [c for c in all_cases() if c.live]


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What cases build (the NumPy 1 extension), once per test session."""
    return tmp_path_factory.mktemp("fault-builds")


@pytest.mark.parametrize("case", LIVE, ids=lambda c: c.id)
def test_live_failure_is_diagnosed(case: FaultCase, build_cache: Path):
    why = missing_requirement(case)
    if why:
        pytest.skip(f"{case.id}: {why}")
    try:
        captured = run_case(case, build_cache)
    except Unavailable as exc:
        pytest.skip(f"{case.id}: {exc}")
    check_diagnosis(case, captured.output, captured.exit_code, captured.evidence)


def test_a_case_that_cannot_be_built_here_says_why(tmp_path, monkeypatch):
    """No compiler on PATH: the NumPy 1 extension case is skipped with one line, not failed."""
    import sys

    from .numpy_abi import prepare

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python only, no cc
    with pytest.raises(Unavailable, match=r"^no C compiler \(cc, gcc or clang\) on PATH$"):
        prepare(tmp_path)
