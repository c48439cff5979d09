"""Decision rows for shop_r1/autoconfig.py, one table per choice, on synthetic facts.

Each row names the facts the choice reads (GPU compute capability, memory, flash-attn /
Liger / vLLM import health, bf16 support, torch's version, processes 1-4) and the value and
printed reason expected, worked out by hand from the rules:
- attention: torch < 2.1.1 eager; no CUDA sdpa; Hopper (cc 9.x) + flash_attn_interface
  FA3; cc >= 8.0 + flash_attn FA2; else sdpa with why (cc < 8.0 first, then the import).
- dtype: bf16 when torch says so or any GPU has cc >= 8.0, else fp16; fp32 on the CPU.
  Masters fp32 unless pure bf16 with lr >= 1e-4.
- batch: the largest divisor (<= 64) of rows per GPU per accumulation step whose estimate
  fits budget - reserved, first without checkpointing, then with; budget = headroom x the
  least free GPU memory (half the host RAM on the CPU, 16 GiB RAM when unknown).
- GRPO: vLLM when it (and its compiled ops) imports; server when a GPU is spare, else
  colocated with a share rounded up to 0.05 in [0.1, 0.9]; generation batch rounded up to
  lcm(num_generations, processes, micro batch x processes).
The memory model (shop_r1_doctor.memory, its own tables) is the yardstick for byte figures.
Fast: no golden files, no rendering; each row is a few function calls."""

from __future__ import annotations

import math

import pytest

from shop_r1.autoconfig import (
    AutoPlan,
    Decision,
    _choose_attention,
    _choose_batch,
    _choose_dtype,
    _choose_kernels,
    _choose_packing,
    _divisors_desc,
    _memory_budget,
    decide,
    render_table,
    render_text,
)
from shop_r1.config import GRPORunConfig, SFTRunConfig
from shop_r1_doctor.api import grpo_vllm_speedup
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.memory import KNOWN_SHAPES, estimate_training_memory, vllm_memory_fraction

GIB = 1024**3
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
SHAPE = KNOWN_SHAPES["0.5b"]
OK = {"ok": True, "error": None}


def fail(error: str = "ImportError: boom") -> dict:
    return {"ok": False, "error": error}


def snap(
    ccs=("9.0",),
    *,
    cuda: bool | None = True,
    version: str | None = "2.11.0+cu130",
    bf16: bool | None = None,
    total: int | None = 80 * GIB,
    used: int | None = 0,
    imports: dict | None = None,
    packages: dict | None = None,
    ram: int | None = None,
    device_count: int | None = None,
    names=None,
) -> dict:
    gpus = [
        {
            "index": i,
            "name": (names or [H100] * len(ccs))[i],
            "compute_capability": cc,
            "memory_total_bytes": total,
            "memory_used_bytes": used,
        }
        for i, cc in enumerate(ccs)
    ]
    torch: dict = {"version": version}
    if cuda is not None:
        torch["cuda_available"] = cuda
    if bf16 is not None:
        torch["bf16_supported"] = bf16
    if device_count is not None:
        torch["device_count"] = device_count
    return {
        "gpus": gpus,
        "torch": torch,
        "imports": imports or {},
        "packages": packages or {},
        "host": {} if ram is None else {"ram_bytes": ram},
    }


def notes(plan: AutoPlan) -> dict[str, tuple]:
    return {d.setting: (d.value, d.reason) for d in plan.decisions}


