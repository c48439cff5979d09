"""Decision rows for shop_r1/autoconfig.py: the memory budget, micro batch and
checkpointing, packing, and `decide` for SFT end to end (the rules and the yardstick: the
docstring of tests/shop_r1/test_autoconfig_rows.py)."""

from __future__ import annotations

import pytest
from autoconfig_facts import A100, GIB, H100, OK, SEQ, SHAPE, est, notes, snap

from shop_r1.autoconfig import (
    AutoPlan,
    Decision,
    _choose_batch,
    _choose_packing,
    _divisors_desc,
    _memory_budget,
    decide,
)
from shop_r1.config import SFTRunConfig
from shop_r1_doctor.facts import Facts

# ------------------------------------------------------------------ memory budget
# (case, snapshot, cuda, headroom, expected budget)
BUDGET_ROWS = [
    ("one GPU, 10 GiB used", snap(used=10 * GIB), True, 0.9, int(0.9 * 70 * GIB)),
    ("headroom 0.5", snap(used=10 * GIB), True, 0.5, 35 * GIB),
    ("used unknown: all free", snap(used=None), True, 1.0, 80 * GIB),
    ("used over total: nothing free", snap(used=81 * GIB), True, 1.0, 0),
    ("size unknown: nothing free", snap(total=None, used=None), True, 1.0, 0),
    ("CPU: half the RAM", snap(ram=64 * GIB), False, 0.9, 32 * GIB),
    ("CPU, RAM unknown: half of 16 GiB", snap(), False, 0.9, 8 * GIB),
]


@pytest.mark.parametrize(
    ("case", "facts", "cuda", "headroom", "want"), BUDGET_ROWS, ids=[r[0] for r in BUDGET_ROWS]
)
def test_memory_budget_rows(case, facts, cuda, headroom, want):
    cfg = SFTRunConfig(gpu_memory_headroom=headroom)
    assert _memory_budget(Facts(facts), cfg, cuda) == want


def test_memory_budget_is_the_least_free_gpu():
    facts = snap(("9.0", "9.0"))
    facts["gpus"][0]["memory_used_bytes"] = 50 * GIB
    facts["gpus"][1]["memory_total_bytes"] = 40 * GIB
    cfg = SFTRunConfig(gpu_memory_headroom=1.0)
    assert _memory_budget(Facts(facts), cfg, True) == 30 * GIB


def test_memory_budget_cuda_without_gpus_falls_back_to_ram():
    facts = {"torch": {"cuda_available": True}, "host": {"ram_bytes": 10 * GIB}}
    assert _memory_budget(Facts(facts), SFTRunConfig(), True) == 5 * GIB


@pytest.mark.parametrize(
    ("n", "cap", "want"),
    [
        (12, 64, [12, 6, 4, 3, 2, 1]),
        (12, 5, [4, 3, 2, 1]),
        (12, 12, [12, 6, 4, 3, 2, 1]),
        (128, 64, [64, 32, 16, 8, 4, 2, 1]),
        (1, 64, [1]),
    ],
)
def test_divisors_desc(n, cap, want):
    assert _divisors_desc(n, cap) == want


# ------------------------------------------------------------------ micro batch and checkpointing
def batch(
    budget: int, *, reserved: int = 0, loss_tokens=None, explicit_mask=False, plan_kw=None, **cfg
):
    plan = AutoPlan(
        dtype="bf16",
        master_weights="bf16",
        attn_implementation="sdpa",
        chunked_loss=True,
        memory_budget_bytes=budget,
        **(plan_kw or {}),
    )
    cfg = {"global_batch_size": 16, **cfg}
    _choose_batch(
        SFTRunConfig(**cfg),
        SHAPE,
        plan,
        seq_len=SEQ,
        loss_tokens_per_row=loss_tokens,
        reserved=reserved,
        explicit_mask=explicit_mask,
    )
    return plan


