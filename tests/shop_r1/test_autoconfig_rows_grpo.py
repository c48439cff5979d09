"""Decision rows for shop_r1/autoconfig.py under GRPO: vLLM or not, server or colocated,
the colocated memory share, reserved memory and the generation batch (the rules: the
docstring of tests/shop_r1/test_autoconfig_rows.py)."""

from __future__ import annotations

import math

import pytest
from autoconfig_facts import GIB, OK, SHAPE, est, fail, notes, snap

from shop_r1.autoconfig import (
    AutoPlan,
    decide,
)
from shop_r1.config import GRPORunConfig
from shop_r1_doctor.api import grpo_vllm_speedup
from shop_r1_doctor.memory import vllm_memory_fraction

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
    # 16 processes on an 8-GPU machine span two: each colocates, the launch plan's rule
    (
        "8 GPUs here, 16 processes",
        8,
        None,
        16,
        "auto",
        "colocate",
        "16 processes > 8 GPU(s) here: the run spans machines, each process colocates "
        "(a loopback server serves one machine)",
    ),
    ("server set on 1 GPU", 1, None, 1, "server", "server", "set in the config"),
    ("colocate set on 2 GPUs", 2, None, 1, "colocate", "colocate", "set in the config"),
]


RAY_WHY = "Ray places the training workers and starts no `trl vllm-serve`: each worker colocates"


@pytest.mark.parametrize(
    ("gpus", "procs", "planned"),
    [(8, 2, "server"), (2, 1, "server"), (8, 8, "colocate"), (1, 1, "colocate")],
)
def test_a_ray_worker_colocates_whatever_gpus_its_snapshot_shows(gpus, procs, planned):
    """`train --ray --snapshot`: every worker plans from the driver's snapshot of a whole
    machine; its spare GPUs would choose server mode, which nothing starts under Ray."""
    facts = snap(("9.0",) * gpus, imports=VLLM_OK)
    cfg = GRPORunConfig(num_processes=procs)
    assert decide(facts, cfg, SHAPE, seq_len=256).vllm_mode == planned  # outside Ray
    plan = decide(facts, cfg, SHAPE, seq_len=256, ray=True)
    assert notes(plan)["vllm_mode"] == ("colocate", RAY_WHY)
    assert plan.vllm_gpu_memory_utilization is not None  # sized for the colocated engine
    # set in the config, it stays: the doctor's server checks judge it
    forced = decide(
        facts, GRPORunConfig(num_processes=procs, vllm_mode="server"), SHAPE, seq_len=256, ray=True
    )
    assert forced.vllm_mode == "server"


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
    # an fp32 reference asked for under bf16 autocast: 4 bytes/param reserved
    plan = grpo(facts, reference_dtype="fp32", **fixed)
    assert plan.predicted_peak_bytes == training + int(0.25 * 80 * GIB) + 4 * SHAPE.params


FROZEN = (
    "frozen, read under bf16 autocast only: bf16 weights instead of fp32 copies cast down at "
    "every forward (half the memory)"
)
# (case, config, reference_dtype, reason or None when no row is written)
REFERENCE_ROWS = [
    ("fp32 masters under bf16 autocast", {}, "bf16", FROZEN),
    ("pure bf16 policy", {"learning_rate": 1e-4}, "bf16", "as the policy (bf16 weights)"),
    ("fp32 compute", {"dtype": "fp32"}, "fp32", "fp32 compute"),
    ("set in the config", {"reference_dtype": "fp32"}, "fp32", "set in the config"),
    ("beta 0: no reference model", {"beta": 0.0}, None, None),
]


@pytest.mark.parametrize(
    ("case", "cfg", "value", "reason"), REFERENCE_ROWS, ids=[r[0] for r in REFERENCE_ROWS]
)
def test_grpo_reference_dtype_rows(case, cfg, value, reason):
    plan = grpo(snap(), **cfg)
    assert plan.reference_dtype == value
    if reason is None:
        assert "reference_dtype" not in notes(plan)
    else:
        assert notes(plan)["reference_dtype"] == (value, reason)


def test_grpo_trim_padding_rows():
    assert notes(grpo(snap()))["trim_padding"][0] is True
    plan = grpo(snap(), trim_padding="off")
    assert (plan.trim_padding, notes(plan)["trim_padding"]) == (False, (False, "set in the config"))


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
        "dataloader_num_workers",
        "logging_nan_inf_filter",
        "use_vllm",
        "reference_dtype",
        "micro_batch_size",
        "gradient_accumulation_steps",
        "gradient_checkpointing",
        "generation_batch_size",
        "trim_padding",
    ]


def test_grpo_colocate_one_rollout_per_process():
    """4 processes, 4 completions a step: each colocated vLLM holds one sequence."""
    facts = snap(("9.0",) * 4, imports=VLLM_OK, total=16 * GIB)
    plan = grpo(facts, seq=1024, num_processes=4, global_batch_size=4, num_generations=4)
    need = vllm_memory_fraction(SHAPE, 16 * GIB, max_seq_len=1280, concurrent_seqs=1)
    assert notes(plan)["vllm_gpu_memory_utilization"] == (
        _frac(need),
        f"weights + KV cache for 1 seqs x 1280 tokens ({need:.0%} of 16 GiB), rounded up",
    )
