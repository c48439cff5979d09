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
from check_wording import assert_row, found

from shop_r1_doctor.checks.plan import (
    grpo_batch_divisible,
    grpo_batch_refused,
    rows_truncated,
    tiny_dataset,
)


# ----------------------------------------------------------------- GRPO batch divisibility, 1-4 processes
def _grpo(**plan) -> dict:
    return {"task": "grpo", **plan}


def _div(batch: int, g: int, how: tuple, fit: str | None, multiple: int | None) -> list[tuple]:
    """The batch, how it is made (processes, per-device, steps: or generation_batch_size=),
    num_generations, the group sizes that divide it and the steps multiple that fits g."""
    fix = ((f"one of {fit}",) if fit else ()) + ((f"multiple of {multiple}",) if multiple else ())
    return [
        (
            "TRL_GRPO_BATCH_NOT_DIVISIBLE",
            "error",
            f"batch {batch} ",
            *how,
            f"num_generations={g}",
            *fix,
        )
    ]


def _how(procs: int, per: int, steps: int) -> tuple:
    return (
        f"{procs} process(es)",
        f"per_device_train_batch_size {per}",
        f"steps_per_generation {steps}",
    )


ONE_OF_1 = (
    "TRL_GRPO_BATCH_NOT_DIVISIBLE",
    "error",
    "num_generations=1",
    "at least 2",
)

# (case, plan, expected rows)
DIVISIBLE_ROWS = [
    ("TRL's defaults: 1 x 8 x 1 = 8, groups of 8", _grpo(), []),
    (
        "1 process x 4: 4 completions, groups of 8",
        _grpo(num_processes=1, per_device_train_batch_size=4),
        _div(4, 8, _how(1, 4, 1), "2, 4", 2),
    ),
    (
        "1 process x 3, groups of 4: steps must be a multiple of 4",
        _grpo(per_device_train_batch_size=3, num_generations=4),
        _div(3, 4, _how(1, 3, 1), "3", 4),
    ),
    (
        "the same on 2 processes: 6 completions, a multiple of 2",
        _grpo(num_processes=2, per_device_train_batch_size=3, num_generations=4),
        _div(6, 4, _how(2, 3, 1), "2, 3, 6", 2),
    ),
    (
        "2 processes x 2 x 2 steps = 8, groups of 8",
        _grpo(num_processes=2, per_device_train_batch_size=2, steps_per_generation=2),
        [],
    ),
    (
        "1 process x 2 x 2 steps = 4, groups of 8 (the 1-process mirror of the row above)",
        _grpo(num_processes=1, per_device_train_batch_size=2, steps_per_generation=2),
        _div(4, 8, _how(1, 2, 2), "2, 4", 4),
    ),
    (
        "3 processes x 2 x 2 steps = 12, groups of 8",
        _grpo(num_processes=3, per_device_train_batch_size=2, steps_per_generation=2),
        _div(12, 8, _how(3, 2, 2), "2, 3, 4, 6, 12", 4),
    ),
    (
        "3 processes x 2 x 4 steps = 24, groups of 8",
        _grpo(num_processes=3, per_device_train_batch_size=2, steps_per_generation=4),
        [],
    ),
    (
        "4 processes x 2 x accumulation 3 = 24, groups of 16",
        _grpo(
            num_processes=4,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=3,
            num_generations=16,
        ),
        _div(24, 16, _how(4, 2, 3), "2, 3, 4, 6, 8, 12, 24", 2),
    ),
    ("4 processes x 2 x 1 = 8, groups of 8", _grpo(num_processes=4, per_device_train_batch_size=2), []),
    (
        "steps_per_generation wins over accumulation: 2 x 2 x 1 = 4",
        _grpo(
            num_processes=2,
            per_device_train_batch_size=2,
            gradient_accumulation_steps=4,
            steps_per_generation=1,
        ),
        _div(4, 8, _how(2, 2, 1), "2, 4", 2),
    ),
    (
        "generation_batch_size 12, groups of 8: no steps advice",
        _grpo(num_processes=2, generation_batch_size=12),
        _div(12, 8, ("generation_batch_size=12",), "2, 3, 4, 6, 12", None),
    ),
    ("generation_batch_size 64, groups of 8", _grpo(generation_batch_size=64), []),
    (
        "a batch of 1, groups of 2: no num_generations fits, only the steps advice",
        _grpo(per_device_train_batch_size=1, num_generations=2),
        _div(1, 2, _how(1, 1, 1), None, 2),
    ),
    (
        "one completion per prompt",
        _grpo(num_generations=1),
        [(*ONE_OF_1, "num_generations: one of 2, 4, 8")],
    ),
    (
        "one completion per prompt, a batch of 1",
        _grpo(num_generations=1, per_device_train_batch_size=1),
        [(*ONE_OF_1, "num_generations: 2 or more")],
    ),
    ("SFT: no generation batch", {"task": "sft", "per_device_train_batch_size": 3}, []),
    ("no task", {"per_device_train_batch_size": 3}, []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "plan", "want"), DIVISIBLE_ROWS, ids=[r[0] for r in DIVISIBLE_ROWS]
)
def test_grpo_batch_divisible_rows(case, plan, want) -> None:
    assert_row(grpo_batch_divisible, {"plan": plan}, want)