def g(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def test_batch_largest_micro_batch_that_fits_exactly():
    budget = est(4, False)
    assert est(8, False) > budget
    plan = batch(budget)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (4, False)
    assert (plan.gradient_accumulation_steps, plan.predicted_peak_bytes) == (4, budget)
    assert plan.decisions == [
        Decision(
            "micro_batch_size",
            4,
            f"largest divisor of 16 rows/GPU that fits; seq {SEQ}: predicted peak {g(budget)} "
            f"of {g(budget)} budget",
        ),
        Decision("gradient_accumulation_steps", 4, "global batch 16 = 4 x 4 x 1 GPU(s)"),
        Decision("gradient_checkpointing", False, "not needed: activations fit (saves ~20% time)"),
    ]


def test_batch_one_byte_short_takes_the_next_divisor():
    budget = est(4, False) - 1
    plan = batch(budget)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (2, False)
    assert (plan.gradient_accumulation_steps, plan.predicted_peak_bytes) == (8, est(2, False))


def test_batch_checkpointing_only_when_no_micro_batch_fits_without():
    budget = est(1, False) - 1
    want = max(mb for mb in (16, 8, 4, 2, 1) if est(mb, True) <= budget)
    assert want > 1
    plan = batch(budget)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (want, True)
    assert plan.predicted_peak_bytes == est(want, True)
    assert notes(plan)["gradient_checkpointing"] == (
        True,
        "no micro batch fits without it (costs ~20% speed)",
    )


def test_batch_nothing_fits_plans_the_smallest_footprint():
    plan = batch(GIB)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (1, True)
    peak = est(1, True)
    assert plan.predicted_peak_bytes == peak
    assert plan.gradient_accumulation_steps == 16
    assert notes(plan)["micro_batch_size"] == (
        1,
        f"largest divisor of 16 rows/GPU that fits; seq {SEQ}: does NOT fit: {g(peak)} > 1.0 GiB",
    )


@pytest.mark.parametrize(("setting", "ckpt"), [("on", True), ("off", False)])
def test_batch_checkpointing_set_in_the_config(setting, ckpt):
    budget = est(2, ckpt)
    plan = batch(budget, gradient_checkpointing=setting)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (2, ckpt)
    assert notes(plan)["gradient_checkpointing"] == (ckpt, "set in the config")
    # nothing fits: the smallest micro batch, the setting kept
    plan = batch(GIB, gradient_checkpointing=setting)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (1, ckpt)


def test_batch_micro_batch_set_in_the_config():
    plan = batch(100 * GIB, micro_batch_size=8)
    assert (plan.micro_batch_size, plan.gradient_accumulation_steps) == (8, 2)
    assert notes(plan)["micro_batch_size"] == (
        8,
        f"set in the config; seq {SEQ}: predicted peak {g(est(8, False))} of 100.0 GiB budget",
    )
    # it does not fit without checkpointing: checkpointing, still 8
    plan = batch(est(8, True), micro_batch_size=8)
    assert (plan.micro_batch_size, plan.gradient_checkpointing) == (8, True)


def test_batch_fixed_accumulation_divides_the_rows_first():
    plan = batch(100 * GIB, gradient_accumulation_steps=2)
    assert (plan.micro_batch_size, plan.gradient_accumulation_steps) == (8, 2)
    assert notes(plan)["micro_batch_size"][1].startswith(
        "largest divisor of 8 rows/GPU per accumulation step that fits; "
    )
    plan = batch(100 * GIB, global_batch_size=4, gradient_accumulation_steps=4)
    assert (plan.micro_batch_size, plan.gradient_accumulation_steps) == (1, 4)
    assert notes(plan)["micro_batch_size"][1].startswith(
        "largest divisor of 1 rows/GPU per accumulation step that fits; "
    )


def test_batch_accumulation_of_one_is_not_per_step():
    plan = batch(100 * GIB, gradient_accumulation_steps=1)
    assert (plan.micro_batch_size, plan.gradient_accumulation_steps) == (16, 1)
    assert notes(plan)["micro_batch_size"][1].startswith(
        "largest divisor of 16 rows/GPU that fits; "
    )


# (processes, global batch, expected micro batch, accumulation) with room for everything
PROCESS_ROWS = [
    (1, 16, 16, 1),
    (2, 16, 8, 1),
    (3, 48, 16, 1),
    (4, 16, 4, 1),
    (2, 256, 64, 2),
    (1, 64, 64, 1),
    (1, 128, 64, 2),
    (1, 130, 26, 5),  # 65 divides 130 but is over the cap of 64
]


@pytest.mark.parametrize(("procs", "gbs", "mb", "ga"), PROCESS_ROWS)
def test_batch_rows_per_process_capped_at_64(procs, gbs, mb, ga):
    plan = batch(500 * GIB, global_batch_size=gbs, num_processes=procs)
    assert (plan.micro_batch_size, plan.gradient_accumulation_steps) == (mb, ga)
    assert notes(plan)["gradient_accumulation_steps"] == (
        ga,
        f"global batch {gbs} = {mb} x {ga} x {procs} GPU(s)",
    )


def test_batch_reserved_memory_comes_off_the_budget_and_onto_the_peak():
    reserved = 10 * GIB
    plan = batch(est(4, False) + reserved, reserved=reserved)
    assert plan.micro_batch_size == 4 and plan.predicted_peak_bytes == est(4, False) + reserved
    plan = batch(est(4, False) + reserved - 1, reserved=reserved)
    assert plan.micro_batch_size == 2


# (case, AutoPlan fields, _choose_batch arguments, estimate settings for micro batch 2)
ESTIMATE_ROWS = [
    ("padding-free: one row of all tokens", {"padding_free": True}, {}, {"seq": 2 * SEQ, "mb": 1}),
    ("loss tokens per row", {}, {"loss_tokens": 100}, {"loss_tokens": 200}),
    (
        "padding-free sdpa under a mask: the mask is over all tokens",
        {"padding_free": True},
        {"explicit_mask": True},
        {"seq": 2 * SEQ, "mb": 1, "explicit_mask": True},
    ),
    ("eager attention", {"attn_implementation": "eager"}, {}, {"attention": "eager"}),
    ("sdpa with a mask", {}, {"explicit_mask": True}, {"explicit_mask": True}),
    (
        "FA2 never gets a mask",
        {"attn_implementation": "flash_attention_2"},
        {"explicit_mask": True},
        {},
    ),
    (
        "sdpa_varlen is sdpa, no mask",
        {"attn_implementation": "sdpa_varlen"},
        {"explicit_mask": True},
        {},
    ),
    ("fp32 masters", {"master_weights": "fp32"}, {}, {"master_fp32": True}),
    (
        "fp32 compute",
        {"dtype": "fp32", "master_weights": "fp32"},
        {},
        {"dtype": "fp32", "master_fp32": True},
    ),
    ("Liger kernels", {"liger_kernel": True}, {}, {"fused_kernels": True}),
    ("full logits", {"chunked_loss": False}, {}, {"chunked_loss": False}),
]


@pytest.mark.parametrize(
    ("case", "plan_kw", "args", "want"), ESTIMATE_ROWS, ids=[r[0] for r in ESTIMATE_ROWS]
)
def test_batch_estimate_follows_the_plan(case, plan_kw, args, want):
    want = dict(want)
    seq, mb = want.pop("seq", SEQ), want.pop("mb", 2)
    peak = est(mb, False, seq=seq, **want)
    plan_kw = dict(plan_kw)
    plan = AutoPlan(
        **{
            "dtype": "bf16",
            "master_weights": "bf16",
            "attn_implementation": "sdpa",
            "chunked_loss": True,
            "memory_budget_bytes": 500 * GIB,
            **plan_kw,
        }
    )
    _choose_batch(
        SFTRunConfig(global_batch_size=16, micro_batch_size=2, gradient_checkpointing="off"),
        SHAPE,
        plan,
        seq_len=SEQ,
        loss_tokens_per_row=args.get("loss_tokens"),
        reserved=0,
        explicit_mask=args.get("explicit_mask", False),
    )
    assert plan.predicted_peak_bytes == peak


# ------------------------------------------------------------------ packing
VARLEN = "sdpa_varlen"
PACKED = "{}: examples concatenated without padding, never attending across"


def packing(facts: dict, attn: str, *, cfg_attn: str = "auto", packing: str = "auto", cuda=True):
    plan = AutoPlan(attn_implementation=attn)
    plan.note("attn_implementation", attn, "why attn")
    plan.note("dtype", "bf16", "why dtype")
    _choose_packing(
        Facts(facts), SFTRunConfig(attn_implementation=cfg_attn, packing=packing), cuda, plan
    )
    return plan


# (case, snapshot, planned attention, config attention, config packing, cuda, padding-free, reason)
PACKING_ROWS = [
    (
        "on with sdpa: the dense mask warned",
        snap(),
        "sdpa",
        "sdpa",
        "on",
        True,
        True,
        "set in the config; sdpa gets a (tokens x tokens) block-diagonal mask and computes "
        "every tile (attn_implementation: sdpa_varlen skips them)",
    ),
    ("on with FA2", snap(), "flash_attention_2", "auto", "on", True, True, "set in the config"),
    ("off with FA2", snap(), "flash_attention_2", "auto", "off", True, False, "set in the config"),
    ("off with sdpa", snap(), "sdpa", "auto", "off", True, False, "set in the config"),
    (
        "FA2",
        snap(),
        "flash_attention_2",
        "auto",
        "auto",
        True,
        True,
        PACKED.format("flash_attention_2"),
    ),
    (
        "FA3",
        snap(),
        "flash_attention_3",
        "auto",
        "auto",
        True,
        True,
        PACKED.format("flash_attention_3"),
    ),
    ("sdpa_varlen by name", snap(), VARLEN, VARLEN, "auto", True, True, PACKED.format(VARLEN)),
    (
        "flex attention",
        snap(),
        "flex_attention",
        "flex_attention",
        "auto",
        True,
        True,
        PACKED.format("flex_attention"),
    ),
    (
        "torch not probed",
        snap(version=None),
        "sdpa",
        "auto",
        "auto",
        True,
        False,
        "torch's version is unknown (the snapshot did not probe torch): padded batches",
    ),
    (
        "torch 2.8",
        snap(version="2.8.0+cu128"),
        "sdpa",
        "auto",
        "auto",
        True,
        False,
        "torch 2.8.0+cu128 has no varlen kernel (>= 2.9) and no flash-attn",
    ),
    (
        "torch 2.9 on Turing",
        snap(("7.5",), version="2.9.0"),
        "sdpa",
        "auto",
        "auto",
        True,
        False,
        "torch's varlen flash kernel needs cc >= 8.0",
    ),
    (
        "torch 2.9, Ampere + Turing",
        snap(("8.0", "7.5"), version="2.9.0"),
        "sdpa",
        "auto",
        "auto",
        True,
        False,
        "torch's varlen flash kernel needs cc >= 8.0",
    ),
    (
        "torch 2.9, cc unknown",
        snap((None,), version="2.9.0"),
        "sdpa",
        "auto",
        "auto",
        True,
        False,
        "torch's varlen flash kernel needs cc >= 8.0",
    ),
    (
        "sdpa by name on a Hopper",
        snap(),
        "sdpa",
        "sdpa",
        "auto",
        True,
        False,
        "sdpa would attend across packed examples or compute every tile",
    ),
    (
        "eager on a Hopper",
        snap(),
        "eager",
        "auto",
        "auto",
        True,
        False,
        "eager would attend across packed examples or compute every tile",
    ),
    (
        "CPU",
        snap(),
        "sdpa",
        "auto",
        "auto",
        False,
        False,
        "no CUDA GPU: the varlen attention kernels are GPU kernels",
    ),
]


@pytest.mark.parametrize(
    ("case", "facts", "attn", "cfg_attn", "setting", "cuda", "value", "reason"),
    PACKING_ROWS,
    ids=[r[0] for r in PACKING_ROWS],
)
def test_packing_rows(case, facts, attn, cfg_attn, setting, cuda, value, reason):
    plan = packing(facts, attn, cfg_attn=cfg_attn, packing=setting, cuda=cuda)
    assert plan.padding_free is value and plan.attn_implementation == attn
    assert plan.decisions == [
        Decision("attn_implementation", attn, "why attn"),
        Decision("dtype", "bf16", "why dtype"),
        Decision("padding_free", value, reason),
    ]


@pytest.mark.parametrize(
    ("version", "shown"),
    # "2.9" (two components) is the first torch with the varlen kernel, like "2.9.0"
    [("2.9", "2.9"), ("2.9.0", "2.9.0"), ("2.11.0+cu130", "2.11.0+cu130")],
)
def test_packing_with_torchs_varlen_kernel_rewrites_the_attention_row(version, shown):
    plan = packing(snap(("8.0",), version=version), "sdpa")
    assert plan.padding_free is True and plan.attn_implementation == VARLEN
    assert plan.decisions == [
        Decision(
            "attn_implementation",
            VARLEN,
            f"why attn; torch {shown}'s own varlen flash kernel instead (torch.nn.attention.varlen)",
        ),
        Decision("dtype", "bf16", "why dtype"),
        Decision(
            "padding_free",
            True,
            "sdpa_varlen: examples concatenated without padding, never attending across (0.5B on "
            "real rows, H100: 5.3x TRL defaults' real tokens/s; FlexAttention compiled > 170 s)",
        ),
    ]


# ------------------------------------------------------------------ decide (SFT)
def test_decide_device_row_names_the_gpus_once_each_sorted():
    facts = snap(("9.0", "8.0", "9.0"), names=[H100, A100, H100])
    plan = decide(facts, SFTRunConfig(), SHAPE, seq_len=512)
    assert plan.device == "cuda"
    assert plan.decisions[0] == Decision("device", "cuda", f"{A100}, {H100}")


@pytest.mark.parametrize(
    ("facts", "device"),
    [
        (snap(cuda=False), "cpu"),  # torch says no CUDA, NVML lists a GPU
        (snap(cuda=None), "cuda"),  # torch silent: the GPUs decide
        ({"torch": {"version": "2.11.0"}, "gpus": []}, "cpu"),
        ({"gpus": [{"index": 0, "name": H100}]}, "cuda"),
        ({}, "cpu"),
    ],
)
def test_decide_device_from_torch_else_the_gpus(facts, device):
    plan = decide(facts, SFTRunConfig(), SHAPE, seq_len=512)
    assert plan.device == device
    if device == "cpu":
        assert plan.decisions[0] == Decision("device", "cpu", "no CUDA GPU visible to torch")


def test_decide_chunked_loss_row():
    plan = decide(snap(), SFTRunConfig(), SHAPE, seq_len=512)
    assert plan.chunked_loss is True
    assert notes(plan)["chunked_loss"] == (
        True,
        "TRL's fused LM head scores tokens in tiles, never the full 151936-vocab logits",
    )
    plan = decide(snap(), SFTRunConfig(), SHAPE, seq_len=512, trl_fused_lm_head=False)
    assert plan.chunked_loss is False
    assert notes(plan)["chunked_loss"] == (
        False,
        "this TRL has no fused LM head: full logits (~13 B x tokens x vocab)",
    )
    # the full logits cost memory: the same micro batch is predicted larger
    fixed = SFTRunConfig(micro_batch_size=4, gradient_checkpointing="off")
    chunked = decide(snap(), fixed, SHAPE, seq_len=512).predicted_peak_bytes
    full = decide(snap(), fixed, SHAPE, seq_len=512, trl_fused_lm_head=False).predicted_peak_bytes
    assert full > chunked


def test_decide_sft_on_the_cpu_end_to_end():
    """CPU, 32 GiB RAM: fp32, sdpa padded under a mask, budget 16 GiB, sequence cut at
    max_length; the predicted peak is the memory model's for exactly those settings."""
    cfg = SFTRunConfig(
        max_length=2048, micro_batch_size=2, gradient_checkpointing="off", global_batch_size=8
    )
    plan = decide(snap(cuda=False, ram=32 * GIB), cfg, SHAPE, seq_len=3000)
    assert (plan.device, plan.dtype, plan.master_weights, plan.attn_implementation) == (
        "cpu",
        "fp32",
        "fp32",
        "sdpa",
    )
    assert (plan.seq_len, plan.padding_free, plan.memory_budget_bytes) == (2048, False, 16 * GIB)
    peak = est(2, False, seq=2048, dtype="fp32", master_fp32=True, explicit_mask=True)
    assert plan.predicted_peak_bytes == peak
    assert plan.gradient_accumulation_steps == 4
    assert [d.setting for d in plan.decisions] == [
        "device",
        "attn_implementation",
        "dtype",
        "master_weights",
        "optim",
        "liger_kernel",
        "chunked_loss",
        "dataloader_num_workers",
        "logging_nan_inf_filter",
        "padding_free",
        "token_budget",
        "micro_batch_size",
        "gradient_accumulation_steps",
        "gradient_checkpointing",
    ]
    # a shorter longest sample is the sequence
    plan = decide(snap(cuda=False, ram=32 * GIB), cfg, SHAPE, seq_len=1000)
    assert plan.seq_len == 1000


def test_decide_sft_eager_gets_no_mask_and_fa2_packs():
    cfg = SFTRunConfig(
        attn_implementation="eager",
        micro_batch_size=2,
        gradient_checkpointing="off",
        global_batch_size=8,
    )
    plan = decide(snap(cuda=False, ram=32 * GIB), cfg, SHAPE, seq_len=1024)
    assert plan.predicted_peak_bytes == est(
        2, False, dtype="fp32", master_fp32=True, attention="eager"
    )
    facts = snap(("9.0",), imports={"flash_attn": OK}, used=0)
    cfg = SFTRunConfig(
        micro_batch_size=2, gradient_checkpointing="off", global_batch_size=8, learning_rate=1e-3
    )
    plan = decide(facts, cfg, SHAPE, seq_len=1024)
    assert (plan.attn_implementation, plan.padding_free) == ("flash_attention_2", True)
    assert plan.memory_budget_bytes == int(0.9 * 80 * GIB)
    assert plan.predicted_peak_bytes == est(1, False, seq=2048)
