"""Token-budget micro batches (padding-free SFT's default): one best-fit-decreasing bin of
rows per forward, sized by the memory model, accumulation holding a step's tokens.

Decision rows with the values computed here from the memory model; the H100 row is the
setting the SFT speed figures were measured in (0.5B shape, real rows: mean ~1.9k tokens,
global batch 16, fp32 master weights, Liger)."""

from __future__ import annotations

import math

import pytest
from autoconfig_facts import GIB, OK, SHAPE, notes, snap

from shop_r1.autoconfig import BIN_ROUND, decide
from shop_r1.config import SFTRunConfig, make_run_config
from shop_r1_doctor.memory import estimate_training_memory

# H100, torch 2.11 (its own varlen kernel), Liger imports, no flash-attn
H100_LIGER = snap(imports={"liger_kernel.transformers": OK})
LONGEST = 4096  # the plan's seq_len: max_length cuts the longest row


def peak(tokens: int, *, liger: bool = True, master_fp32: bool = True) -> int:
    return estimate_training_memory(
        SHAPE,
        seq_len=tokens,
        micro_batch=1,
        dtype="bf16",
        master_fp32=master_fp32,
        # the plan casts the stream between layers to bf16 (hidden_dtype) on a bf16 GPU
        fp32_hidden=False,
        chunked_loss=True,
        fused_kernels=liger,
    ).total


def largest_bin(budget: int, **kw) -> int:
    fits = [t for t in range(BIN_ROUND, 262144 + 1, BIN_ROUND) if peak(t, **kw) <= budget]
    return max(fits)


def plan_for(cfg: SFTRunConfig, facts=H100_LIGER, mean=1900.0, seq_len=6169):
    return decide(facts, cfg, SHAPE, seq_len=seq_len, mean_tokens=mean)


def test_the_measured_setting_one_bin_of_the_steps_tokens():
    """16 rows x 1,900 tokens = 30,400 tokens: one forward of one bin (rounded up to 256)."""
    plan = plan_for(SFTRunConfig(global_batch_size=16, learning_rate=2e-5))
    assert (plan.attn_implementation, plan.padding_free, plan.liger_kernel) == (
        "sdpa_varlen",
        True,
        True,
    )
    assert plan.token_budget == 30464 and plan.gradient_accumulation_steps == 1
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (1, False)
    assert plan.predicted_peak_bytes == peak(30464)
    assert plan.predicted_peak_bytes <= plan.memory_budget_bytes


def test_a_step_larger_than_memory_splits_evenly_over_the_fewest_bins():
    plan = plan_for(SFTRunConfig(global_batch_size=64, learning_rate=2e-5))
    largest = largest_bin(plan.memory_budget_bytes)
    step = 64 * 1900
    ga = math.ceil(step / largest)
    assert ga > 1 and plan.gradient_accumulation_steps == ga
    assert plan.token_budget == math.ceil(math.ceil(step / ga) / BIN_ROUND) * BIN_ROUND
    assert plan.token_budget <= largest and plan.token_budget * ga >= step
    row = notes(plan)["token_budget"]
    assert row[0] == plan.token_budget and f"largest bin that fits is {largest:,}" in row[1]


def test_processes_share_the_steps_rows():
    one = plan_for(SFTRunConfig(global_batch_size=64, learning_rate=2e-5))
    two = plan_for(SFTRunConfig(global_batch_size=64, learning_rate=2e-5, num_processes=2))
    assert two.token_budget * two.gradient_accumulation_steps >= 32 * 1900
    assert two.token_budget * two.gradient_accumulation_steps < one.token_budget * (
        one.gradient_accumulation_steps
    )


def test_a_bin_holds_any_row_up_to_max_length():
    """A few short rows per step: the bin still holds a max_length row (BFD would cut it)."""
    plan = plan_for(SFTRunConfig(global_batch_size=2, max_length=8192), mean=300.0, seq_len=700)
    assert plan.token_budget == 8192 and plan.gradient_accumulation_steps == 1


def test_without_a_known_mean_half_the_longest_row_is_assumed_and_said():
    plan = plan_for(SFTRunConfig(global_batch_size=16), mean=None, seq_len=4096)
    assert plan.token_budget == 16 * 2048
    assert "(assumed)" in notes(plan)["token_budget"][1]