# ------------------------------------------------------------------ attention
FA_NOT_INSTALLED = (
    "flash-attn is not installed (pip install flash-attn for ~1.5-2x with padding-free)"
)
LONG_ERROR = "ImportError: " + "x" * 100
# (case, snapshot, config attn, cuda, expected value, expected reason)
ATTENTION_ROWS = [
    (
        "set in the config",
        snap(imports={"flash_attn": OK}),
        "eager",
        True,
        "eager",
        "set in the config",
    ),
    (
        "torch 2.1.0: eager",
        snap(version="2.1.0"),
        "auto",
        True,
        "eager",
        "torch 2.1.0 has no usable sdpa",
    ),
    (
        "torch 2.1.1 on the CPU",
        snap(version="2.1.1"),
        "auto",
        False,
        "sdpa",
        "no CUDA GPU: FlashAttention needs one",
    ),
    (
        "torch unknown on the CPU",
        snap(version=None),
        "auto",
        False,
        "sdpa",
        "no CUDA GPU: FlashAttention needs one",
    ),
    (
        "Hopper with FA3",
        snap(("9.0",), imports={"flash_attn_interface": OK, "flash_attn": OK}),
        "auto",
        True,
        "flash_attention_3",
        "Hopper (cc 9.0), flash_attn_interface imports",
    ),
    (
        "Hopper, FA3 broken, FA2 imports",
        snap(("9.0",), imports={"flash_attn_interface": fail(), "flash_attn": OK}),
        "auto",
        True,
        "flash_attention_2",
        "cc 9.0 >= 8.0, flash_attn imports",
    ),
    (
        "Blackwell: FA3 is Hopper-only",
        snap(("10.0",), imports={"flash_attn_interface": OK, "flash_attn": OK}),
        "auto",
        True,
        "flash_attention_2",
        "cc 10.0 >= 8.0, flash_attn imports",
    ),
    (
        "Ada with FA2",
        snap(("8.9",), imports={"flash_attn": OK}),
        "auto",
        True,
        "flash_attention_2",
        "cc 8.9 >= 8.0, flash_attn imports",
    ),
    (
        "Ampere cc 8.0 with FA2",
        snap(("8.0",), imports={"flash_attn": OK}),
        "auto",
        True,
        "flash_attention_2",
        "cc 8.0 >= 8.0, flash_attn imports",
    ),
    (
        "Turing with FA2 installed",
        snap(("7.5",), imports={"flash_attn": OK}),
        "auto",
        True,
        "sdpa",
        "cc 7.5 < 8.0: FlashAttention 2 needs Ampere or newer",
    ),
    (
        "Turing, FA2 broken: the cc is the reason",
        snap(("7.5",), imports={"flash_attn": fail()}),
        "auto",
        True,
        "sdpa",
        "cc 7.5 < 8.0: FlashAttention 2 needs Ampere or newer",
    ),
    (
        "Hopper + Turing: the older GPU decides",
        snap(("9.0", "7.5"), imports={"flash_attn_interface": OK, "flash_attn": OK}),
        "auto",
        True,
        "sdpa",
        "cc 7.5 < 8.0: FlashAttention 2 needs Ampere or newer",
    ),
    (
        "FA2 import fails: first line of the error",
        snap(
            ("8.0",), imports={"flash_attn": fail("ImportError: undefined symbol: _ZN3c10\nmore")}
        ),
        "auto",
        True,
        "sdpa",
        "flash_attn import fails (ImportError: undefined symbol: _ZN3c10)",
    ),
    (
        "FA2 import fails: a long error cut at 80 characters",
        snap(("8.0",), imports={"flash_attn": fail(LONG_ERROR)}),
        "auto",
        True,
        "sdpa",
        f"flash_attn import fails ({LONG_ERROR[:80]})",
    ),
    (
        "FA2 import fails without an error text",
        snap(("8.0",), imports={"flash_attn": fail("")}),
        "auto",
        True,
        "sdpa",
        "flash_attn import fails (error)",
    ),
    (
        "flash-attn not installed",
        snap(("9.0",), packages={"flash-attn": None}),
        "auto",
        True,
        "sdpa",
        FA_NOT_INSTALLED,
    ),
    (
        "flash-attn installed, import not probed",
        snap(("9.0",), packages={"flash-attn": {"version": "2.8.3"}}),
        "auto",
        True,
        "sdpa",
        "flash_attn import health unknown",
    ),
    ("nothing known", snap(("9.0",)), "auto", True, "sdpa", "flash_attn import health unknown"),
    (
        "GPU cc unknown, flash_attn imports",
        snap((None,), imports={"flash_attn": OK, "flash_attn_interface": OK}),
        "auto",
        True,
        "sdpa",
        "flash_attn import health unknown",
    ),
]


