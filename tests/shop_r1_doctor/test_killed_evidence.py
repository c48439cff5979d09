"""A kill is a host OOM only where something records the OOM: the severity follows the
evidence, in `report --log` (the log alone) as in `run` (the cgroups and the kernel log)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shop_r1_doctor.causes import rank_causes
from shop_r1_doctor.logscan import load_knowledge
from shop_r1_doctor.memwatch import CgroupMemory, MemoryEvidence, memory_finding

BARE = "Loading checkpoint shards:  38%|###   | 3/8 [00:02<00:03,  1.28it/s]Killed\n"
KERNEL = "[ 8812.044] Out of memory: Killed process 4242 (python) total-vm:81234567kB\n"


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        # only the kill: a guess
        (BARE, ("HOST_OOM_KILLED", "info")),
        ("./train.sh: line 12:  4242 Killed                  python train.py\n", ("HOST_OOM_KILLED", "info")),
        ("torch.distributed.elastic.multiprocessing.api: failed (exitcode: -9) local_rank: 0\n", ("HOST_OOM_KILLED", "info")),
        ("zsh: killed     python train.py\n", ("HOST_OOM_KILLED", "info")),
        # the kill and a record of the OOM kill: evidence
        (KERNEL + BARE, ("HOST_OOM_KILLED", "error")),
        (KERNEL, ("HOST_OOM_KILLED", "error")),
        ("slurmstepd: error: Detected 1 oom_kill event in StepId=77.0. Some of the step tasks have been OOM Killed.\n", ("HOST_OOM_KILLED", "error")),
        ("memory.events: oom 1\noom_kill 1\nKilled\n", ("HOST_OOM_KILLED", "error")),
        ("Last State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137\nKilled\n", ("HOST_OOM_KILLED", "error")),
        ("Memory cgroup out of memory: Killed process 77 (python)\n", ("HOST_OOM_KILLED", "error")),
    ],
    ids=["bare", "bash-job", "torchrun-9", "zsh", "kernel+bare", "kernel", "slurm", "cgroup", "k8s", "memcg"],
)  # fmt: skip
def test_log_severity_follows_the_oom_evidence(log, expected):
    lead = rank_causes(log).lead
    assert lead is not None
    assert (lead.code, lead.severity) == expected


def test_a_counter_at_zero_is_no_evidence():
    lead = rank_causes("memory.events: oom 0\noom_kill 0\nKilled\n").lead
    assert lead is not None and (lead.code, lead.severity) == ("HOST_OOM_KILLED", "info")


def test_the_oom_record_is_evidence_only_next_to_a_kill():
    # An OOM record alone names the kill as well (the kernel's line says "Killed process").
    assert load_knowledge()  # the evidence name exists (a typo in `when` fails to load)
    lead = rank_causes("invoked oom-killer: gfp_mask=0x100cca\n").lead
    assert lead is None  # no kill line and no killed process: nothing to claim


def _evidence(before: int, after: int) -> MemoryEvidence:
    def group(n: int) -> CgroupMemory:
        return CgroupMemory("/job", 2, 1 << 30, None, n)

    return MemoryEvidence((group(before),), (group(after),), kernel_lines=(), pid=4242)


def test_run_evidence_makes_a_bare_kill_an_error():
    found = memory_finding(_evidence(0, 1), killed=True, signal="SIGKILL")
    assert found is not None
    lead = rank_causes(BARE, run_findings=[found]).lead
    assert lead is not None
    assert (lead.code, lead.severity) == ("HOST_OOM_KILLED", "error")
    assert {e.source for e in lead.evidence} == {"run"}


def test_run_without_evidence_keeps_every_reading_a_hint():
    found = memory_finding(_evidence(0, 0), killed=True, signal="SIGKILL")
    assert found is not None and found.code == "KILLED_WITHOUT_OOM_EVIDENCE"
    causes = rank_causes(BARE, run_findings=[found]).causes
    assert [(c.code, c.severity) for c in causes] == [
        ("KILLED_WITHOUT_OOM_EVIDENCE", "info"),
        ("HOST_OOM_KILLED", "info"),
    ]


def test_report_log_states_a_bare_kill_as_a_hint(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(BARE, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "shop_r1_doctor.cli.main", "report", "--json", "--log", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    causes = json.loads(proc.stdout)["causes"]
    assert [(c["code"], c["severity"]) for c in causes][:1] == [("HOST_OOM_KILLED", "info")]
    assert all(c["severity"] != "error" for c in causes)