def test_a_generation_batch_size_gets_no_steps_advice() -> None:
    (f,) = found(grpo_batch_divisible, {"plan": _grpo(num_processes=2, generation_batch_size=12)})
    assert "steps_per_generation" not in f.fix


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


@pytest.mark.parametrize(("case", "plan", "names"), REFUSED_ROWS, ids=[r[0] for r in REFUSED_ROWS])
def test_grpo_batch_refused_rows(case, plan, names) -> None:
    want = [] if names is None else [("TRL_GRPO_BATCH_REFUSED", "error", *names)]
    assert_row(grpo_batch_refused, {"plan": plan}, want)


# ----------------------------------------------------------------- zero steps on a tiny dataset
def _grpo_tiny(rows: int, prompts: int, batch: int, g: int, *fix: str) -> list[tuple]:
    return [
        (
            "TRAINER_ZERO_STEPS_TINY_DATASET",
            "error",
            f"{rows} dataset rows",
            f"{prompts} prompts",
            f"({batch} completions / {g})",
            f">= {prompts} rows",
            *fix,
        )
    ]


def _steps_fix(most: int, per: int, procs: int) -> tuple:
    """At most `most` completions: per-device x steps <= `per` on `procs` processes."""
    return (f"at most {most} completions", f"<= {per} on {procs} process(es)")


def _sft_tiny(rows: int, batch: int, how: str, most: int) -> list[tuple]:
    return [
        (
            "TRAINER_ZERO_STEPS_TINY_DATASET",
            "error",
            f"{rows} dataset rows",
            f"batch of {batch} ({how} accumulation",
            f"gradient_accumulation_steps <= {most}",
        )
    ]


