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
Fast: no golden files; each row is a few function calls. This file: attention, dtype and
masters, Liger, rendering; the batch and packing rows and the GRPO rows are in
test_autoconfig_rows_batch.py / _grpo.py, the shared snapshots in tests/autoconfig_facts.py."""

from __future__ import annotations

import pytest
from autoconfig_facts import OK, fail, snap

from shop_r1.autoconfig import (
    AutoPlan,
    Decision,
    _choose_attention,
    _choose_dtype,
    _choose_kernels,
    render_table,
    render_text,
)
from shop_r1.config import GRPORunConfig, SFTRunConfig
from shop_r1_doctor.facts import Facts

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
    # hidden_dtype follows master_weights where there is a choice (test_precision.py)
    assert [d for d in plan.decisions if d.setting != "hidden_dtype"] == [
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
        True,
        "liger-kernel 0.8.5 imports: fused RMSNorm/SwiGLU/RoPE, GRPO step 1.34x at 1.5B with "
        "vLLM (less memory: micro batch 8 fits), H100",
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
