"""Golden decision tables for recorded snapshots of several machines.

Regenerate after an intended change: pytest tests/shop_r1/test_autoconfig.py --update-goldens
"""

import json

import pytest
from machines import machine_snapshot
from repo_paths import GOLDEN

from shop_r1.autoconfig import decide, render_text
from shop_r1.config import GRPORunConfig, SFTRunConfig
from shop_r1_doctor.memory import GIB, KNOWN_SHAPES

MACHINES = ["h100-fa-vllm", "h200x2-fa-vllm", "ada4090", "t4", "cpu"]


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("command", ["sft", "grpo"])
def test_decision_table_golden(machine, command, golden):
    shape = KNOWN_SHAPES["0.5b"] if machine in ("cpu", "t4") else KNOWN_SHAPES["1.5b"]
    cfg = SFTRunConfig() if command == "sft" else GRPORunConfig()
    text = render_text(decide(machine_snapshot(machine), cfg, shape, seq_len=3072))
    golden(GOLDEN / "autoconfig" / f"autoconfig_{machine}_{command}.txt", text)


def test_attention_choice_per_machine():
    shape = KNOWN_SHAPES["0.5b"]
    got = {
        m: decide(machine_snapshot(m), SFTRunConfig(), shape, seq_len=1024).attn_implementation
        for m in MACHINES
    }
    assert got == {
        "h100-fa-vllm": "flash_attention_3",
        "h200x2-fa-vllm": "flash_attention_2",
        "ada4090": "flash_attention_2",
        "t4": "sdpa",
        "cpu": "sdpa",
    }


def test_broken_flash_attn_falls_back_to_sdpa_with_the_error():
    snap = machine_snapshot("ada4090")
    snap["imports"]["flash_attn"] = {"ok": False, "error": "ImportError: undefined symbol: _ZN3c10"}
    plan = decide(snap, SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=1024)
    assert plan.attn_implementation == "sdpa" and plan.padding_free is False
    assert "undefined symbol" in plan.decisions[1].reason


def test_checkpointing_only_when_memory_needs_it():
    h100 = decide(
        machine_snapshot("h100-fa-vllm"), SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=2048
    )
    ada = decide(machine_snapshot("ada4090"), SFTRunConfig(), KNOWN_SHAPES["1.5b"], seq_len=4096)
    assert h100.gradient_checkpointing is False and ada.gradient_checkpointing is True
    assert h100.predicted_peak_bytes <= 0.9 * 85520809984
    # padding-free on the H100: one bin of rows per forward holds the step's tokens
    # (64 rows x the assumed mean, half the longest row)
    assert h100.micro_batch_size == 1 and h100.token_budget is not None
    assert h100.token_budget * h100.gradient_accumulation_steps >= 64 * 1024


def test_grpo_generation_batch_fixed_to_a_valid_multiple():
    cfg = GRPORunConfig(
        generation_batch_size=20, num_generations=4, global_batch_size=16, micro_batch_size=8
    )
    plan = decide(machine_snapshot("cpu"), cfg, KNOWN_SHAPES["0.5b"], seq_len=256)
    assert plan.generation_batch_size == 24  # multiple of 4 and of micro batch 8
    row = next(d for d in plan.decisions if d.setting == "generation_batch_size")
    assert "using 24" in row.reason


def test_grpo_colocated_vllm_budget_from_kv_cache():
    plan = decide(
        machine_snapshot("h100-fa-vllm"), GRPORunConfig(), KNOWN_SHAPES["0.5b"], seq_len=2048
    )
    assert plan.use_vllm and plan.vllm_mode == "colocate"
    assert 0.1 <= plan.vllm_gpu_memory_utilization <= 0.9
    two = decide(
        machine_snapshot("h200x2-fa-vllm"), GRPORunConfig(), KNOWN_SHAPES["0.5b"], seq_len=2048
    )
    assert two.vllm_mode == "server" and two.vllm_gpu_memory_utilization is None
    assert plan.memory_budget_bytes / GIB > 60


def _with_liger(snap, ok=True, error=None):
    snap["packages"]["liger-kernel"] = {"version": "0.8.5", "requires": []}
    snap["imports"]["liger_kernel"] = {"ok": True, "error": None, "version": "0.8.5"}
    snap["imports"]["liger_kernel.transformers"] = {"ok": ok, "error": error}
    return snap


