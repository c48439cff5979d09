"""A recorded failure whose cause the snapshot also shows (a limit, a cache, an env value)
is one lead cause carrying both the log line and the doctor's finding.

Each row is a real recording (tests/fixtures/faults) and the snapshot fact that caused it.
A row whose log no signature reads yet (log_signatures.yaml) is skipped with that reason:
the join needs the log's reading, and that knowledge is added separately.
"""

from __future__ import annotations

import copy

import pytest
from machines import machine_snapshot
from repo_paths import FIXTURES

from shop_r1_doctor.causes import rank_causes
from shop_r1_doctor.diagnose import diagnose
from shop_r1_doctor.logscan import diagnose_log

FAULTS = FIXTURES / "faults"
RW = {"writable": True, "read_only_mount": False, "exists": True}


def _limits(**over):
    base = {
        "rlimits": {
            "nofile": {"soft": 1048576, "hard": 1048576},
            "nproc": {"soft": -1, "hard": -1},
            "address_space": {"soft": -1, "hard": -1},
        },
        "euid": 1000,
        "pids_cgroup": {"version": "v2", "path": "/", "max": -1, "current": 12},
        "caches": [{"name": "HF_HOME", "path": "/data/hf", "checked": "/data/hf", **RW}],
        "net_interfaces": ["eth0", "lo"],
    }
    base.update(over)
    return base


# (recording, what the snapshot shows, the code both name)
ROWS = [
    (
        "fd_limit/main_keeps_batches",
        {"limits": _limits(rlimits={"nofile": {"soft": 128, "hard": 128}})},
        "DATALOADER_FD_LIMIT",
    ),
    (
        "process_limit/dataloader_fork",
        {"limits": _limits(pids_cgroup={"version": "v1", "path": "/job", "max": 4, "current": 1})},
        "PROCESS_LIMIT_REACHED",
    ),
    (
        "cache_readonly/datasets_readonly_home",
        {
            "limits": _limits(
                caches=[
                    {
                        "name": "HF_HOME",
                        "path": "/tmp/shop-r1-fault/hf-home",
                        "checked": "/tmp/shop-r1-fault/hf-home",
                        "exists": True,
                        "writable": True,
                        "read_only_mount": True,
                    }
                ]
            )
        },
        "CACHE_DIR_NOT_WRITABLE",
    ),
    (
        "address_space/tensor_alloc",
        {"limits": _limits(rlimits={"address_space": {"soft": 2048000000, "hard": 2048000000}})},
        "ADDRESS_SPACE_LIMIT",
    ),
    (
        "gpu/alloc_conf_typo",
        {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}},
        "CUDA_ALLOC_CONF_INVALID",
    ),
    (
        "gpu/nccl_socket_ifname_missing",
        {"env": {"NCCL_SOCKET_IFNAME": "nosuch0"}, "limits": _limits()},
        "NCCL_SOCKET_IFNAME_NO_MATCH",
    ),
]


def _snapshot(patch: dict) -> dict:
    snap = copy.deepcopy(machine_snapshot("h100"))
    for key, value in patch.items():
        if key == "env":
            snap.setdefault("env", {}).update(value)
        else:
            snap[key] = value
    return snap


@pytest.mark.parametrize(("recording", "patch", "code"), ROWS, ids=[r[0] for r in ROWS])
def test_recorded_failure_and_the_snapshot_make_one_lead_cause(recording, patch, code):
    log = (FAULTS / f"{recording}.log").read_text()
    findings = diagnose(_snapshot(patch)).findings
    assert code in {f.code for f in findings}, [f.code for f in findings]
    if code not in {m.signature.code for m in diagnose_log(log).matches}:
        pytest.skip(f"no log signature reads {recording}.log as {code} yet (log_signatures.yaml)")
    lead = rank_causes(log, doctor_findings=findings).lead
    assert lead is not None
    assert (lead.code, lead.severity) == (code, "error")
    assert [(e.source, e.code) for e in lead.evidence] == [("log", None), ("doctor", code)]


def test_the_log_alone_keeps_its_own_reading():
    """No finding on the machine: the log's reading leads alone, with the log as evidence."""
    log = (FAULTS / "fd_limit/main_keeps_batches.log").read_text()
    findings = diagnose(_snapshot({"limits": _limits()})).findings
    lead = rank_causes(log, doctor_findings=findings).lead
    assert lead is not None and lead.code == "DATALOADER_FD_LIMIT"
    assert {e.source for e in lead.evidence} == {"log"}


def test_a_machine_finding_the_log_does_not_show_is_no_error_level_cause():
    """The user's own bug (a KeyError in Dataset.map) on a machine whose HF_HOME is
    read-only: the doctor's error-level finding is true of the machine, but nothing in the
    log shows the run failed of it, so as a cause of this run it is at most a warning
    (shop-r1 run on cache_readonly/map_key_error_readonly_home claimed it at error level)."""
    log = (FAULTS / "cache_readonly/map_key_error_readonly_home.log").read_text()
    patch = {r[0]: r[1] for r in ROWS}["cache_readonly/datasets_readonly_home"]
    findings = diagnose(_snapshot(patch)).findings
    assert ("CACHE_DIR_NOT_WRITABLE", "error") in {(f.code, f.severity) for f in findings}
    causes = rank_causes(log, doctor_findings=findings).causes
    assert "error" not in {c.severity for c in causes}, [(c.code, c.severity) for c in causes]
    kept = {c.code: c for c in causes}["CACHE_DIR_NOT_WRITABLE"]
    assert (kept.severity, [e.source for e in kept.evidence]) == ("warning", ["doctor"])
