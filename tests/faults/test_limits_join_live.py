"""`shop-r1 run` under the limit itself: the failure's log and the doctor's snapshot of the
same process tree name one cause, which leads with both pieces of evidence.

Each case re-causes a recorded fault (tests/faults: the same wrapper, cgroup, ulimit and
read-only mount) with `shop-r1 run --json --fast --` in front of the driver, so the doctor
probes from inside the limit the command failed under. Root on Linux is needed (cgroups,
mount namespaces); a cause whose log no signature reads yet (log_signatures.yaml) asserts
the doctor's finding and then skips the join, saying so.
"""

from __future__ import annotations

import pytest

from .case import missing_requirement
from .run_join import run_under_doctor
from .suite import all_cases

CASES = {c.id: c for c in all_cases()}
# (fault case, the code the snapshot and the log both name)
ROWS = [
    ("fd_limit/main_keeps_batches", "DATALOADER_FD_LIMIT"),
    ("process_limit/dataloader_fork", "PROCESS_LIMIT_REACHED"),
    ("cache_readonly/datasets_readonly_home", "CACHE_DIR_NOT_WRITABLE"),
]


@pytest.mark.parametrize(("case_id", "code"), ROWS, ids=[r[0] for r in ROWS])
def test_run_under_the_limit_joins_log_and_snapshot(case_id: str, code: str):
    case = CASES[case_id]
    why = missing_requirement(case)
    if why:
        pytest.skip(f"{case_id}: {why}")
    joined = run_under_doctor(case)
    doc, output = joined.diagnosis, joined.captured.output
    assert doc is not None, f"{joined.problem}:\n{output[-3000:]}"
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
