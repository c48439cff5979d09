"""The issue body: sections present, and no planted secret survives into it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from repo_paths import FIXTURES

from shop_r1_doctor.bugreport import ReportInput, RunOutcome, build_report
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.redact import REDACTED, redact_env
from tests.secret_corpus import CASES, ENV_CASES, SECRETS, SURVIVORS

DATA = FIXTURES / "report"
SNAPSHOT = {
    "schema": "shop-r1.snapshot/1",
    "host": {
        "os": "linux",
        "os_release": "Ubuntu 24.04.3 LTS",
        "kernel": "6.8.0",
        "arch": "x86_64",
        "wsl": None,
        "container": "docker",
        "python": {"version": "3.12.3", "executable": "/opt/venv/bin/python3"},
    },
    "driver": {"version": "580.159.04", "cuda_version": "13.0", "source": "nvml"},
    "gpus": [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "compute_capability": "9.0",
            "memory_total_bytes": 85520809984,
        }
    ],
    "packages": {
        "torch": {"version": "2.11.0+cu130", "requires": []},
        "trl": {"version": "1.16.0", "requires": []},
        "vllm": None,
        "flash-attn": None,
    },
    "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "cuda_available": True},
    "env": {"CUDA_VISIBLE_DEVICES": "0"},
}
FINDING = Finding(
    code="FA_REQUESTED_NOT_INSTALLED",
    severity="error",
    title="flash_attention_2 requested but flash-attn is not installed",
    fix='attn_implementation="sdpa"',
)


def report_for(text: str, *, env: dict[str, str] | None = None) -> str:
    one_line = " ".join(text.split())
    log = (
        "step 1\n"
        + text
        + "\nTraceback (most recent call last):\n"
        + '  File "train.py", line 3, in <module>\n'
        + f"    login({one_line!r})\n"
        + f"ValueError: bad credentials: {one_line}\n"
    )
    snapshot = dict(SNAPSHOT, env=env or SNAPSHOT["env"])
    data = ReportInput(
        snapshot=snapshot,
        findings=[FINDING],
        log_text=log,
        outcome=RunOutcome(
            command="python train.py " + one_line, exit_code=1, verdict="exited with code 1"
        ),
    )
    return build_report(data, home="/home/tester")


@pytest.mark.parametrize(
    ("secret", "text"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)]
)
def test_no_planted_secret_reaches_the_report(secret, text):
    # The same secret sits in the command line, the log tail and the traceback.
    report = report_for(text)
    assert SECRETS[secret] not in report
    assert REDACTED in report


def test_env_secrets_do_not_reach_the_report_even_unredacted():
    raw = {name: value for _, name, value in ENV_CASES}
    for env in (redact_env(raw), raw):  # the probe's output, and a raw env as defence in depth
        report = report_for("ok", env=env)
        leaked = [s for s, name, value in ENV_CASES if SECRETS[s] in report]
        assert leaked == []


def test_ordinary_facts_survive_into_the_report():
    log = "\n".join(SURVIVORS)
    data = ReportInput(
        snapshot=SNAPSHOT,
        log_text=log,
        outcome=RunOutcome(
            command="python train.py --model Qwen/Qwen2.5-0.5B-Instruct", exit_code=2
        ),
    )
    report = build_report(data, home="/home/tester")
    assert [s for s in SURVIVORS if s not in report] == []
    assert "python train.py --model Qwen/Qwen2.5-0.5B-Instruct" in report


def test_report_sections_for_a_real_tiny_dataset_run():
    log = (DATA / "grpo_tiny_dataset_cpu.log").read_text(encoding="utf-8")
    data = ReportInput(
        snapshot=SNAPSHOT,
        findings=[FINDING],
        profile="hopper",
        log_text=log,
        outcome=RunOutcome(
            command="python tiny_grpo.py 1 out",
            exit_code=0,
            seconds=6.2,
            verdict="exited 0 but its log says the dataset is smaller than one effective batch",
        ),
    )
    report = build_report(data, home="/srv/shop-r1")
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Summary",
        "## What to try next",
        "## Diagnosis: causes",
        "## From the log: known failure modes",
        "## This machine: doctor findings",
        "## This machine: environment",
        "## Failing command",
        "## Last 8 lines of the log",
    ]
    assert "**TRAINER_ZERO_STEPS_TINY_DATASET**" in report
    assert "1 error and 0 warnings on this machine (closest hardware profile: hopper)" in report
    assert "| GPUs | 0: NVIDIA H100 80GB HBM3 (cc 9.0, 80 GiB) |" in report
    assert "| Driver | 580.159.04 (CUDA 13.0) |" in report
    assert "| flash-attn | not installed |" in report
    assert "1. `TRAINER_ZERO_STEPS_TINY_DATASET`: add rows" in report
    assert "2. `FA_REQUESTED_NOT_INSTALLED`: attn_implementation=" in report
    assert report.rstrip().endswith("</details>")
    # Progress bars rewritten with \r show as the terminal shows them: their last state.
    assert "Writing model shards: 100%" in report
    assert "~/.venv/lib/python3.11" in report  # home -> ~


BLACKWELL_LOG = (
    "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
    "PyTorch installation.\n"
    "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
)


def test_a_log_from_elsewhere_is_diagnosed_from_the_log_alone():
    # `report --log` without --cmd: the H100 machine writing the report is not the RTX 5090
    # that produced the log, so its flash-attn error must not explain the failure.
    data = ReportInput(
        snapshot=SNAPSHOT,
        findings=[FINDING],
        profile="hopper",
        log_text=BLACKWELL_LOG,
        outcome=RunOutcome(log_path="pasted.log"),
        log_from_this_machine=False,
    )
    report = build_report(data, home="/home/tester")
    summary = report.split("## What to try next")[0]
    steps = report.split("## What to try next")[1].split("## ")[0]
    assert "not produced by a run on this machine" in summary
    assert "Most likely cause: this torch build has no kernels for the Blackwell GPU" in summary
    assert "(the log shows blackwell: RTX 5090)" in summary
    assert "FA_REQUESTED_NOT_INSTALLED" not in summary + steps
    assert "on this machine (closest hardware profile" not in summary
    machine = report.split("## This machine: doctor findings")[1]
    assert machine.lstrip().startswith(
        "The checks below describe the machine that wrote this report"
    )
    assert "**FA_REQUESTED_NOT_INSTALLED** (error)" in machine


def test_a_log_from_elsewhere_without_a_match_names_no_machine_cause():
    data = ReportInput(
        snapshot=SNAPSHOT,
        findings=[FINDING],
        log_text="Traceback (most recent call last):\nKeyError: 'prompt'\n",
        outcome=RunOutcome(log_path="pasted.log"),
        log_from_this_machine=False,
    )
    report = build_report(data, home="/home/tester")
    summary = report.split("## What to try next")[0]
    assert "No known failure signature was found in the log." in summary
    assert "Most likely cause" not in summary
    assert "on the machine that produced the log" in report


def test_this_machines_run_keeps_its_findings_in_the_diagnosis():
    data = ReportInput(
        snapshot=SNAPSHOT,
        findings=[FINDING],
        log_text="Traceback (most recent call last):\nKeyError: 'prompt'\n",
        outcome=RunOutcome(command="python train.py", exit_code=1),
    )
    report = build_report(data, home="/home/tester")
    summary = report.split("## What to try next")[0]
    assert (
        "Most likely cause: flash_attention_2 requested but flash-attn is not installed." in summary
    )
    assert "1 error and 0 warnings on this machine" in summary


def test_the_command_counts_as_evidence_for_the_ranking():
    dup = "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n"
    for command, code in (
        ("python train_ddp.py", "RANKS_SHARE_GPU"),
        ("trl vllm-serve --model m", "TRL_SERVER_MODE_SAME_GPU"),
    ):
        data = ReportInput(snapshot=SNAPSHOT, log_text=dup, outcome=RunOutcome(command=command))
        assert f"The log matches 1 known failure mode: **{code}**" in build_report(data, home="/h")


def test_a_log_with_backticks_cannot_break_the_code_fence():
    data = ReportInput(
        snapshot=SNAPSHOT, log_text="```\n# not a heading\n````", outcome=RunOutcome(command="x")
    )
    report = build_report(data, home="/nonexistent")
    assert "`````\n```\n# not a heading\n````\n`````" in report


def test_report_cli_with_a_saved_snapshot(tmp_path):
    snap = dict(SNAPSHOT, env={"HF_TOKEN": SECRETS["hf"], "CUDA_VISIBLE_DEVICES": "0"})
    snap_path = tmp_path / "env.json"
    snap_path.write_text(json.dumps(snap), encoding="utf-8")
    log = tmp_path / "run.log"
    log.write_text(
        "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n"
    )
    out = tmp_path / "issue.md"
    cmd = "trl vllm-serve --model Qwen/Qwen2.5-0.5B --api-key " + SECRETS["openai"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "report",
            "--snapshot",
            str(snap_path),
            "--log",
            str(log),
            "--cmd",
            cmd,
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"Bug report written to {out}" in proc.stdout
    report = out.read_text(encoding="utf-8")
    assert "TRL_SERVER_MODE_SAME_GPU" in report
    assert SECRETS["hf"] not in report and SECRETS["openai"] not in report


def test_report_cli_missing_log_is_one_line_exit_2(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "report",
            "--fast",
            "--log",
            str(tmp_path / "nope.log"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"shop-r1: error: {tmp_path / 'nope.log'}: no such log file; pass the file your run wrote"
    )


def test_report_cli_log_without_cmd_is_read_as_from_elsewhere(tmp_path):
    snap_path = tmp_path / "env.json"
    snap_path.write_text(json.dumps(SNAPSHOT), encoding="utf-8")
    log = tmp_path / "pasted.log"
    log.write_text(BLACKWELL_LOG, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1_doctor.cli.main",
            "report",
            "--snapshot",
            str(snap_path),
            "--log",
            str(log),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "not produced by a run on this machine" in proc.stdout
    assert "Most likely cause: this torch build has no kernels for the Blackwell GPU" in proc.stdout
    assert "Of the machine writing this report." in proc.stdout
