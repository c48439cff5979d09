"""Ranked causes: a log symptom joined with the doctor finding that explains it, the
node-to-node network failure, and the symptom knowledge's validation."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from machines import machine_snapshot
from repo_paths import FIXTURES

from shop_r1_doctor.causes import SYMPTOMS_PATH, parse_symptoms, rank_causes
from shop_r1_doctor.diagnose import diagnose
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.logscan import diagnose_log

LOGS = FIXTURES / "run_logs"
NO_CUDA_LOG = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 9, in <module>\n'
    "    model.to('cuda')\n"
    "RuntimeError: No CUDA GPUs are available\n"
)


def _hidden_gpus_snapshot():
    snap = copy.deepcopy(machine_snapshot("h100"))
    snap.setdefault("env", {})["CUDA_VISIBLE_DEVICES"] = ""
    return snap


def test_log_symptom_and_doctor_finding_make_one_lead_cause():
    findings = diagnose(_hidden_gpus_snapshot()).findings
    assert "CUDA_VISIBLE_DEVICES_HIDES_GPUS" in {f.code for f in findings}
    causes = rank_causes(NO_CUDA_LOG, command="python train.py", doctor_findings=findings)
    lead = causes.lead
    assert lead is not None
    assert (lead.code, lead.severity) == ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "error")
    assert [(e.source, e.line, e.code) for e in lead.evidence] == [
        ("log", 4, None),
        ("doctor", None, "CUDA_VISIBLE_DEVICES_HIDES_GPUS"),
    ]
    # one cause, not the finding twice or the symptom beside it
    assert [c.code for c in causes.causes].count("CUDA_VISIBLE_DEVICES_HIDES_GPUS") == 1
    assert "TORCH_CUDA_UNAVAILABLE" not in {c.code for c in causes.causes}


def test_the_symptom_alone_is_not_an_error():
    causes = rank_causes(NO_CUDA_LOG, doctor_findings=diagnose(machine_snapshot("h100")).findings)
    assert "error" not in {c.severity for c in causes.causes}


@pytest.mark.parametrize("machine_feeds", [True, False])
def test_report_and_log_scanner_lead_with_the_same_reading(machine_feeds):
    # torch's bare "No CUDA GPUs are available" with nothing on the machine explaining it:
    # the scanner's hint (a CUDA_VISIBLE_DEVICES that names no GPU) leads in both, the
    # symptom's generic reading does not outrank it.
    scanned = diagnose_log(NO_CUDA_LOG).matches
    assert scanned and (scanned[0].code, scanned[0].severity("warning")) == (
        "CUDA_VISIBLE_DEVICES_HIDES_GPUS",
        "info",
    )
    findings = diagnose(machine_snapshot("h100")).findings
    causes = rank_causes(NO_CUDA_LOG, doctor_findings=findings, machine_feeds=machine_feeds)
    assert causes.lead is not None
    assert (causes.lead.code, causes.lead.severity) == ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "info")
    assert "TORCH_CUDA_UNAVAILABLE" in causes.lead.also


def test_a_log_from_elsewhere_is_not_joined_with_this_machine():
    findings = diagnose(_hidden_gpus_snapshot()).findings
    causes = rank_causes(NO_CUDA_LOG, doctor_findings=findings, machine_feeds=False)
    # the log's own reading names the usual reason, as a hint from the log alone:
    # never with this machine's finding as evidence, never above info
    hidden = [c for c in causes.causes if c.code == "CUDA_VISIBLE_DEVICES_HIDES_GPUS"]
    assert [(c.severity, {e.source for e in c.evidence}) for c in hidden] == [("info", {"log"})]


@pytest.mark.parametrize(
    ("name", "severity"),
    [
        ("nccl-two-node-refused.log", "error"),
        # c10d says only that it timed out: what a closed port gives, and also a main rank
        # still preparing data before init_process_group on one healthy node: a hint
        ("c10d-tcpstore-closed-port.log", "info"),
    ],
)
def test_unreachable_peer_is_a_network_failure_not_dev_shm(name, severity):
    causes = rank_causes((LOGS / name).read_text(encoding="utf-8"))
    assert causes.lead is not None
    assert (causes.lead.code, causes.lead.severity) == ("NODE_NETWORK_UNREACHABLE", severity)
    assert "NCCL_DOCKER_SHM_TOO_SMALL" not in {c.code for c in causes.causes}
    assert "MASTER_PORT" in causes.lead.fix and "NCCL_SOCKET_IFNAME" in causes.lead.fix


def test_a_timeout_alone_is_a_hint_a_refused_or_aborted_connect_an_error():
    timeout = (
        "torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms "
        "while trying to connect to (10.0.0.1, 29500).\n"
    )
    aborted = (
        "socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.82<38455> failed : "
        "Software caused connection abort\n"
    )
    nccl_timeout = "misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<4591> failed : Connection timed out\n"
    assert [(c.code, c.severity) for c in rank_causes(timeout).causes] == [
        ("NODE_NETWORK_UNREACHABLE", "info")
    ]
    assert [(c.code, c.severity) for c in rank_causes(nccl_timeout).causes] == [
        ("NODE_NETWORK_UNREACHABLE", "info")
    ]
    assert [(c.code, c.severity) for c in rank_causes(aborted).causes] == [
        ("NODE_NETWORK_UNREACHABLE", "error")
    ]


def test_unreachable_rendezvous_caused_live(tmp_path):
    """torch.distributed to a closed 127.0.0.1 port: what this torch prints, read now."""
    pytest.importorskip("torch.distributed")
    script = (LOGS / "c10d_closed_port.py").read_text(encoding="utf-8")
    script = script.replace("29517", str(_closed_port())).replace("seconds=5", "seconds=2")
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    causes = rank_causes(proc.stdout + proc.stderr)
    assert causes.lead is not None and causes.lead.code == "NODE_NETWORK_UNREACHABLE"


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


def test_report_json_is_the_versioned_diagnosis(tmp_path):
    snap = tmp_path / "env.json"
    snap.write_text(json.dumps(_hidden_gpus_snapshot()), encoding="utf-8")
    log = tmp_path / "run.log"
    log.write_text(NO_CUDA_LOG, encoding="utf-8")
    args = ["--json", "--snapshot", str(snap), "--log", str(log), "--cmd", "python train.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "shop_r1_doctor.cli.main", "report", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "shop-r1.diagnosis/1"
    assert doc["run"]["command"] == "python train.py"
    lead = doc["causes"][0]
    assert (lead["rank"], lead["code"], lead["severity"]) == (
        1,
        "CUDA_VISIBLE_DEVICES_HIDES_GPUS",
        "error",
    )
    assert {e["source"] for e in lead["evidence"]} == {"log", "doctor"}
    assert lead["fix"]
    assert any(f["code"] == "CUDA_VISIBLE_DEVICES_HIDES_GPUS" for f in doc["doctor"]["findings"])


def _symptoms_doc() -> dict:
    return yaml.safe_load(SYMPTOMS_PATH.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("example", "nothing like it", "does not match its own example"),
        ("code", "NO_SUCH_CODE", "unknown code 'NO_SUCH_CODE'"),
        ("explained_by", ["NO_SUCH_CODE"], "explained_by[0]: unknown code"),
        ("rules_out", ["no-such-signature"], "no log signature has id"),
        ("severity", "fatal", "expected one of error, warning, info"),
        ("pattern", "(", "not a valid regex"),
    ],
)
def test_bad_symptom_is_one_line_naming_the_field(field, value, message):
    doc = _symptoms_doc()
    doc["symptoms"][0][field] = value
    with pytest.raises(ToolError) as err:
        parse_symptoms(doc, "log_symptoms.yaml")
    assert message in str(err.value)
    named = "pattern" if field == "example" else field  # logscan's wording: fix one of them
    assert f"symptoms[0].{named}" in str(err.value)


def test_shipped_symptoms_load():
    assert {s.id for s in parse_symptoms(_symptoms_doc(), str(SYMPTOMS_PATH))} >= {
        "no-cuda-device",
        "peer-unreachable",
    }
    assert Path(SYMPTOMS_PATH).is_file()


ACCELERATE_FLOOR = (
    '  File "/venv/lib/python3.11/site-packages/transformers/training_args.py", line 1848,'
    " in _setup_devices\n"
    "    raise ImportError(\n"
    "ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=1.1.0`: Please run"
    " `pip install transformers[torch]` or `pip install 'accelerate>=1.1.0'`\n"
)


def test_a_generic_reading_is_no_surer_than_the_specific_reading_of_its_line():
    # The generic "not installed" reading also matches this line; transformers prints it
    # for an old accelerate and for none, which the specific reading states as a hint.
    causes = rank_causes(ACCELERATE_FLOOR, machine_feeds=False).causes
    assert [(c.code, c.severity) for c in causes] == [
        ("REQUIREMENT_CONFLICT", "info"),
        ("PACKAGE_REQUESTED_NOT_INSTALLED", "info"),
    ]
    # On a line of its own the generic reading keeps its own (error) severity.
    alone = rank_causes(
        "ImportError: You passed `peft_config` but the `peft` library is not installed."
        " Install it with `pip install trl[peft]`.\n",
        machine_feeds=False,
    ).causes
    assert [(c.code, c.severity) for c in alone] == [("PACKAGE_REQUESTED_NOT_INSTALLED", "error")]


def test_a_cause_the_log_names_joins_the_symptom_the_doctor_shows():
    # Recorded on an H100 (tests/fixtures/faults/gpu): CUDA_VISIBLE_DEVICES="" hides the GPU;
    # the log's reading names the variable (a hint alone), the pasted collect_env and
    # nvidia-smi show torch seeing no CUDA beside a present H100 (TORCH_CUDA_UNAVAILABLE).
    from shop_r1_doctor.ingest import snapshot_from_dump

    gpu = FIXTURES / "faults" / "gpu"
    log = (gpu / "gpus_hidden_to_cuda.log").read_text(encoding="utf-8")
    env = (gpu / "gpus_hidden_to_cuda.env.txt").read_text(encoding="utf-8")
    findings = diagnose(snapshot_from_dump(env, "env")).findings
    assert "TORCH_CUDA_UNAVAILABLE" in {f.code for f in findings}
    causes = rank_causes(log, doctor_findings=findings).causes
    lead = causes[0]
    assert (lead.code, lead.severity) == ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "error")
    assert {e.source for e in lead.evidence} == {"log", "doctor"}
    assert [e.code for e in lead.evidence if e.source == "doctor"] == ["TORCH_CUDA_UNAVAILABLE"]
    # one cause: the symptom is not listed again beside the cause that explains it
    assert "TORCH_CUDA_UNAVAILABLE" not in [c.code for c in causes]


def test_a_full_disk_in_the_log_joins_the_low_free_space_the_doctor_finds():
    # caused for real (tests/faults/disk_full.py): torch.save fills a small tmpfs; the log
    # says ENOSPC (or the zip writer's failure) without the path, the doctor's snapshot
    # taken on failure names the file system with no room left
    snap = copy.deepcopy(machine_snapshot("h100"))
    snap["host"]["disk_free_bytes"] = {"~/ckpt": 4096}
    findings = diagnose(snap).findings
    assert "DISK_LOW" in {f.code for f in findings}
    log = (
        "Traceback (most recent call last):\n"
        '  File "save.py", line 5, in <module>\n'
        "    torch.save(state, 'ckpt/model.pt')\n"
        "OSError: [Errno 28] No space left on device\n"
    )
    causes = rank_causes(log, doctor_findings=findings).causes
    lead = causes[0]
    assert (lead.code, lead.severity) == ("DISK_FULL_AT_CHECKPOINT", "error")
    assert [e.code for e in lead.evidence if e.source == "doctor"] == ["DISK_LOW"]
    assert "DISK_LOW" not in [c.code for c in causes]  # one cause, not two


def test_low_free_space_beside_a_users_bug_stays_a_warning_of_its_own():
    snap = copy.deepcopy(machine_snapshot("h100"))
    snap["host"]["disk_free_bytes"] = {"~/ckpt": 4096}
    findings = diagnose(snap).findings
    log = "Traceback (most recent call last):\nKeyError: 'label'\n"
    causes = rank_causes(log, doctor_findings=findings).causes
    assert [(c.code, c.severity) for c in causes if c.code == "DISK_LOW"] == [
        ("DISK_LOW", "warning")
    ]
    assert "DISK_FULL_AT_CHECKPOINT" not in [c.code for c in causes]