@pytest.mark.parametrize(
    ("case", "facts", "attn", "cuda", "value", "reason"),
    ATTENTION_ROWS,
    ids=[r[0] for r in ATTENTION_ROWS],
)
def test_attention_rows(case, facts, attn, cuda, value, reason):
    plan = AutoPlan()
    _choose_attention(Facts(facts), SFTRunConfig(attn_implementation=attn), cuda, plan)
    assert plan.attn_implementation == value
    assert plan.decisions == [Decision("attn_implementation", value, reason)]


# ------------------------------------------------------------------ dtype, masters, optimizer
MASTERS_LR = "lr 2e-05 < 0.0001: updates would vanish in bf16 weights"
PURE_BF16 = "pure bf16: 8 instead of 18 bytes/param, ~11% faster (measured, 0.5B)"
# (case, snapshot, cuda, config overrides, (dtype, why), (masters, why), (optim, why))
DTYPE_ROWS = [
    (
        "CPU",
        snap(("9.0",)),
        False,
        {},
        ("fp32", "CPU: bf16 matmuls are slow or emulated there"),
        ("fp32", "fp32 compute"),
        ("adamw_torch", "CPU"),
    ),
    (
        "cc 8.0, torch silent on bf16: bf16, lr 2e-5 keeps fp32 masters",
        snap(("8.0",)),
        True,
        {},
        ("bf16", "the GPU supports bf16"),
        ("fp32", MASTERS_LR),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "cc 7.5 but torch says bf16",
        snap(("7.5",), bf16=True),
        True,
        {},
        ("bf16", "the GPU supports bf16"),
        ("fp32", MASTERS_LR),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "cc 7.5 without bf16: fp16",
        snap(("7.5",), bf16=False),
        True,
        {},
        ("fp16", "no bf16 on this GPU: fp16 autocast with loss scaling"),
        ("fp32", "fp16 needs fp32 masters for loss scaling"),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "cc 7.5 and cc 8.0: one bf16 GPU is enough",
        snap(("7.5", "8.0"), bf16=False),
        True,
        {},
        ("bf16", "the GPU supports bf16"),
        ("fp32", MASTERS_LR),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "lr exactly 1e-4: pure bf16",
        snap(("9.0",)),
        True,
        {"learning_rate": 1e-4},
        ("bf16", "the GPU supports bf16"),
        ("bf16", PURE_BF16),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "lr just under 1e-4",
        snap(("9.0",)),
        True,
        {"learning_rate": 9.9e-5},
        ("bf16", "the GPU supports bf16"),
        ("fp32", "lr 9.9e-05 < 0.0001: updates would vanish in bf16 weights"),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "masters set fp32 at a large lr",
        snap(("9.0",)),
        True,
        {"learning_rate": 1e-3, "master_weights": "fp32"},
        ("bf16", "the GPU supports bf16"),
        ("fp32", "set in the config"),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "masters set bf16 at a small lr",
        snap(("9.0",)),
        True,
        {"learning_rate": 1e-6, "master_weights": "bf16"},
        ("bf16", "the GPU supports bf16"),
        ("bf16", "set in the config"),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "dtype fp16 set on a bf16 GPU",
        snap(("9.0",)),
        True,
        {"dtype": "fp16", "master_weights": "bf16"},
        ("fp16", "set in the config"),
        ("fp32", "fp16 needs fp32 masters for loss scaling"),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "dtype fp32 set",
        snap(("9.0",)),
        True,
        {"dtype": "fp32", "learning_rate": 1e-3},
        ("fp32", "set in the config"),
        ("fp32", "fp32 compute"),
        ("adamw_torch_fused", "fused AdamW kernel"),
    ),
    (
        "bf16 set on the CPU, large lr",
        snap(("9.0",)),
        False,
        {"dtype": "bf16", "learning_rate": 1e-3},
        ("bf16", "set in the config"),
        ("bf16", PURE_BF16),
        ("adamw_torch", "CPU"),
    ),
    (
        "optimizer set",
        snap(("9.0",)),
        True,
        {"optim": "adafactor"},
        ("bf16", "the GPU supports bf16"),
        ("fp32", MASTERS_LR),
        ("adafactor", "set in the config"),
    ),
    (
        "optimizer set on the CPU",
        snap(("9.0",)),
        False,
        {"optim": "adafactor"},
        ("fp32", "CPU: bf16 matmuls are slow or emulated there"),
        ("fp32", "fp32 compute"),
        ("adafactor", "set in the config"),
    ),
]


