"""Every probe replayed over a recorded machine reproduces the stored snapshot fixture.

The fixtures under tests/fixtures/golden/*-replayed.snapshot.json feed the render and
CLI tests; this keeps them equal to what the probes really produce from the recordings.
"""

from __future__ import annotations

import json

import pytest
from doctor_replay import replay
from golden import GOLDEN

from shop_r1_doctor.snapshot import validate_snapshot


@pytest.mark.parametrize("machine", ["h100", "h200x2"])
def test_replay_matches_fixture(tmp_path, machine, golden):
    snap = replay(machine, tmp_path)
    validate_snapshot(snap)
    assert snap["probes"]["torch"]["detail"] == "cached"  # served from the seeded cache
    assert all(rec["status"] == "ok" for rec in snap["probes"].values())
    golden(GOLDEN / f"{machine}-replayed.snapshot.json", json.dumps(snap, indent=2) + "\n")
