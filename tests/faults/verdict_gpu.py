"""What `shop-r1 report --log` must say about a GPU recording (tests/fixtures/faults/gpu/)."""

from __future__ import annotations

from .suite import Recording


def check_gpu_diagnosis(rec: Recording) -> None:
    """The failure happened, and the ranked causes (the log, read as `report --log` reads
    it, with the recorded command as context) lead with a code the recorder expected."""
    from shop_r1_doctor.causes import rank_causes

    where = f"gpu/{rec.case}"
    assert rec.meta["exit_code"] != 0, f"{where}: exited 0; the failure did not happen"
    for key in ("command", "versions", "cause", "expected"):
        assert rec.meta.get(key), f"{where}: the recording has no {key}"
    causes = rank_causes(rec.log, command=rec.meta["command"]).causes
    named = [c.code for c in causes]
    assert named, f"{where}: no cause named; expected {list(rec.expected)}"
    assert named[0] in rec.expected, (
        f"{where}: leads with {named[0]}, expected {list(rec.expected)} (all: {named})"
    )
