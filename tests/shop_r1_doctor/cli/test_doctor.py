"""`shop-r1 doctor` through the real entry point (CliRunner), and one real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from golden import GOLDEN
from typer.testing import CliRunner

from shop_r1.cli import app

H100 = str(GOLDEN / "h100-replayed.snapshot.json")
BROKEN = str(GOLDEN / "broken.report.json")


def invoke(*args: str):
    return CliRunner().invoke(app, ["doctor", *args])


def test_recorded_h100_is_healthy_json():
    result = invoke("--snapshot", H100, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema"] == "shop-r1.report/1"
    assert report["profile"] == "hopper"
    assert report["summary"]["errors"] == 0
    assert report["snapshot"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"


def test_recorded_h200x2_is_healthy():
    result = invoke("--snapshot", str(GOLDEN / "h200x2-replayed.snapshot.json"))
    assert result.exit_code == 0, result.output
    assert "2x NVIDIA H200" in result.stdout


def test_broken_machine_exits_1_with_fixes():
    result = invoke("--snapshot", BROKEN)
    assert result.exit_code == 1
    assert "FA_TORCH_ABI_UNDEFINED_SYMBOL" in result.stdout
    assert "fix: " in result.stdout


def test_verbose_adds_facts_and_timings():
    result = invoke("--snapshot", H100, "-v")
    assert "probe gpu: ok" in result.stdout
    assert "env TORCH_CUDA_ARCH_LIST=9.0a" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON (line 1"),
        ('{"schema": "shop-r1.snapshot/9"}', "not supported"),
        ("[]", "not a shop-r1 snapshot"),
    ],
)
def test_malformed_snapshot_is_one_line_exit_2(tmp_path, content, message):
    bad = tmp_path / "env.json"
    bad.write_text(content)
    result = invoke("--snapshot", str(bad))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and message in lines[0]


def test_missing_snapshot_file(tmp_path):
    result = invoke("--snapshot", str(tmp_path / "nope.json"))
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_plan_adds_plan_dependent_findings(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "task: grpo\nmodel: Qwen/Qwen2.5-0.5B-Instruct\nuse_vllm: true\nvllm_mode: server\n"
        "num_processes: 1\nper_device_train_batch_size: 1\ngradient_accumulation_steps: 7\n"
        "num_generations: 8\nvllm_server_host: 0.0.0.0\n"
    )
    result = invoke("--snapshot", H100, "--plan", str(plan), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["snapshot"]["plan"]["num_generations"] == 8
    codes = {f["code"] for f in report["findings"]}
    assert {"TRL_GRPO_BATCH_NOT_DIVISIBLE", "TRL_SERVER_MODE_SAME_GPU"} <= codes


def test_plan_with_a_generation_batch_trl_refuses(tmp_path):
    """A TRL user's plan: both generation batch fields, as TRL's GRPOConfig refuses them."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "task: grpo\nnum_processes: 2\nper_device_train_batch_size: 4\nnum_generations: 4\n"
        "steps_per_generation: 2\ngeneration_batch_size: 16\n"
    )
    result = invoke("--snapshot", H100, "--plan", str(plan), "--json")
    assert result.exit_code == 1, result.output
    found = {f["code"]: f for f in json.loads(result.stdout)["findings"]}
    refused = found["TRL_GRPO_BATCH_REFUSED"]
    assert refused["severity"] == "error" and "steps_per_generation: 2 alone" in refused["fix"]


def test_bad_plan_field_is_one_line_exit_2(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("task: grpo\nnum_generation: 8\n")
    result = invoke("--snapshot", H100, "--plan", str(plan))
    assert result.exit_code == 2
    assert (
        f"{plan}:2: num_generation: unknown plan field; did you mean 'num_generations'?"
        in result.stderr
    )


def test_save_then_snapshot_round_trip(tmp_path):
    saved = tmp_path / "out" / "env.json"
    first = invoke("--snapshot", H100, "--save", str(saved), "--json")
    assert first.exit_code == 0
    second = invoke("--snapshot", str(saved), "--json")
    assert json.loads(second.stdout) == json.loads(first.stdout)


def test_fast_json_subprocess_through_console_script(tmp_path):
    exe = shutil.which("shop-r1") or ""
    argv = [exe] if exe else [sys.executable, "-m", "shop_r1.cli"]
    env = {**os.environ, "SHOP_R1_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [*argv, "doctor", "--fast", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    probes = report["snapshot"]["probes"]
    assert probes["torch"]["status"] in ("skipped", "ok")  # ok only when torch is absent
    assert all(rec["status"] != "crash" for rec in probes.values())
    # its speed (< 1 s) is measured by benchmarks/doctor_speed.py, not asserted here