def test_liger_kernels_for_sft_when_they_import_and_they_shrink_the_plan():
    shape = KNOWN_SHAPES["1.5b"]
    cfg = SFTRunConfig(global_batch_size=8, learning_rate=2e-5)
    without = decide(machine_snapshot("h200x2-fa-vllm"), cfg, shape, seq_len=2048)
    with_liger = decide(_with_liger(machine_snapshot("h200x2-fa-vllm")), cfg, shape, seq_len=2048)
    assert (without.liger_kernel, with_liger.liger_kernel) == (False, True)
    reason = {d.setting: d.reason for d in with_liger.decisions}["liger_kernel"]
    assert "liger-kernel 0.8.5 imports" in reason
    # fewer saved activations: the same micro batch is predicted to need less memory
    assert with_liger.micro_batch_size == without.micro_batch_size
    assert with_liger.predicted_peak_bytes < without.predicted_peak_bytes - 5 * GIB


def test_liger_on_for_grpo_off_on_cpu_broken_import_and_when_set():
    shape = KNOWN_SHAPES["1.5b"]
    grpo = decide(
        _with_liger(machine_snapshot("h100-fa-vllm")), GRPORunConfig(), shape, seq_len=1450
    )
    without = decide(machine_snapshot("h100-fa-vllm"), GRPORunConfig(), shape, seq_len=1450)
    assert (grpo.liger_kernel, without.liger_kernel) == (True, False)
    # the measured H100 run: Liger's smaller activations let micro batch 8 fit at 1.5B
    assert (grpo.micro_batch_size, without.micro_batch_size) == (8, 4)
    shape = KNOWN_SHAPES["0.5b"]
    cpu = decide(_with_liger(machine_snapshot("cpu")), SFTRunConfig(), shape, seq_len=512)
    assert cpu.liger_kernel is False
    broken = _with_liger(
        machine_snapshot("h100-fa-vllm"),
        ok=False,
        error="ModuleNotFoundError: No module named 'triton'",
    )
    plan = decide(broken, SFTRunConfig(), shape, seq_len=512)
    reason = {d.setting: d.reason for d in plan.decisions}["liger_kernel"]
    assert plan.liger_kernel is False and "No module named 'triton'" in reason
    forced = decide(
        machine_snapshot("h100-fa-vllm"), SFTRunConfig(liger_kernel="on"), shape, seq_len=512
    )
    assert forced.liger_kernel is True


def test_reasons_with_brackets_are_printed_verbatim():
    snap = machine_snapshot("ada4090")
    snap["imports"]["flash_attn"] = {"ok": False, "error": "OSError: [Errno 2] libcudart.so.12"}
    text = render_text(decide(snap, SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=1024))
    assert "[Errno 2]" in text and "'shop-r1[liger]'" in text


def test_packing_without_flash_attn_uses_torchs_varlen_kernel():
    """No flash-attn on a Hopper with torch 2.11: padding-free through `sdpa_varlen`, the
    reason printed; torch older than 2.9 or a pre-Ampere GPU: padded sdpa."""
    snap = machine_snapshot("h100-fa-vllm")
    for name in ("flash_attn", "flash_attn_interface"):
        snap["imports"][name] = {"ok": False, "error": "ModuleNotFoundError: No module named x"}
    plan = decide(snap, SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=3072)
    assert plan.attn_implementation == "sdpa_varlen" and plan.padding_free is True
    reasons = {d.setting: d.reason for d in plan.decisions}
    assert "varlen flash kernel" in reasons["attn_implementation"]
    assert "flash_attn import fails" in reasons["attn_implementation"]
    assert [d.setting for d in plan.decisions].count("attn_implementation") == 1

    old = json.loads(json.dumps(snap))
    old["torch"]["version"] = "2.8.0+cu128"
    plan = decide(old, SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=3072)
    assert plan.attn_implementation == "sdpa" and plan.padding_free is False

    plan = decide(machine_snapshot("t4"), SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=3072)
    assert plan.attn_implementation == "sdpa" and plan.padding_free is False

    # a snapshot that never probed torch (--fast): padded, and the reason says why (the
    # H100 learning run printed "torch ? has no varlen kernel")
    unprobed = json.loads(json.dumps(snap))
    unprobed["torch"] = {}
    plan = decide(unprobed, SFTRunConfig(), KNOWN_SHAPES["0.5b"], seq_len=3072)
    reasons = {d.setting: d.reason for d in plan.decisions}
    assert plan.padding_free is False
    assert reasons["padding_free"].startswith("torch's version is unknown")

    # sdpa asked for by name: padded (packing would get the dense block-diagonal mask)
    plan = decide(
        snap, SFTRunConfig(attn_implementation="sdpa"), KNOWN_SHAPES["0.5b"], seq_len=3072
    )
    assert plan.attn_implementation == "sdpa" and plan.padding_free is False
    # GRPO keeps padded batches
    assert decide(snap, GRPORunConfig(), KNOWN_SHAPES["0.5b"], seq_len=512).padding_free is False
