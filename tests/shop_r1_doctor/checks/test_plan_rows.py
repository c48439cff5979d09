"""Decision rows for the plan checks (shop_r1_doctor/checks/plan.py): bf16, Liger, the
self-certainty term, GRPO/SFT batch arithmetic for 1-4 processes, truncation, vLLM server
mode, dataset paths and env references (the disk rows are in test_plan_rows_disk.py).

Hand-worked batch rules (trl_rules.py mirrors TRL 1.16's GRPOConfig):
- GRPO generation batch = processes x per-device x steps_per_generation (steps defaults to
  gradient_accumulation_steps, then 1; per-device to 8; processes to 1), unless
  generation_batch_size is given; it must hold whole groups of num_generations (>= 2;
  default 8). The fix lists every g >= 2 dividing the batch and, for an implicit batch,
  the multiple steps_per_generation needs: g / gcd(g, processes x per-device).
- GRPO trains zero steps when dataset_rows < batch / num_generations prompts;
  SFT when rows < processes x per-device x accumulation (fix: per-device x accumulation
  <= rows // processes, at least 1).
"""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.plan import (
    bf16_pre_ampere,
    dataset_path,
    env_references,
    grpo_batch_divisible,
    liger_requested,
    rows_truncated,
    self_certainty_group_scaled,
    server_ports_clash,
    server_same_gpu,
    server_unreachable,
    tiny_dataset,
)
from shop_r1_doctor.facts import Facts