def test_a_fixed_accumulation_is_kept():
    plan = plan_for(SFTRunConfig(global_batch_size=64, gradient_accumulation_steps=8))
    assert plan.gradient_accumulation_steps == 8
    assert plan.token_budget == math.ceil(64 * 1900 / 8 / BIN_ROUND) * BIN_ROUND


def test_a_token_budget_set_in_the_config():
    plan = plan_for(SFTRunConfig(global_batch_size=64, token_budget=16384))
    assert plan.token_budget == 16384
    assert plan.gradient_accumulation_steps == round(64 * 1900 / 16384)
    assert plan.predicted_peak_bytes == peak(16384)  # fp32 masters at the default lr


@pytest.mark.parametrize(
    ("case", "cfg", "facts", "reason"),
    [
        (
            "off in the config",
            SFTRunConfig(token_budget="off"),
            H100_LIGER,
            "set in the config: micro batches of whole rows",
        ),
        (
            "a micro batch of rows set in the config",
            SFTRunConfig(micro_batch_size=4, global_batch_size=16),
            H100_LIGER,
            "micro_batch_size is set in the config: whole rows",
        ),
        (
            "padded batches (torch without the varlen kernel)",
            SFTRunConfig(),
            snap(version="2.8.0+cu128"),
            "batches are padded (no padding-free kernel)",
        ),
        (
            "packed sdpa: a block-diagonal mask costs the bin's square",
            SFTRunConfig(packing="on", attn_implementation="sdpa"),
            H100_LIGER,
            "sdpa does not read packed boundaries",
        ),
        (
            "not even the longest row fits without checkpointing",
            SFTRunConfig(max_length=262144),
            snap(total=24 * GIB),
            "a bin of the longest row (200000 tokens) does not fit without checkpointing: "
            "micro batches of whole rows",
        ),
    ],
)
def test_whole_rows_when_bins_do_not_apply(case, cfg, facts, reason):
    plan = plan_for(cfg, facts=facts, seq_len=200000 if cfg.max_length == 262144 else 6169)
    assert plan.token_budget is None
    assert notes(plan)["token_budget"] == ("off", reason)
    settings = [d.setting for d in plan.decisions]
    assert settings.index("token_budget") == settings.index("micro_batch_size") - 1


@pytest.mark.parametrize(
    ("case", "facts", "workers", "reason"),
    [
        (
            "GPU, 8 GiB /dev/shm",
            {**H100_LIGER, "host": {"shm_bytes": 8 * GIB}},
            2,
            "batches prepared while the GPU computes (/dev/shm 8 GiB)",
        ),
        (
            "GPU, exactly 1 GiB /dev/shm",
            {**H100_LIGER, "host": {"shm_bytes": GIB}},
            2,
            "batches prepared while the GPU computes (/dev/shm 1 GiB)",
        ),
        (
            "GPU, Docker's 64 MiB /dev/shm",
            {**H100_LIGER, "host": {"shm_bytes": 64 * 2**20}},
            0,
            "/dev/shm is 64 MiB: workers would die with 'Bus error' (docker --shm-size=8g)",
        ),
        (
            "GPU, /dev/shm not probed",
            H100_LIGER,
            0,
            "/dev/shm's size is unknown (workers need it)",
        ),
        (
            "CPU",
            snap(cuda=False, ram=32 * GIB),
            0,
            "no CUDA GPU: the main process is not waiting on one",
        ),
    ],
)
def test_loader_workers_rows(case, facts, workers, reason):
    plan = plan_for(SFTRunConfig(), facts=facts)
    assert plan.dataloader_num_workers == workers
    assert notes(plan)["dataloader_num_workers"] == (workers, reason)


def test_nan_loss_filter_is_off_on_a_gpu_and_reaches_trl():
    """transformers' filter reads every micro step's loss on the host; on a GPU the
    guard drops NaN updates on the device instead."""
    from shop_r1 import trl_config

    gpu = plan_for(SFTRunConfig(), facts=H100_LIGER)
    cpu = plan_for(SFTRunConfig(), facts=snap(cuda=False, ram=32 * GIB))
    assert (gpu.logging_nan_inf_filter, cpu.logging_nan_inf_filter) == (False, True)
    assert trl_config.build(SFTRunConfig(), gpu).logging_nan_inf_filter is False
    user = trl_config.build(make_run_config("sft", {"logging_nan_inf_filter": True}), gpu)
    assert user.logging_nan_inf_filter is True  # a user's setting wins