@pytest.mark.parametrize(
    ("case", "facts", "cuda", "cfg", "dtype", "masters", "optim"),
    DTYPE_ROWS,
    ids=[r[0] for r in DTYPE_ROWS],
)
def test_dtype_rows(case, facts, cuda, cfg, dtype, masters, optim):
    plan = AutoPlan()
    _choose_dtype(Facts(facts), SFTRunConfig(**cfg), cuda, plan)
    assert (plan.dtype, plan.master_weights, plan.optim) == (dtype[0], masters[0], optim[0])
    assert plan.decisions == [
        Decision("dtype", *dtype),
        Decision("master_weights", *masters),
        Decision("optim", *optim),
    ]


# ------------------------------------------------------------------ Liger kernels
LIGER_PKG = {"liger-kernel": {"version": "0.8.5", "requires": []}}
LIGER_GAIN = (
    "imports: fused RMSNorm/SwiGLU/RoPE, +13% (fp32 masters) to +36% (bf16) tokens/s on 0.5B, H100"
)
LIGER_MISSING = (
    "liger-kernel is not installed (pip install 'shop-r1[liger]': up to +36% tokens/s at 0.5B)"
)


def liger(ok=True, error=None, version="0.8.5", installed=True) -> dict:
    return snap(
        imports={
            "liger_kernel": {"ok": True, "error": None, "version": version},
            "liger_kernel.transformers": {"ok": ok, "error": error},
        },
        packages=LIGER_PKG if installed else {"liger-kernel": None},
    )


# (case, snapshot, cuda, config class, config setting, value, reason)
KERNEL_ROWS = [
    (
        "on in the config, not installed",
        snap(),
        False,
        SFTRunConfig,
        "on",
        True,
        "set in the config",
    ),
    ("off in the config, healthy", liger(), True, SFTRunConfig, "off", False, "set in the config"),
    (
        "CPU",
        liger(),
        False,
        SFTRunConfig,
        "auto",
        False,
        "no CUDA GPU: Liger's kernels are Triton (GPU) kernels",
    ),
    (
        "GRPO",
        liger(),
        True,
        GRPORunConfig,
        "auto",
        False,
        "GRPO is rollout-bound; not measured there (liger_kernel: on to try)",
    ),
    (
        "SFT, imports, version known",
        liger(),
        True,
        SFTRunConfig,
        "auto",
        True,
        f"liger-kernel 0.8.5 {LIGER_GAIN}",
    ),
    (
        "SFT, imports, version unknown",
        liger(version=None),
        True,
        SFTRunConfig,
        "auto",
        True,
        f"liger-kernel {LIGER_GAIN}",
    ),
    (
        "installed, import fails",
        liger(ok=False, error="ModuleNotFoundError: No module named 'triton'\nTraceback"),
        True,
        SFTRunConfig,
        "auto",
        False,
        "liger_kernel import fails (ModuleNotFoundError: No module named 'triton')",
    ),
    (
        "installed, import fails, long error",
        liger(ok=False, error=LONG_ERROR),
        True,
        SFTRunConfig,
        "auto",
        False,
        f"liger_kernel import fails ({LONG_ERROR[:80]})",
    ),
    (
        "installed, import fails silently",
        liger(ok=False, error=None),
        True,
        SFTRunConfig,
        "auto",
        False,
        "liger_kernel import fails (error)",
    ),
    (
        "not installed (so the import fails)",
        liger(ok=False, error="ModuleNotFoundError", installed=False),
        True,
        SFTRunConfig,
        "auto",
        False,
        LIGER_MISSING,
    ),
    ("nothing known", snap(), True, SFTRunConfig, "auto", False, LIGER_MISSING),
]


