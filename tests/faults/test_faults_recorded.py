"""The recorded failures (tests/fixtures/faults/) read right: the fast path of the corpus."""

from __future__ import annotations

import pytest

from .case import FIXTURES
from .suite import Recording, all_cases, load_recordings
from .verdict import check_diagnosis

CASES = {c.id: c for c in all_cases()}
RECORDINGS = load_recordings()


def test_every_case_is_recorded_and_every_recording_is_a_case():
    recorded = {f"{r.family}/{r.case}" for r in RECORDINGS}
    assert recorded == set(CASES), (
        f"not recorded: {sorted(set(CASES) - recorded)}; no such case: {sorted(recorded - set(CASES))}"
        " (python -m tests.faults.record <family/case>)"
    )


@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda r: f"{r.family}/{r.case}")
def test_recording_is_diagnosed(rec: Recording):
    case = CASES[f"{rec.family}/{rec.case}"]
    assert rec.expected == case.expected, "the case's expected codes changed: re-record it"
    for key in ("command", "versions", "cause"):
        assert rec.meta[key], f"{FIXTURES}/{rec.family}/{rec.case}.json: no {key}"
    assert "torch" in rec.meta["versions"]
    check_diagnosis(case, rec.log, rec.meta["exit_code"], rec.meta["evidence"])
