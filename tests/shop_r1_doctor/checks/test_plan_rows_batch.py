"""Decision rows for the plan checks' batch arithmetic (shop_r1_doctor/checks/plan.py):
GRPO batch divisibility for 1-4 processes, zero steps on a tiny dataset, rows longer than
max_length.

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
from check_wording import facts_in, found

from shop_r1_doctor.checks.plan import (
    grpo_batch_divisible,
    grpo_batch_refused,
    rows_truncated,
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


# ----------------------------------------------------------------- sizes GRPOConfig refuses
# (case, plan, None or the facts the finding names: the sizes and the values that work).
# Working values: generation_batch_size a multiple of lcm(per-device x processes,
# num_generations), the one below and the one above; or a smaller per-device batch d
# with d x processes dividing the size.
REFUSED_ROWS = [
    (
        "both set, sizes agree: TRL refuses the pair anyway",
        _grpo(generation_batch_size=16, steps_per_generation=2, per_device_train_batch_size=8),
        ["generation_batch_size 16", "steps_per_generation 2", "steps_per_generation: 2 alone",
         "generation_batch_size: 16 alone (steps_per_generation 2)"],
    ),
    (
        "both set, 2 processes x 4 x 3 steps = 24; 20 is no multiple of 8",
        _grpo(generation_batch_size=20, steps_per_generation=3, num_processes=2,
              per_device_train_batch_size=4, num_generations=4),
        ["a generation batch of 24 = 8 x 3"],
    ),
    ("steps_per_generation alone", _grpo(steps_per_generation=3, num_generations=4,
                                         per_device_train_batch_size=4), None),
    (
        "12 on 1 process x 8, groups of 4",
        _grpo(generation_batch_size=12, per_device_train_batch_size=8, num_generations=4),
        ["generation_batch_size 12", "global batch 8", "generation_batch_size: 8 or 16",
         "per_device_train_batch_size: 6 or 4 or 3"],
    ),
    (
        "24 on 4 processes x 4: the global batch is 16, not 4",
        _grpo(generation_batch_size=24, per_device_train_batch_size=4, num_processes=4,
              num_generations=4),
        ["global batch 16", "4 process(es)", "generation_batch_size: 16 or 32",
         "per_device_train_batch_size: 3 or 2 or 1"],
    ),
    (
        "24 on 4 processes x 2: a multiple of 8",
        _grpo(generation_batch_size=24, per_device_train_batch_size=2, num_processes=4,
              num_generations=4),
        None,
    ),
    (
        "4 below one global batch of 8 (TRL's default per-device batch), groups of 2",
        _grpo(generation_batch_size=4, num_generations=2),
        ["generation_batch_size: 8 (", "per_device_train_batch_size: 4 or 2 or 1"],
    ),
    (
        "groups of 3 and a global batch of 4: the values are multiples of 12",
        _grpo(generation_batch_size=18, per_device_train_batch_size=4, num_generations=3),
        ["generation_batch_size: 12 or 24", "per_device_train_batch_size: 3 or 2 or 1"],
    ),
    ("SFT: no generation batch", {"task": "sft", "generation_batch_size": 12}, None),
    # evaluation: the global eval batch holds whole groups of num_generations_eval
    ("eval off: eval batch 3, groups of 4", _grpo(eval_strategy="no",
     per_device_eval_batch_size=3, num_generations=4), None),
    (
        "eval every N steps: 1 x 3 completions, groups of 4",
        _grpo(eval_strategy="steps", per_device_eval_batch_size=3, num_generations=4),
        ["global eval batch 3", "4 generations per eval prompt",
         "per_device_eval_batch_size: 4 or 8", 'eval_strategy: "no"'],
    ),
    (
        "2 processes x 3 = 6, groups of 4: multiples of 2 per device",
        _grpo(eval_strategy="epoch", per_device_eval_batch_size=3, num_processes=2,
              num_generations=4),
        ["global eval batch 6", "2 process(es)", "per_device_eval_batch_size: 2 or 4",
         "num_generations_eval: 2 or 3"],
    ),
    ("2 processes x 2 = 4, groups of 4", _grpo(eval_strategy="steps",
     per_device_eval_batch_size=2, num_processes=2, num_generations=4), None),
    (
        "num_generations_eval 3 instead of 4: TRL's default eval batch 8",
        _grpo(eval_strategy="steps", num_generations=4, num_generations_eval=3),
        ["global eval batch 8", "3 generations per eval prompt",
         "per_device_eval_batch_size: 3 or 6", "num_generations_eval: 2"],
    ),
    ("num_generations_eval 2 divides 8", _grpo(eval_strategy="steps", num_generations=3,
     num_generations_eval=2), None),
    ("SFT evaluates in batches of any size", {"task": "sft", "eval_strategy": "steps",
     "per_device_eval_batch_size": 3}, None),
    (
        "auto_find_batch_size with GRPO",
        _grpo(auto_find_batch_size=True),
        ["auto_find_batch_size: false"],
    ),
    ("auto_find_batch_size with SFT", {"task": "sft", "auto_find_batch_size": True}, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("plan", "names"), [r[1:] for r in REFUSED_ROWS], ids=[r[0] for r in REFUSED_ROWS]
)
def test_grpo_batch_refused_rows(plan, names) -> None:
    got = found(grpo_batch_refused, {"plan": plan})
    if names is None:
        assert got == []
        return
    (f,) = got
    assert (f.code, f.severity) == ("TRL_GRPO_BATCH_REFUSED", "error")
    assert facts_in(f, *names) == []


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
