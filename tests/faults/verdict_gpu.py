"""What `shop-r1 report --log` must say about a GPU recording (tests/fixtures/faults/gpu/)."""

from __future__ import annotations

from .gpu_cases import CASES
from .suite import Recording

CASES_BY_NAME = {c.name: c for c in CASES}


def check_gpu_diagnosis(rec: Recording) -> None:
    """The failure happened, and the ranked causes (the log, read as `report --log` reads
    it, with the recorded command as context) lead with a code the recorder expected; for
    the user's own bug (no expected code) none of them is an error."""
    from shop_r1_doctor.causes import rank_causes
    from shop_r1_doctor.knowledge import load_codes

    where = f"gpu/{rec.case}"
    assert rec.meta["exit_code"] != 0, f"{where}: exited 0; the failure did not happen"
    for key in ("command", "versions", "cause"):
        assert rec.meta.get(key), f"{where}: the recording has no {key}"
    assert isinstance(rec.meta.get("expected"), list), f"{where}: the recording has no expected"
    causes = rank_causes(rec.log, command=rec.meta["command"]).causes
    named = [c.code for c in causes]
    if not rec.expected:  # the user's own bug: no error-level cause may be claimed
        catalog = load_codes()
        errors = [c.code for c in causes if c.code not in catalog or c.severity == "error"]
        assert not errors, f"{where}: a user bug reported as {errors}"
        return
    reads_as = CASES_BY_NAME[rec.case].log_reads_as if rec.case in CASES_BY_NAME else ()
    if reads_as:  # the log cannot tell this cause from another: the hint, never an error
        assert named and named[0] in reads_as, (
            f"{where}: leads with {named[:1]}, the log reads as {list(reads_as)}"
        )
        assert causes[0].severity != "error", f"{where}: {named[0]} claimed at error level"
        return
    assert named, f"{where}: no cause named; expected {list(rec.expected)}"
    assert named[0] in rec.expected, (
        f"{where}: leads with {named[0]}, expected {list(rec.expected)} (all: {named})"
    )