@pytest.mark.parametrize(
    ("case", "facts", "cuda", "kind", "setting", "value", "reason"),
    KERNEL_ROWS,
    ids=[r[0] for r in KERNEL_ROWS],
)
def test_liger_rows(case, facts, cuda, kind, setting, value, reason):
    plan = AutoPlan()
    _choose_kernels(Facts(facts), kind(liger_kernel=setting), cuda, plan)
    assert plan.liger_kernel is value
    assert plan.decisions == [Decision("liger_kernel", value, reason)]


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
SEQ = 1024


def est(mb: int, ckpt: bool, *, seq: int = SEQ, **kw) -> int:
    settings = {
        "seq_len": seq,
        "micro_batch": mb,
        "dtype": "bf16",
        "master_fp32": False,
        "grad_checkpointing": ckpt,
        "chunked_loss": True,
        "loss_tokens": None,
        "attention": "sdpa",
        "fused_kernels": False,
        "explicit_mask": False,
        **kw,
    }
    return estimate_training_memory(SHAPE, **settings).total


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
        "padding_free",
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


# ------------------------------------------------------------------ GRPO
VLLM_OK = {"vllm": OK}


def grpo(facts: dict, seq: int = 256, **cfg) -> AutoPlan:
    return decide(facts, GRPORunConfig(**cfg), SHAPE, seq_len=seq)


NO_VLLM = "vLLM is not installed: transformers generate() (slower)"
# (case, snapshot, config, use_vllm, reason)
USE_VLLM_ROWS = [
    ("on in the config", snap(), {"use_vllm": "on"}, True, "set in the config"),
    ("off in the config", snap(imports=VLLM_OK), {"use_vllm": "off"}, False, "set in the config"),
    ("CPU", snap(cuda=False, imports=VLLM_OK), {}, False, "no CUDA GPU: transformers generate()"),
    (
        "imports",
        snap(imports=VLLM_OK),
        {},
        True,
        f"vLLM imports: {grpo_vllm_speedup()} over generate()",
    ),
    (
        "imports, compiled ops not probed",
        snap(imports={"vllm": OK, "vllm._custom_ops": {"error": None}}),
        {},
        True,
        f"vLLM imports: {grpo_vllm_speedup()} over generate()",
    ),
    (
        "imports, compiled ops fail",
        snap(
            imports={"vllm": OK, "vllm._custom_ops": fail()},
            packages={"vllm": {"version": "0.11.0"}},
        ),
        {},
        False,
        "vLLM import fails (see `shop-r1 doctor`): transformers generate()",
    ),
    (
        "import fails, installed",
        snap(imports={"vllm": fail()}, packages={"vllm": {"version": "0.11.0"}}),
        {},
        False,
        "vLLM import fails (see `shop-r1 doctor`): transformers generate()",
    ),
    (
        "import fails, install unknown",
        snap(imports={"vllm": fail()}),
        {},
        False,
        "vLLM import fails (see `shop-r1 doctor`): transformers generate()",
    ),
    ("not installed", snap(imports={"vllm": fail()}, packages={"vllm": None}), {}, False, NO_VLLM),
    ("nothing known", snap(), {}, False, NO_VLLM),
]


@pytest.mark.parametrize(
    ("case", "facts", "cfg", "value", "reason"), USE_VLLM_ROWS, ids=[r[0] for r in USE_VLLM_ROWS]
)
def test_grpo_use_vllm_rows(case, facts, cfg, value, reason):
    plan = grpo(facts, **cfg)
    assert plan.use_vllm is value
    assert notes(plan)["use_vllm"] == (value, reason)
    if not value:
        assert plan.vllm_mode is None and "vllm_mode" not in notes(plan)
        assert plan.vllm_gpu_memory_utilization is None


