"""Every GPU recording (tests/fixtures/faults/gpu/, written by tests.faults.gpu_record on
the device) is diagnosed as the recorder expected; a recording dropped in later is
guarded with no change here."""

from __future__ import annotations

import pytest

from .gpu_cases import CASES
from .suite import Recording, load_recordings
from .verdict_gpu import check_gpu_diagnosis

RECORDINGS = load_recordings(families=("gpu",))
NAMES = {c.name for c in CASES}


def test_every_gpu_recording_is_a_case():
    assert {r.case for r in RECORDINGS} <= NAMES


@pytest.mark.skipif(
    not RECORDINGS, reason="no GPU recordings yet (python -m tests.faults.gpu_record)"
)
@pytest.mark.parametrize("rec", RECORDINGS, ids=lambda r: r.case)
def test_gpu_recording_is_diagnosed(rec: Recording):
    check_gpu_diagnosis(rec)
