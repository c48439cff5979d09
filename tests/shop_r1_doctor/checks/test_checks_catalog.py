"""Every code fires on its bad snapshot and stays quiet on the healthy H100 snapshot."""

from __future__ import annotations

import json

import pytest
from doctor_checks_cases import (
    CASES,
    CPU_DOCKER,
    GPU_EXPECTED_CASES,
    healthy,
    merge,
)
from repo_paths import FIXTURES

from shop_r1_doctor.checks import REGISTRY, run_checks
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.knowledge import load_codes

HEALTHY_CODES = {f.code for f in run_checks(Facts(healthy()))}


@pytest.mark.parametrize(
    ("code", "patch"), CASES, ids=[f"{code}-{i}" for i, (code, _) in enumerate(CASES)]
)
def test_code_fires_on_bad_snapshot_only(code: str, patch: dict) -> None:
    findings = run_checks(Facts(merge(healthy(), patch)))
    codes = [f.code for f in findings]
    assert code in codes, [f"{f.code}: {f.title}" for f in findings]
    assert code not in HEALTHY_CODES
    assert "CHECK_FAILED" not in codes, [f.title for f in findings if f.code == "CHECK_FAILED"]


def test_healthy_h100_has_no_errors_and_no_noise() -> None:
    findings = run_checks(Facts(healthy()))
    assert [f"{f.severity} {f.code}: {f.title}" for f in findings] == []


def test_every_snapshot_only_code_has_a_case() -> None:
    codes = load_codes()
    # PROFILE_DEVIATION comes from profiles.match (tests/shop_r1_doctor/profiles/test_match.py)
    visible = {c for c, info in codes.items() if not info.log_only} - {
        "CHECK_FAILED",
        "PROFILE_DEVIATION",
    }
    assert visible - {code for code, _ in CASES} == set()


def test_findings_name_versions_and_carry_sources() -> None:
    bad = merge(healthy(), dict(CASES)["TORCH_NO_BLACKWELL_ARCH"])
    f = next(f for f in run_checks(bad) if f.code == "TORCH_NO_BLACKWELL_ARCH")
    assert f.title == "torch 2.6.0+cu124 has no kernels for sm_120 (NVIDIA GeForce RTX 5090)"
    assert "https://github.com/pytorch/pytorch/issues/150733" in f.urls
    assert f.fix.startswith("/opt/torch/.venv/bin/python3 -m pip install") and f.subject == "torch"


def test_all_missing_snapshot_gives_no_findings() -> None:
    assert run_checks(Facts({"schema": "shop-r1.snapshot/1"})) == []


@pytest.mark.parametrize(
    "odd",
    [
        {"gpus": [{"compute_capability": 9}], "torch": {"arch_list": [None, 7]}},
        {"packages": {"torch": {"version": None, "requires": "x"}, "vllm": {"version": "junk"}}},
        {"plan": {"num_generations": "eight", "dataset_rows": True, "model_params": -5}},
        {"plan": {"task": "grpo", "per_device_train_batch_size": 0, "num_generations": 0}},
        {"host": {"python": "x", "disk_free_bytes": [1]}, "env": {"CUDA_VISIBLE_DEVICES": 3}},
        {"probes": {"torch": "crash"}, "ray": "x", "imports": {"vllm": None}},
    ],
)
def test_odd_values_never_crash_a_check(odd: dict) -> None:
    findings = run_checks(Facts(merge(healthy(), odd)))
    assert [f.title for f in findings if f.code == "CHECK_FAILED"] == []


def test_a_raising_check_becomes_check_failed() -> None:
    def broken(facts: Facts):
        raise KeyError("boom")

    findings = run_checks(Facts(healthy()), checks=(*REGISTRY, broken))
    assert [f.code for f in findings] == ["CHECK_FAILED"]
    assert findings[0].severity == "warning" and "broken" in findings[0].title


def test_errors_come_first_and_order_is_deterministic() -> None:
    snap = merge(healthy(), {**dict(CASES)["DISK_LOW"], **dict(CASES)["BF16_PRE_AMPERE"]})
    first, second = run_checks(snap), run_checks(snap)
    assert first == second
    ranks = [("error", "warning", "info").index(f.severity) for f in first]
    assert ranks == sorted(ranks) and ranks[0] == 0


def test_incident_contract_example_plan() -> None:
    """The snapshot contract's example plan: every problem of the seed logs shows up."""
    snap = merge(
        healthy(),
        {
            "packages": {"vllm": {"version": "0.22.0", "requires": ["torch==2.11.0"]}},
            "env": {"PYTORCH_ALLOC_CONF": "expandable_segments:True"},
            "plan": json.loads((FIXTURES / "plans" / "plan_incident.json").read_text()),
        },
    )
    codes = {f.code for f in run_checks(snap) if f.severity == "error"}
    assert {
        "FA_REQUESTED_NOT_INSTALLED",
        "TRL_GRPO_BATCH_NOT_DIVISIBLE",
        "TRL_SERVER_MODE_SAME_GPU",
        "TRL_VLLM_SERVER_UNREACHABLE",
    } <= codes


@pytest.mark.parametrize(
    ("patch", "severity"),
    [(patch, sev) for _, patch, sev in GPU_EXPECTED_CASES],
    ids=[name for name, _, _ in GPU_EXPECTED_CASES],
)
def test_docker_gpu_runtime_warns_only_when_a_gpu_is_expected(
    patch: dict, severity: str | None
) -> None:
    findings = run_checks(Facts(merge(CPU_DOCKER, patch)))
    hits = [f for f in findings if f.code == "DOCKER_GPU_RUNTIME_MISSING"]
    assert [f.severity for f in hits] == ([severity] if severity else []), hits
    if severity == "warning":
        assert ", but " in hits[0].title  # names the evidence
    if severity == "info":  # a CPU-only container gets a clean report
        assert [f"{f.code}: {f.title}" for f in findings if f.severity != "info"] == []