COLOCATE_WHY = "one GPU per trainer: a server on the same GPU fails (NCCL 'Duplicate GPU')"
# (case, GPUs listed, torch device count, processes, config mode, mode, reason)
MODE_ROWS = [
    ("1 GPU, 1 process", 1, None, 1, "auto", "colocate", COLOCATE_WHY),
    (
        "2 GPUs, 1 process",
        2,
        None,
        1,
        "auto",
        "server",
        "1 GPU(s) beyond the 1 training one(s): `trl vllm-serve` there",
    ),
    (
        "torch counts 4 of 2 listed, 2 processes",
        2,
        4,
        2,
        "auto",
        "server",
        "2 GPU(s) beyond the 2 training one(s): `trl vllm-serve` there",
    ),
    ("torch counts 1 of 2 listed", 2, 1, 1, "auto", "colocate", COLOCATE_WHY),
    ("2 GPUs, 2 processes", 2, None, 2, "auto", "colocate", COLOCATE_WHY),
    ("4 GPUs, 4 processes", 4, None, 4, "auto", "colocate", COLOCATE_WHY),
    ("server set on 1 GPU", 1, None, 1, "server", "server", "set in the config"),
    ("colocate set on 2 GPUs", 2, None, 1, "colocate", "colocate", "set in the config"),
]


def test_grpo_vllm_forced_on_without_cuda_counts_no_gpu():
    # torch has no CUDA although NVML lists 2 GPUs: none is spare for a server
    facts = snap(("9.0", "9.0"), cuda=False, imports=VLLM_OK)
    plan = grpo(facts, use_vllm="on")
    assert notes(plan)["vllm_mode"] == ("colocate", COLOCATE_WHY)


@pytest.mark.parametrize(
    ("case", "gpus", "count", "procs", "setting", "mode", "reason"),
    MODE_ROWS,
    ids=[r[0] for r in MODE_ROWS],
)
def test_grpo_vllm_mode_rows(case, gpus, count, procs, setting, mode, reason):
    facts = snap(("9.0",) * gpus, imports=VLLM_OK, device_count=count)
    plan = grpo(facts, num_processes=procs, vllm_mode=setting)
    assert plan.vllm_mode == mode
    assert notes(plan)["vllm_mode"] == (mode, reason)
    if mode == "server":
        assert plan.vllm_gpu_memory_utilization is None


def _frac(need: float) -> float:
    return min(max(math.ceil(need * 20) / 20, 0.1), 0.9)


# (case, GPU size, prompt tokens, processes, generation batch)
UTIL_ROWS = [
    ("small need on 80 GiB: the 0.1 floor", 80 * GIB, 256, 1, 64),
    ("mid need on 16 GiB", 16 * GIB, 1024, 1, 64),
    ("2 processes share the rollouts", 16 * GIB, 1024, 2, 64),
    ("huge need: the 0.9 cap", 8 * GIB, 8192, 1, 64),
    ("generation batch set", 16 * GIB, 1024, 1, 128),
]