TINY_GRPO = {"num_processes": 2, "per_device_train_batch_size": 4, "num_generations": 4}
# (case, plan, expected rows)
TINY_ROWS = [
    ("no row count", _grpo(num_processes=2), []),
    (
        "GRPO 2 x 4 x 2 = 16 completions / 4: 3 rows < 4 prompts",
        _grpo(dataset_rows=3, gradient_accumulation_steps=2, **TINY_GRPO),
        _grpo_tiny(3, 4, 16, 4, *_steps_fix(12, 6, 2)),
    ),
    (
        "the same with 4 rows: exactly one batch",
        _grpo(dataset_rows=4, gradient_accumulation_steps=2, **TINY_GRPO),
        [],
    ),
    (
        "GRPO, TRL's defaults (8 completions / 8 = 1 prompt): 0 rows",
        _grpo(dataset_rows=0),
        _grpo_tiny(0, 1, 8, 8, *_steps_fix(0, 0, 1)),
    ),
    (
        "GRPO 3 x 8 x 1 = 24 completions / 2: 11 rows < 12 prompts",
        _grpo(dataset_rows=11, num_processes=3, num_generations=2),
        _grpo_tiny(11, 12, 24, 2, *_steps_fix(22, 7, 3)),
    ),
    (
        "GRPO 4 x 8 x 1 = 32 / 8: 3 rows",
        _grpo(dataset_rows=3, num_processes=4),
        _grpo_tiny(3, 4, 32, 8, *_steps_fix(24, 6, 4)),
    ),
    (
        "the trainer's explicit generation batch (docs/trainer.md): 10 rows, 64 / 2",
        _grpo(dataset_rows=10, generation_batch_size=64, num_generations=2, num_processes=1),
        _grpo_tiny(10, 32, 64, 2, "generation_batch_size: 20 or less"),
    ),
    (
        "GRPO batch not whole groups: left to the divisibility row",
        _grpo(dataset_rows=1, per_device_train_batch_size=3),
        [],
    ),
    (
        "SFT defaults 1 x 8 x 1: 7 rows",
        {"task": "sft", "dataset_rows": 7},
        _sft_tiny(7, 8, "1 x 8 x 1", 7),
    ),
    ("SFT defaults: 8 rows", {"task": "sft", "dataset_rows": 8}, []),
    (
        "SFT 2 x 4 x 2 = 16: 15 rows",
        {
            "task": "sft",
            "dataset_rows": 15,
            "num_processes": 2,
            "per_device_train_batch_size": 4,
            "gradient_accumulation_steps": 2,
        },
        _sft_tiny(15, 16, "2 x 4 x 2", 7),
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
        _sft_tiny(23, 24, "3 x 2 x 4", 7),
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
        [],
    ),
    (
        "SFT 4 x 1 x 1 = 4: 2 rows, at least 1 per device",
        {"task": "sft", "dataset_rows": 2, "num_processes": 4, "per_device_train_batch_size": 1},
        _sft_tiny(2, 4, "4 x 1 x 1", 1),
    ),
]


@pytest.mark.parametrize(("case", "plan", "want"), TINY_ROWS, ids=[r[0] for r in TINY_ROWS])
def test_tiny_dataset_rows(case, plan, want) -> None:
    assert_row(tiny_dataset, {"plan": plan}, want)


# ----------------------------------------------------------------- rows longer than max_length
TRUNCATED = [
    ("TRAINER_ROWS_TRUNCATED", "warning", "1025 tokens", "max_length 1024", "max_prompt_tokens")
]
# (case, plan, expected rows)
TRUNC_ROWS = [
    ("sft, 1025 > 1024", {"task": "sft", "max_length": 1024, "longest_sample_tokens": 1025}, TRUNCATED),
    ("sft, 1024 = 1024", {"task": "sft", "max_length": 1024, "longest_sample_tokens": 1024}, []),
    ("grpo, 1025 > 1024", {"task": "grpo", "max_length": 1024, "longest_sample_tokens": 1025}, []),
    ("sft, no max_length", {"task": "sft", "longest_sample_tokens": 1025}, []),
    ("sft, max_length 0", {"task": "sft", "max_length": 0, "longest_sample_tokens": 1025}, []),
    ("sft, longest unknown", {"task": "sft", "max_length": 1024}, []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "plan", "want"), TRUNC_ROWS, ids=[r[0] for r in TRUNC_ROWS])
def test_rows_truncated_rows(case, plan, want) -> None:
    assert_row(rows_truncated, {"plan": plan}, want)


SNAPSHOTS = [(r[0], {"plan": r[1]}) for r in DIVISIBLE_ROWS + REFUSED_ROWS + TINY_ROWS + TRUNC_ROWS]