A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
H200 = {"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}
T4 = {"index": 0, "name": "Tesla T4", "compute_capability": "7.5"}
V100 = {"index": 0, "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}


def _found(check, snap: dict) -> list[tuple[str, str, str, str, str | None]]:
    return [(f.code, f.severity, f.title, f.detail, f.fix) for f in check(Facts(snap))]


# ----------------------------------------------------------------- bf16 before Ampere
BF16_DETAIL = "'Bfloat16 is only supported on GPUs with compute capability of at least 8.0.'"
BF16_FIX = "bf16: false, fp16: true in the config (vLLM: --dtype half)"

# (case, bf16, gpus, expected title or None)
BF16_ROWS = [
    ("a T4", True, [T4], "bf16 requested but Tesla T4 is cc 7.5 (bf16 needs 8.0)"),
    ("an A100: exactly 8.0", True, [A100], None),
    (
        "two V100s",
        True,
        [V100, {**V100, "index": 1}],
        "bf16 requested but 2x Tesla V100-SXM2-32GB is cc 7.0 (bf16 needs 8.0)",
    ),
    (
        "an H100 and a T4: the T4",
        True,
        [H100, T4],
        "bf16 requested but Tesla T4 is cc 7.5 (bf16 needs 8.0)",
    ),
    ("a GPU whose capability is unknown", True, [{"index": 0, "name": "NVIDIA Mystery"}], None),
    ("a T4, bf16 off", False, [T4], None),
    ("a T4, bf16 not said", None, [T4], None),
]


@pytest.mark.parametrize(
    ("bf16", "gpus", "title"), [r[1:] for r in BF16_ROWS], ids=[r[0] for r in BF16_ROWS]
)
def test_bf16_rows(bf16, gpus, title) -> None:
    rows = _found(bf16_pre_ampere, {"gpus": gpus, "plan": {"bf16": bf16}})
    assert rows == ([("BF16_PRE_AMPERE", "error", title, BF16_DETAIL, BF16_FIX)] if title else [])


# ----------------------------------------------------------------- Liger requested
LIGER_FIX = "pip install liger-kernel (Linux + CUDA: it needs Triton), or liger_kernel: off"
LIGER_MISSING = (
    "transformers raises 'You need to install liger-kernel version ... to use this option' "
    "when the Trainer starts."
)
ABSENT = object()

# (case, use_liger_kernel, liger-kernel record (ABSENT: not looked), import ok, error, expected (title, detail))
LIGER_ROWS = [
    (
        "requested, not installed",
        True,
        None,
        None,
        "",
        ("use_liger_kernel requested but liger-kernel is not installed", LIGER_MISSING),
    ),
    (
        "requested, installed, does not import",
        True,
        {"version": "0.6.2"},
        False,
        "ImportError: cannot import name 'triton'",
        (
            "use_liger_kernel requested but liger_kernel does not import (liger-kernel 0.6.2)",
            "ImportError: cannot import name 'triton'",
        ),
    ),
    (
        "requested, not looked for, does not import",
        True,
        ABSENT,
        False,
        "ModuleNotFoundError: No module named 'liger_kernel'",
        (
            "use_liger_kernel requested but liger_kernel does not import",
            "ModuleNotFoundError: No module named 'liger_kernel'",
        ),
    ),
    ("requested, installed, imports", True, {"version": "0.6.2"}, True, "", None),
    ("requested, installed, import unknown", True, {"version": "0.6.2"}, None, "", None),
    ("not requested, not installed", False, None, None, "", None),
    ("not said, not installed", None, None, None, "", None),
]


@pytest.mark.parametrize(
    ("use", "record", "ok", "error", "expected"),
    [r[1:] for r in LIGER_ROWS],
    ids=[r[0] for r in LIGER_ROWS],
)
def test_liger_rows(use, record, ok, error, expected) -> None:
    snap: dict = {"plan": {"use_liger_kernel": use}, "packages": {}}
    if record is not ABSENT:
        snap["packages"]["liger-kernel"] = record
    if ok is not None:
        snap["imports"] = {"liger_kernel.transformers": {"ok": ok, "error": error}}
    rows = _found(liger_requested, snap)
    if expected is None:
        assert rows == []
    else:
        title, detail = expected
        assert rows == [("LIGER_REQUESTED_NOT_INSTALLED", "error", title, detail, LIGER_FIX)]


# ----------------------------------------------------------------- self-certainty under group scaling
SC_DETAIL = (
    "On an H100 (28M model, synthetic sessions) 38-65% of groups tied without it; with it "
    "GRPO sharpened the rationale and held-out exact match fell 3 points (16.1% -> 13.2%); "
    "without it the same SFT model rose to 19.7%."
)
SC_FIX = (
    "self_certainty_weight: 0 (the trainer's default), or keep it and watch held-out exact "
    "match, not the training reward"
)

# (case, plan, expected weight text or None)
SC_ROWS = [
    ("grpo, 0.1, TRL's default scaling", {"task": "grpo", "self_certainty_weight": 0.1}, "0.1"),
    (
        "grpo, 0.05, scale_rewards=group",
        {"task": "grpo", "self_certainty_weight": 0.05, "scale_rewards": "group"},
        "0.05",
    ),
    ("grpo, weight 1 (an integer)", {"task": "grpo", "self_certainty_weight": 1}, "1"),
    (
        "grpo, scale_rewards=batch",
        {"task": "grpo", "self_certainty_weight": 0.1, "scale_rewards": "batch"},
        None,
    ),
    (
        "grpo, scale_rewards=none",
        {"task": "grpo", "self_certainty_weight": 0.1, "scale_rewards": "none"},
        None,
    ),
    ("grpo, weight 0", {"task": "grpo", "self_certainty_weight": 0}, None),
    ("grpo, no weight", {"task": "grpo"}, None),
    ("sft with a weight", {"task": "sft", "self_certainty_weight": 0.1}, None),
]


@pytest.mark.parametrize(("plan", "weight"), [r[1:] for r in SC_ROWS], ids=[r[0] for r in SC_ROWS])
def test_self_certainty_rows(plan, weight) -> None:
    rows = _found(self_certainty_group_scaled, {"plan": plan})
    title = (
        f"self_certainty_weight {weight} with scale_rewards=group: the confidence term alone "
        "sets the advantage in groups whose task rewards tie"
    )
    expected = ("GRPO_SELF_CERTAINTY_GROUP_SCALED", "warning", title, SC_DETAIL, SC_FIX)
    assert rows == ([expected] if weight else [])


# ----------------------------------------------------------------- GRPO batch divisibility, 1-4 processes
DIV_DETAIL = (
    "'The global train batch size must be evenly divisible by the number of generations per "
    "prompt': each prompt's group of completions must be complete."
)


def _how(procs: int, per: int, steps: int) -> str:
    return f"{procs} process(es) x per_device_train_batch_size {per} x steps_per_generation {steps}"


def _grpo(**plan) -> dict:
    return {"task": "grpo", **plan}


# (case, plan, expected (title, fix) or None)
DIVISIBLE_ROWS = [
    ("TRL's defaults: 1 x 8 x 1 = 8, groups of 8", _grpo(), None),
    (
        "1 process x 4: 4 completions, groups of 8",
        _grpo(num_processes=1, per_device_train_batch_size=4),
        (
            f"GRPO generation batch 4 ({_how(1, 4, 1)}) is not divisible by num_generations=8",
            "num_generations: one of 2, 4; or keep num_generations=8 with steps_per_generation "
            "a multiple of 2",
        ),
    ),
    (
        "1 process x 3, groups of 4: steps must be a multiple of 4",
        _grpo(per_device_train_batch_size=3, num_generations=4),
        (
            f"GRPO generation batch 3 ({_how(1, 3, 1)}) is not divisible by num_generations=4",
            "num_generations: one of 3; or keep num_generations=4 with steps_per_generation "
            "a multiple of 4",
        ),
    ),
    (
        "the same on 2 processes: 6 completions, a multiple of 2",
        _grpo(num_processes=2, per_device_train_batch_size=3, num_generations=4),
        (
            f"GRPO generation batch 6 ({_how(2, 3, 1)}) is not divisible by num_generations=4",
            "num_generations: one of 2, 3, 6; or keep num_generations=4 with steps_per_generation "
            "a multiple of 2",
        ),
    ),
    (
        "2 processes x 2 x 2 steps = 8, groups of 8",
        _grpo(num_processes=2, per_device_train_batch_size=2, steps_per_generation=2),
        None,
    ),
    (
        "1 process x 2 x 2 steps = 4, groups of 8 (the 1-process mirror of the row above)",
        _grpo(num_processes=1, per_device_train_batch_size=2, steps_per_generation=2),
        (
            f"GRPO generation batch 4 ({_how(1, 2, 2)}) is not divisible by num_generations=8",
            "num_generations: one of 2, 4; or keep num_generations=8 with steps_per_generation "
            "a multiple of 4",
        ),
    ),
    (
        "3 processes x 2 x 2 steps = 12, groups of 8",
        _grpo(num_processes=3, per_device_train_batch_size=2, steps_per_generation=2),
        (
            f"GRPO generation batch 12 ({_how(3, 2, 2)}) is not divisible by num_generations=8",
            "num_generations: one of 2, 3, 4, 6, 12; or keep num_generations=8 with "
            "steps_per_generation a multiple of 4",
        ),
    ),
    (
        "3 processes x 2 x 4 steps = 24, groups of 8",
        _grpo(num_processes=3, per_device_train_batch_size=2, steps_per_generation=4),
        None,
    ),
    (
        "4 processes x 2 x accumulation 3 = 24, groups of 16",
        _grpo(
            num_processes=4,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=3,
            num_generations=16,
        ),
        (
            f"GRPO generation batch 24 ({_how(4, 2, 3)}) is not divisible by num_generations=16",
            "num_generations: one of 2, 3, 4, 6, 8, 12, 24; or keep num_generations=16 with "
            "steps_per_generation a multiple of 2",
        ),
    ),
    (
        "4 processes x 2 x 1 = 8, groups of 8",
        _grpo(num_processes=4, per_device_train_batch_size=2),
        None,
    ),
    (
        "steps_per_generation wins over accumulation: 2 x 2 x 1 = 4",
        _grpo(
            num_processes=2,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=4,
            steps_per_generation=1,
        ),
        (
            f"GRPO generation batch 4 ({_how(2, 2, 1)}) is not divisible by num_generations=8",
            "num_generations: one of 2, 4; or keep num_generations=8 with steps_per_generation "
            "a multiple of 2",
        ),
    ),
    (
        "generation_batch_size 12, groups of 8: no steps advice",
        _grpo(num_processes=2, generation_batch_size=12),
        (
            "GRPO generation batch 12 (generation_batch_size=12) is not divisible by "
            "num_generations=8",
            "num_generations: one of 2, 3, 4, 6, 12",
        ),
    ),
    ("generation_batch_size 64, groups of 8", _grpo(generation_batch_size=64), None),
    (
        "a batch of 1, groups of 2: no num_generations fits, only the steps advice",
        _grpo(per_device_train_batch_size=1, num_generations=2),
        (
            f"GRPO generation batch 1 ({_how(1, 1, 1)}) is not divisible by num_generations=2",
            "or keep num_generations=2 with steps_per_generation a multiple of 2",
        ),
    ),
    (
        "one completion per prompt",
        _grpo(num_generations=1),
        (
            "num_generations=1: GRPO needs at least 2 completions per prompt",
            "num_generations: one of 2, 4, 8",
        ),
    ),
    (
        "one completion per prompt, a batch of 1",
        _grpo(num_generations=1, per_device_train_batch_size=1),
        (
            "num_generations=1: GRPO needs at least 2 completions per prompt",
            "num_generations: 2 or more, and a generation batch that it divides",
        ),
    ),
    ("SFT: no generation batch", {"task": "sft", "per_device_train_batch_size": 3}, None),
    ("no task", {"per_device_train_batch_size": 3}, None),
]


@pytest.mark.parametrize(
    ("plan", "expected"), [r[1:] for r in DIVISIBLE_ROWS], ids=[r[0] for r in DIVISIBLE_ROWS]
)
def test_grpo_batch_divisible_rows(plan, expected) -> None:
    rows = _found(grpo_batch_divisible, {"plan": plan})
    if expected is None:
        assert rows == []
    else:
        title, fix = expected
        assert rows == [("TRL_GRPO_BATCH_NOT_DIVISIBLE", "error", title, DIV_DETAIL, fix)]


# ----------------------------------------------------------------- zero steps on a tiny dataset
GRPO_TINY = (
    "The sampler drops incomplete batches: 'There seems to be not a single sample in your "
    "epoch_iterator, stopping training at step 0!', then an untrained model is saved."
)
SFT_TINY = "The trainer may run zero optimizer steps and save an untrained model."

# (case, plan, expected (title, detail, fix) or None)
TINY_ROWS = [
    ("no row count", _grpo(num_processes=2), None),
    (
        "GRPO 2 x 4 x 2 = 16 completions / 4: 3 rows < 4 prompts",
        _grpo(
            dataset_rows=3,
            num_processes=2,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=2,
            num_generations=4,
        ),
        (
            "3 dataset rows < 4 prompts per GRPO generation batch (16 completions / 4)",
            GRPO_TINY,
            "use >= 4 rows, or a generation batch of at most 12 completions "
            "(per_device_train_batch_size x steps_per_generation <= 6 on 2 process(es))",
        ),
    ),
    (
        "the same with 4 rows: exactly one batch",
        _grpo(
            dataset_rows=4,
            num_processes=2,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=2,
            num_generations=4,
        ),
        None,
    ),
    (
        "GRPO, TRL's defaults (8 completions / 8 = 1 prompt): 0 rows",
        _grpo(dataset_rows=0),
        (
            "0 dataset rows < 1 prompts per GRPO generation batch (8 completions / 8)",
            GRPO_TINY,
            "use >= 1 rows, or a generation batch of at most 0 completions "
            "(per_device_train_batch_size x steps_per_generation <= 0 on 1 process(es))",
        ),
    ),
    (
        "GRPO 3 x 8 x 1 = 24 completions / 2: 11 rows < 12 prompts",
        _grpo(dataset_rows=11, num_processes=3, num_generations=2),
        (
            "11 dataset rows < 12 prompts per GRPO generation batch (24 completions / 2)",
            GRPO_TINY,
            "use >= 12 rows, or a generation batch of at most 22 completions "
            "(per_device_train_batch_size x steps_per_generation <= 7 on 3 process(es))",
        ),
    ),
    (
        "GRPO 4 x 8 x 1 = 32 / 8: 3 rows",
        _grpo(dataset_rows=3, num_processes=4),
        (
            "3 dataset rows < 4 prompts per GRPO generation batch (32 completions / 8)",
            GRPO_TINY,
            "use >= 4 rows, or a generation batch of at most 24 completions "
            "(per_device_train_batch_size x steps_per_generation <= 6 on 4 process(es))",
        ),
    ),
    (
        "the trainer's explicit generation batch (docs/trainer.md): 10 rows, 64 / 2",
        _grpo(dataset_rows=10, generation_batch_size=64, num_generations=2, num_processes=1),
        (
            "10 dataset rows < 32 prompts per GRPO generation batch (64 completions / 2)",
            GRPO_TINY,
            "use >= 32 rows, or generation_batch_size: 20 or less",
        ),
    ),
    (
        "GRPO batch not whole groups: left to the divisibility row",
        _grpo(dataset_rows=1, per_device_train_batch_size=3),
        None,
    ),
    (
        "SFT defaults 1 x 8 x 1: 7 rows",
        {"task": "sft", "dataset_rows": 7},
        (
            "7 dataset rows < one effective batch of 8 (1 x 8 x 1 accumulation steps)",
            SFT_TINY,
            "more rows, or per_device_train_batch_size x gradient_accumulation_steps <= 7",
        ),
    ),
    ("SFT defaults: 8 rows", {"task": "sft", "dataset_rows": 8}, None),
    (
        "SFT 2 x 4 x 2 = 16: 15 rows",
        {
            "task": "sft",
            "dataset_rows": 15,
            "num_processes": 2,
            "per_device_train_batch_size": 4,
            "gradient_accumulation_steps": 2,
        },
        (
            "15 dataset rows < one effective batch of 16 (2 x 4 x 2 accumulation steps)",
            SFT_TINY,
            "more rows, or per_device_train_batch_size x gradient_accumulation_steps <= 7",
        ),
    ),
    (
        "SFT 3 x 2 x 4 = 24: 23 rows",
        {
            "task": "sft",
            "dataset_rows": 23,
            "num_processes": 3,
            "per_device_train_batch_size": 2,
            "gradient_accumulation_steps": 4,
        },
        (
            "23 dataset rows < one effective batch of 24 (3 x 2 x 4 accumulation steps)",
            SFT_TINY,
            "more rows, or per_device_train_batch_size x gradient_accumulation_steps <= 7",
        ),
    ),
    (
        "SFT 3 x 2 x 4 = 24: 24 rows",
        {
            "task": "sft",
            "dataset_rows": 24,
            "num_processes": 3,
            "per_device_train_batch_size": 2,
            "gradient_accumulation_steps": 4,
        },
        None,
    ),
    (
        "SFT 4 x 1 x 1 = 4: 2 rows, at least 1 per device",
        {"task": "sft", "dataset_rows": 2, "num_processes": 4, "per_device_train_batch_size": 1},
        (
            "2 dataset rows < one effective batch of 4 (4 x 1 x 1 accumulation steps)",
            SFT_TINY,
            "more rows, or per_device_train_batch_size x gradient_accumulation_steps <= 1",
        ),
    ),
]


@pytest.mark.parametrize(
    ("plan", "expected"), [r[1:] for r in TINY_ROWS], ids=[r[0] for r in TINY_ROWS]
)
def test_tiny_dataset_rows(plan, expected) -> None:
    rows = _found(tiny_dataset, {"plan": plan})
    assert rows == ([("TRAINER_ZERO_STEPS_TINY_DATASET", "error", *expected)] if expected else [])


# ----------------------------------------------------------------- rows longer than max_length
# (case, plan, fires)
TRUNC_ROWS = [
    ("sft, 1025 > 1024", {"task": "sft", "max_length": 1024, "longest_sample_tokens": 1025}, True),
    ("sft, 1024 = 1024", {"task": "sft", "max_length": 1024, "longest_sample_tokens": 1024}, False),
    (
        "grpo, 1025 > 1024",
        {"task": "grpo", "max_length": 1024, "longest_sample_tokens": 1025},
        False,
    ),
    ("sft, no max_length", {"task": "sft", "longest_sample_tokens": 1025}, False),
    ("sft, max_length 0", {"task": "sft", "max_length": 0, "longest_sample_tokens": 1025}, False),
    ("sft, longest unknown", {"task": "sft", "max_length": 1024}, False),
]


@pytest.mark.parametrize(
    ("plan", "fires"), [r[1:] for r in TRUNC_ROWS], ids=[r[0] for r in TRUNC_ROWS]
)
def test_rows_truncated_rows(plan, fires) -> None:
    expected = (
        "TRAINER_ROWS_TRUNCATED",
        "warning",
        f"the longest sample is 1025 tokens > max_length {plan.get('max_length')}",
        "Completions past max_length are cut; fully cut rows are dropped by TRL.",
        "raise max_length or set max_prompt_tokens",
    )
    assert _found(rows_truncated, {"plan": plan}) == ([expected] if fires else [])


# ----------------------------------------------------------------- vLLM server mode on the training GPUs
SAME_DETAIL = (
    "Weight sync builds an NCCL group across server and trainer: 'Duplicate GPU detected : rank 1 "
    "and rank 0 both on CUDA device' -> NCCL error: invalid usage."
)
SAME_FIX = (
    'vllm_mode: "colocate" (one GPU), or CUDA_VISIBLE_DEVICES=0 trl vllm-serve ... and '
    "CUDA_VISIBLE_DEVICES=1 for the trainer"
)
SERVER = {"use_vllm": True, "vllm_mode": "server"}
H200S = [H200, {**H200, "index": 1}]

# (case, plan, gpus (ABSENT: no gpus section), env, expected title or None)
SAME_GPU_ROWS = [
    (
        "one H100, one process by default",
        SERVER,
        [H100],
        {},
        "`trl vllm-serve` and 1 training process(es) would share NVIDIA H100 80GB HBM3 (1 GPU visible)",
    ),
    ("two H200s, one process", {**SERVER, "num_processes": 1}, H200S, {}, None),
    (
        "two H200s, two processes",
        {**SERVER, "num_processes": 2},
        H200S,
        {},
        "`trl vllm-serve` and 2 training process(es) would share 2x NVIDIA H200 (2 GPU visible)",
    ),
    # the hidden GPU 0 is the server's: how the 2-GPU launch script runs its trainer (the
    # 2x H200 run, tests/shop_r1_doctor/checks/test_plan_rows_server.py)
    (
        "two H200s, CUDA_VISIBLE_DEVICES=1 hides GPU 0 for the server",
        {**SERVER, "num_processes": 1},
        H200S,
        {"CUDA_VISIBLE_DEVICES": "1"},
        None,
    ),
    ("no GPU visible", SERVER, H200S, {"CUDA_VISIBLE_DEVICES": ""}, None),
    ("GPUs not probed", SERVER, ABSENT, {}, None),
    ("colocate mode", {**SERVER, "vllm_mode": "colocate"}, [H100], {}, None),
    ("no vLLM", {**SERVER, "use_vllm": False}, [H100], {}, None),
]


@pytest.mark.parametrize(
    ("plan", "gpus", "env", "title"),
    [r[1:] for r in SAME_GPU_ROWS],
    ids=[r[0] for r in SAME_GPU_ROWS],
)
def test_server_same_gpu_rows(plan, gpus, env, title) -> None:
    snap: dict = {"plan": plan, "env": env}
    if gpus is not ABSENT:
        snap["gpus"] = gpus
    rows = _found(server_same_gpu, snap)
    expected = ("TRL_SERVER_MODE_SAME_GPU", "error", title, SAME_DETAIL, SAME_FIX)
    assert rows == ([expected] if title else [])


# ----------------------------------------------------------------- vLLM server unreachable
BIND_DETAIL = (
    "'Server is not up yet. Retrying...' forever; the weight-sync TCP store on 0.0.0.0 times out."
)
BIND_FIX = 'vllm_server_host: "127.0.0.1" (or the server machine\'s address)'
PROXY_FIX = "export NO_PROXY=localhost,127.0.0.1 no_proxy=localhost,127.0.0.1"
PROXY_HEAD = (
    "HTTP(S)_PROXY is set without NO_PROXY for localhost: requests to the vLLM server go to "
)


def _bind(target: str) -> tuple:
    return (
        "error",
        f"the trainer would connect to {target}, a bind address, not a server address",
        BIND_DETAIL,
        BIND_FIX,
    )


def _proxy(host: str | None) -> tuple:
    if host is None:
        return ("warning", PROXY_HEAD + "the proxy", "", PROXY_FIX)
    return (
        "error",
        PROXY_HEAD + f"the proxy at {host}, which cannot reach this machine's 127.0.0.1",
        "",
        PROXY_FIX,
    )


CORP = "http://proxy.corp.example:3128"

# (case, plan extra, env, expected [(severity, title, detail, fix)])
UNREACHABLE_ROWS = [
    ("localhost, no proxy", {"vllm_server_host": "127.0.0.1"}, {}, []),
    ("host 0.0.0.0", {"vllm_server_host": "0.0.0.0"}, {}, [_bind("0.0.0.0")]),
    ("host ::", {"vllm_server_host": "::"}, {}, [_bind("::")]),
    (
        "base URL on 0.0.0.0",
        {"vllm_server_base_url": "http://0.0.0.0:8000"},
        {},
        [_bind("http://0.0.0.0:8000")],
    ),
    (
        "base URL on [::]",
        {"vllm_server_base_url": "http://[::]:8000"},
        {},
        [_bind("http://[::]:8000")],
    ),
    ("a remote proxy, host not said", {}, {"HTTP_PROXY": CORP}, [_proxy("proxy.corp.example")]),
    (
        "a remote proxy without a scheme, lower-case https_proxy",
        {"vllm_server_host": "localhost"},
        {"https_proxy": "proxy.corp.example:3128"},
        [_proxy("proxy.corp.example")],
    ),
    (
        "a proxy without a host name: remote",
        {},
        {"HTTP_PROXY": "http://:3128"},
        [
            (
                "error",
                PROXY_HEAD + "the proxy, which cannot reach this machine's 127.0.0.1",
                "",
                PROXY_FIX,
            )
        ],
    ),
    (
        "a proxy URL with a password: only its host is named",
        {},
        {"HTTP_PROXY": "http://me:s3cret@proxy.corp.example:3128"},
        [_proxy("proxy.corp.example")],
    ),
    (
        "a local proxy (a desktop VPN client)",
        {"vllm_server_host": "127.0.0.1"},
        {"HTTPS_PROXY": "http://127.0.0.1:7890"},
        [_proxy(None)],
    ),
    (
        "the first proxy variable set wins",
        {"vllm_server_host": "::1"},
        {"HTTP_PROXY": "", "http_proxy": "http://localhost:7890", "HTTPS_PROXY": CORP},
        [_proxy(None)],
    ),
    ("a proxy with NO_PROXY=localhost", {}, {"HTTP_PROXY": CORP, "NO_PROXY": "localhost"}, []),
    (
        "a proxy with NO_PROXY naming every loopback name",
        {},
        {"HTTP_PROXY": CORP, "NO_PROXY": "localhost,127.0.0.1,::1"},
        [],
    ),
    (
        "a proxy with no_proxy naming 127.0.0.1",
        {},
        {"http_proxy": CORP, "no_proxy": "10.0.0.0/8,127.0.0.1"},
        [],
    ),
    ("a proxy, a remote server", {"vllm_server_host": "10.0.0.5"}, {"HTTP_PROXY": CORP}, []),
    (
        "a proxy, a remote host but a localhost URL",
        {"vllm_server_host": "10.0.0.5", "vllm_server_base_url": "http://localhost:8000"},
        {"HTTP_PROXY": CORP},
        [_proxy("proxy.corp.example")],
    ),
    (
        "a bind address and a proxy: both",
        {"vllm_server_host": "0.0.0.0"},
        {"HTTP_PROXY": CORP},
        [_bind("0.0.0.0"), _proxy("proxy.corp.example")],
    ),
    ("colocate mode, 0.0.0.0", {"vllm_mode": "colocate", "vllm_server_host": "0.0.0.0"}, {}, []),
    ("no vLLM, 0.0.0.0", {"use_vllm": False, "vllm_server_host": "0.0.0.0"}, {}, []),
]


@pytest.mark.parametrize(
    ("extra", "env", "expected"),
    [r[1:] for r in UNREACHABLE_ROWS],
    ids=[r[0] for r in UNREACHABLE_ROWS],
)
def test_server_unreachable_rows(extra, env, expected) -> None:
    rows = _found(server_unreachable, {"plan": {**SERVER, **extra}, "env": env})
    assert rows == [("TRL_VLLM_SERVER_UNREACHABLE", *e) for e in expected]


# ----------------------------------------------------------------- the weight-sync port
GROUP_DETAIL = (
    "`trl vllm-serve` listens on vllm_server_port; the NCCL weight-sync store then fails with "
    "EADDRINUSE or hangs at the first sync."
)

# (case, plan extra, expected (port, fix port) or None)
PORT_ROWS = [
    ("both 8000", {"vllm_server_port": 8000, "vllm_group_port": 8000}, (8000, 51216)),
    ("both 51216", {"vllm_server_port": 51216, "vllm_group_port": 51216}, (51216, 51217)),
    ("8000 and 51216 (TRL's defaults)", {"vllm_server_port": 8000, "vllm_group_port": 51216}, None),
    ("ports not said", {}, None),
    ("only the group port", {"vllm_group_port": 8000}, None),
    (
        "colocate mode",
        {"vllm_mode": "colocate", "vllm_server_port": 8000, "vllm_group_port": 8000},
        None,
    ),
    ("no vLLM", {"use_vllm": False, "vllm_server_port": 8000, "vllm_group_port": 8000}, None),
]


@pytest.mark.parametrize(
    ("extra", "expected"), [r[1:] for r in PORT_ROWS], ids=[r[0] for r in PORT_ROWS]
)
def test_server_ports_rows(extra, expected) -> None:
    rows = _found(server_ports_clash, {"plan": {**SERVER, **extra}})
    if expected is None:
        assert rows == []
    else:
        port, other = expected
        assert rows == [
            (
                "TRL_VLLM_GROUP_PORT_IN_USE",
                "error",
                f"vllm_group_port {port} is the server's HTTP port: the weight-sync group cannot bind it",
                GROUP_DETAIL,
                f"vllm_group_port: {other} (any other free port)",
            )
        ]


# ----------------------------------------------------------------- a dataset repository root
ROOT_DETAIL = "load_dataset('parquet', data_files=...) needs files: a repo root fails to resolve."

# (case, dataset, expected (title path, fix) or None)
DATASET_ROWS = [
    (
        "a repository root",
        "hf://datasets/ecom/sessions",
        "dataset: hf://datasets/ecom/sessions/data/<file>.parquet "
        "(or load_dataset('ecom/sessions'))",
    ),
    (
        "a root with a slash",
        "hf://datasets/ecom/sessions/",
        "dataset: hf://datasets/ecom/sessions/data/<file>.parquet "
        "(or load_dataset('ecom/sessions'))",
    ),
    (
        "a root at a revision",
        "hf://datasets/ecom/sessions@v1",
        "dataset: hf://datasets/ecom/sessions@v1/data/<file>.parquet "
        "(or load_dataset('ecom/sessions@v1'))",
    ),
    ("a parquet file", "hf://datasets/ecom/sessions/data/train-00000.parquet", None),
    ("a local file", "data/sessions.jsonl", None),
    ("a model repository", "hf://ecom/sessions", None),
    ("not said", None, None),
]


@pytest.mark.parametrize(
    ("path", "fix"), [r[1:] for r in DATASET_ROWS], ids=[r[0] for r in DATASET_ROWS]
)
def test_dataset_path_rows(path, fix) -> None:
    rows = _found(dataset_path, {"plan": {"dataset": path}})
    title = f"dataset={path} is a dataset repository root, not data files"
    assert rows == ([("DATASET_PATH_NOT_FILES", "error", title, ROOT_DETAIL, fix)] if fix else [])


# ----------------------------------------------------------------- ${VAR} in the config
ENV_DETAIL = "An empty value becomes None and fails config validation with a TypeError."

# (case, env_refs, env section (ABSENT: not collected), expected [(name, state)])
ENV_ROWS = [
    ("set", ["WANDB_PROJECT"], {"WANDB_PROJECT": "shop"}, []),
    ("unset", ["WANDB_PROJECT"], {"HF_HOME": "/data/hf"}, [("WANDB_PROJECT", "unset")]),
    ("empty", ["WANDB_PROJECT"], {"WANDB_PROJECT": ""}, [("WANDB_PROJECT", "empty")]),
    (
        "a value that is not text",
        ["WANDB_PROJECT"],
        {"WANDB_PROJECT": 5},
        [("WANDB_PROJECT", "unset")],
    ),
    (
        "two, in the config's order",
        ["RUN_NAME", "DATA_DIR"],
        {"DATA_DIR": ""},
        [("RUN_NAME", "unset"), ("DATA_DIR", "empty")],
    ),
    ("env not collected", ["WANDB_PROJECT"], ABSENT, []),
    ("a pasted dump that does not list it", ["WANDB_PROJECT"], "dump", []),
    ("a name that is not text, then an unset one", [7, "DATA_DIR"], {}, [("DATA_DIR", "unset")]),
    (
        "a pasted dump that lists it empty",
        ["WANDB_PROJECT"],
        "dump-empty",
        [("WANDB_PROJECT", "empty")],
    ),
    ("no references", None, {}, []),
]


@pytest.mark.parametrize(
    ("refs", "env", "expected"), [r[1:] for r in ENV_ROWS], ids=[r[0] for r in ENV_ROWS]
)
def test_env_reference_rows(refs, env, expected) -> None:
    snap: dict = {"plan": {"env_refs": refs}}
    if env == "dump":
        snap.update(source={"kind": "dump"}, env={"VLLM_USE_V1": "1"})
    elif env == "dump-empty":
        snap.update(source={"kind": "dump"}, env={"WANDB_PROJECT": ""})
    elif env is not ABSENT:
        snap["env"] = env
    rows = _found(env_references, snap)
    assert rows == [
        (
            "CFG_ENV_INTERPOLATION",
            "error",
            f"the config reads ${{{name}}}, which is {state}",
            ENV_DETAIL,
            f"export {name}=<value> (or give the config a default: ${{oc.env:{name},<default>}})",
        )
        for name, state in expected
    ]