@pytest.mark.parametrize(
    ("case", "total", "prompt", "procs", "gen"), UTIL_ROWS, ids=[r[0] for r in UTIL_ROWS]
)
def test_grpo_colocate_utilization_rows(case, total, prompt, procs, gen):
    facts = snap(("9.0",) * procs, imports=VLLM_OK, total=total)
    cfg = {"num_processes": procs, "generation_batch_size": 64 if gen == 64 else gen}
    plan = grpo(facts, seq=prompt, **cfg)
    seq, seqs = prompt + 256, max(gen // procs, 1)
    need = vllm_memory_fraction(SHAPE, total, max_seq_len=seq, concurrent_seqs=seqs)
    assert plan.vllm_mode == "colocate" and plan.seq_len == seq
    if case.endswith("floor"):
        assert math.ceil(need * 20) / 20 < 0.1
    if case.endswith("cap"):
        assert need > 0.9
    assert plan.vllm_gpu_memory_utilization == _frac(need)
    assert notes(plan)["vllm_gpu_memory_utilization"] == (
        _frac(need),
        f"weights + KV cache for {seqs} seqs x {seq} tokens ({need:.0%} of {total / GIB:.0f} GiB), "
        "rounded up",
    )


def test_grpo_colocate_utilization_rounds_up_to_005():
    total, seq = 16 * GIB, 1024 + 256
    need = vllm_memory_fraction(SHAPE, total, max_seq_len=seq, concurrent_seqs=64)
    assert 0.1 < need < 0.9 and need * 20 != int(need * 20)
    plan = grpo(snap(imports=VLLM_OK, total=total), seq=1024)
    assert plan.vllm_gpu_memory_utilization == math.ceil(need * 20) / 20 > need


def test_grpo_colocate_on_gpus_of_unknown_size_assumes_80_gib():
    plan = grpo(snap(imports=VLLM_OK, total=None, used=None), use_vllm="on")
    need = vllm_memory_fraction(SHAPE, 80 * GIB, max_seq_len=512, concurrent_seqs=64)
    assert plan.vllm_gpu_memory_utilization == _frac(need)
    assert notes(plan)["vllm_gpu_memory_utilization"][1].endswith("of 80 GiB), rounded up")


def test_grpo_colocate_utilization_of_the_smallest_gpu():
    facts = snap(("9.0", "9.0"), imports=VLLM_OK)
    facts["gpus"][1]["memory_total_bytes"] = 16 * GIB
    plan = grpo(facts, seq=1024, num_processes=2)
    need = vllm_memory_fraction(SHAPE, 16 * GIB, max_seq_len=1280, concurrent_seqs=32)
    assert plan.vllm_gpu_memory_utilization == _frac(need)


def test_grpo_reserved_memory_vllm_share_and_reference_model():
    """Fixed micro batch, no checkpointing: the peak is the estimate + vLLM's share + the
    frozen reference model (2 bytes/param in bf16, none at beta 0)."""
    facts = snap(imports={"vllm": OK, "flash_attn": OK})
    fixed = {
        "micro_batch_size": 4,
        "gradient_checkpointing": "off",
        "vllm_gpu_memory_utilization": 0.25,
    }
    training = est(4, False, seq=512, loss_tokens=4 * 256, master_fp32=True)
    plan = grpo(facts, **fixed)
    assert notes(plan)["vllm_gpu_memory_utilization"] == (0.25, "set in the config")
    assert plan.predicted_peak_bytes == training + int(0.25 * 80 * GIB) + 2 * SHAPE.params
    plan = grpo(facts, beta=0.0, **fixed)
    assert plan.predicted_peak_bytes == training + int(0.25 * 80 * GIB)
    # vLLM as a server on another GPU: nothing reserved here
    plan = grpo(facts, beta=0.0, vllm_mode="server", **fixed)
    assert plan.predicted_peak_bytes == training
    # fp32 compute keeps a 4-byte reference
    plan = grpo(facts, dtype="fp32", use_vllm="off", **fixed)
    assert (
        plan.predicted_peak_bytes
        == est(4, False, seq=512, loss_tokens=4 * 256, dtype="fp32", master_fp32=True)
        + 4 * SHAPE.params
    )


# (case, processes, global batch, generations, generation batch, micro batch, expected, reason)
GEN_ROWS = [
    (
        "auto: one optimizer step",
        1,
        64,
        8,
        "auto",
        8,
        64,
        "one optimizer step of completions (8 prompts x 8)",
    ),
    (
        "auto, 4 generations",
        1,
        16,
        4,
        "auto",
        4,
        16,
        "one optimizer step of completions (4 prompts x 4)",
    ),
    ("set, a valid multiple", 1, 64, 8, 128, 8, 128, "set in the config"),
    (
        "set, not a multiple of the micro batch",
        1,
        64,
        8,
        40,
        16,
        48,
        "40 is not a multiple of num_generations 8 and micro batch 16 x 1 GPU(s): using 48",
    ),
    (
        "2 processes x micro batch 8",
        2,
        64,
        4,
        40,
        8,
        48,
        "40 is not a multiple of num_generations 4 and micro batch 8 x 2 GPU(s): using 48",
    ),
    (
        "3 processes",
        3,
        48,
        8,
        "auto",
        16,
        48,
        "one optimizer step of completions (6 prompts x 8)",
    ),
    (
        "3 processes, set 56",
        3,
        48,
        8,
        56,
        2,
        72,
        "56 is not a multiple of num_generations 8 and micro batch 2 x 3 GPU(s): using 72",
    ),
]


@pytest.mark.parametrize(
    ("case", "procs", "gbs", "ngen", "gen", "mb", "want", "reason"),
    GEN_ROWS,
    ids=[r[0] for r in GEN_ROWS],
)
def test_grpo_generation_batch_rows(case, procs, gbs, ngen, gen, mb, want, reason):
    plan = grpo(
        snap(cuda=False),
        num_processes=procs,
        global_batch_size=gbs,
        num_generations=ngen,
        generation_batch_size=gen,
        micro_batch_size=mb,
    )
    assert plan.micro_batch_size == mb
    assert plan.generation_batch_size == want
    assert notes(plan)["generation_batch_size"] == (want, reason)


def test_grpo_on_the_cpu_end_to_end():
    plan = grpo(
        snap(cuda=False, ram=32 * GIB), seq=300, micro_batch_size=2, gradient_checkpointing="off"
    )
    assert (plan.device, plan.use_vllm, plan.seq_len, plan.padding_free) == (
        "cpu",
        False,
        556,
        False,
    )
    assert (
        plan.predicted_peak_bytes
        == est(2, False, seq=556, loss_tokens=2 * 256, dtype="fp32", master_fp32=True)
        + 4 * SHAPE.params
    )
    assert [d.setting for d in plan.decisions] == [
        "device",
        "attn_implementation",
        "dtype",
        "master_weights",
        "optim",
        "liger_kernel",
        "chunked_loss",
        "use_vllm",
        "micro_batch_size",
        "gradient_accumulation_steps",
        "gradient_checkpointing",
        "generation_batch_size",
    ]


# ------------------------------------------------------------------ rendering
def test_render_text_prints_every_row_verbatim():
    plan = AutoPlan()
    plan.note("liger_kernel", False, "pip install 'shop-r1[liger]' ([Errno 2])")
    plan.note("micro_batch_size", 4, "fits")
    assert render_text(plan, width=100) == (
        "                          auto-configuration                           \n"
        "┏━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓\n"
        "┃ setting          ┃ value ┃ reason                                   ┃\n"
        "┡━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩\n"
        "│ liger_kernel     │ False │ pip install 'shop-r1[liger]' ([Errno 2]) │\n"
        "│ micro_batch_size │ 4     │ fits                                     │\n"
        "└──────────────────┴───────┴──────────────────────────────────────────┘\n"
    )


def test_render_text_wraps_at_140_columns_by_default():
    plan = AutoPlan()
    plan.note("micro_batch_size", 4, "a long reason " * 20)
    assert {len(line) for line in render_text(plan).splitlines() if "│" in line} == {140}


def test_render_text_has_no_colour_codes_even_when_colour_is_forced(monkeypatch):
    plan = AutoPlan()
    plan.note("micro_batch_size", 4, "fits")
    plain = render_text(plan)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert render_text(plan) == plain and "\x1b" not in plain


def test_render_table_setting_column_is_bold_on_a_colour_terminal():
    import io

    from rich.console import Console

    plan = AutoPlan()
    plan.note("micro_batch_size", 4, "fits")
    out = io.StringIO()
    Console(file=out, width=80, color_system="standard", force_terminal=True).print(
        render_table(plan)
    )
    assert "\x1b[1mmicro_batch_size" in out.getvalue()
    assert "\x1b[1mfits" not in out.getvalue()


def test_grpo_colocate_one_rollout_per_process():
    """4 processes, 4 completions a step: each colocated vLLM holds one sequence."""
    facts = snap(("9.0",) * 4, imports=VLLM_OK, total=16 * GIB)
    plan = grpo(facts, seq=1024, num_processes=4, global_batch_size=4, num_generations=4)
    need = vllm_memory_fraction(SHAPE, 16 * GIB, max_seq_len=1280, concurrent_seqs=1)
    assert notes(plan)["vllm_gpu_memory_utilization"] == (
        _frac(need),
        f"weights + KV cache for 1 seqs x 1280 tokens ({need:.0%} of 16 GiB), rounded up",
    )
