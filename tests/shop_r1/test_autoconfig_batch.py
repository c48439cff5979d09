"""Batch arithmetic for 1-4 processes: the trainer's config and plan (SFT and GRPO) and
the doctor's plan checks, as decision tables with hand-computed values.

The invariant: one optimizer step sees global_batch_size rows (SFT) or completions
(GRPO) = micro batch x accumulation steps x processes, whatever the process count.
"""

from __future__ import annotations

import dataclasses

import pytest
from machines import machine_snapshot

from shop_r1.autoconfig import decide
from shop_r1.config import GRPORunConfig, SFTRunConfig, load_config
from shop_r1_doctor.checks.plan import grpo_batch_divisible, tiny_dataset
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.memory import KNOWN_SHAPES

SHAPE = KNOWN_SHAPES["0.5b"]


# (processes, global batch, micro batch, accumulation) -> (micro batch, accumulation)
SFT_ROWS = [
    (1, 64, 8, "auto", (8, 8)),
    (2, 64, 8, "auto", (8, 4)),
    (4, 64, 8, "auto", (8, 2)),
    (3, 48, 4, "auto", (4, 4)),
    (3, 48, 16, "auto", (16, 1)),
    (4, 64, 16, "auto", (16, 1)),
    (2, 64, 8, 4, (8, 4)),
    (1, 64, 2, 32, (2, 32)),
]


@pytest.mark.parametrize(("procs", "gbs", "mb", "ga", "want"), SFT_ROWS)
def test_sft_plan_for_1_to_4_processes(procs, gbs, mb, ga, want):
    cfg = SFTRunConfig(
        num_processes=procs,
        global_batch_size=gbs,
        micro_batch_size=mb,
        gradient_accumulation_steps=ga,
    )
    plan = decide(machine_snapshot("h200x2-fa-vllm"), cfg, SHAPE, seq_len=512)
    assert (plan.micro_batch_size, plan.gradient_accumulation_steps) == want
    assert plan.micro_batch_size * plan.gradient_accumulation_steps * procs == gbs
    row = next(d for d in plan.decisions if d.setting == "gradient_accumulation_steps")
    assert row.reason == f"global batch {gbs} = {want[0]} x {want[1]} x {procs} GPU(s)"


@pytest.mark.parametrize("procs", [1, 2, 4])
@pytest.mark.parametrize("ga", ["auto", 2, 4])
def test_sft_auto_micro_batch_keeps_the_global_batch(procs, ga):
    # micro batch chosen by memory: whatever it is, the step must still be 64 rows
    cfg = SFTRunConfig(
        num_processes=procs,
        global_batch_size=64,
        gradient_accumulation_steps=ga,
        token_budget="off",  # whole-row micro batches (bins: test_autoconfig_token_budget.py)
    )
    plan = decide(machine_snapshot("h200x2-fa-vllm"), cfg, SHAPE, seq_len=512)
    assert plan.micro_batch_size * plan.gradient_accumulation_steps * procs == 64
    if ga != "auto":
        assert plan.gradient_accumulation_steps == ga


# (config overrides, error fragment): a global batch the processes cannot share evenly
BAD_BATCH = [
    (
        {"num_processes": 3, "global_batch_size": 64},
        "global_batch_size: 64 is not a multiple of num_processes 3",
    ),
    (
        {"num_processes": 4, "micro_batch_size": 32},
        "micro_batch_size: 32 does not divide the 16 rows per process",
    ),
    (
        {"num_processes": 2, "micro_batch_size": 3},
        "micro_batch_size: 3 does not divide the 32 rows per process",
    ),
    (
        {"num_processes": 2, "gradient_accumulation_steps": 3},
        "gradient_accumulation_steps: 3 does not divide the 32 rows",
    ),
    (
        {"num_processes": 2, "micro_batch_size": 8, "gradient_accumulation_steps": 8},
        "global_batch_size: 64 != micro_batch_size 8 x gradient_accumulation_steps 8 x num_processes 2",
    ),
]


@pytest.mark.parametrize("cls", [SFTRunConfig, GRPORunConfig])
@pytest.mark.parametrize(("kw", "message"), BAD_BATCH)
def test_uneven_batches_are_config_errors(cls, kw, message):
    with pytest.raises(ToolError, match="^" + cls.__name__ + ": .*" + message.replace("(", r"\(")):
        cls(**kw)


@pytest.mark.parametrize(
    "kw",
    [
        {"num_processes": 2, "micro_batch_size": 8, "gradient_accumulation_steps": 4},
        {"num_processes": 4, "micro_batch_size": 16},
        {"num_processes": 4, "gradient_accumulation_steps": 16},
        {"num_processes": 1, "micro_batch_size": 64},
    ],
)
def test_even_batches_are_accepted(kw):
    assert SFTRunConfig(**kw).num_processes == kw["num_processes"]


# (processes, global, generations, micro batch, generation batch) ->
#   (accumulation, generation batch in the plan)
GRPO_ROWS = [
    (1, 64, 8, 8, "auto", (8, 64)),
    (2, 64, 8, 8, "auto", (4, 64)),
    (4, 64, 8, 8, "auto", (2, 64)),
    (3, 48, 4, 4, "auto", (4, 48)),
    # 40 is no multiple of micro 8 x 2 processes: next multiple of lcm(8, 16, 8) = 48
    (2, 64, 8, 8, 40, (4, 48)),
    # 3 processes x micro 2 = 6 per forward; groups of 4: lcm(12, 6, 4) = 12 -> 24 is fine
    (3, 24, 4, 2, 24, (4, 24)),
    # 36 completions on 3 processes of micro 4 with groups of 4: lcm(12, 12, 4) = 12 -> 36
    (3, 24, 4, 4, 36, (2, 36)),
]


@pytest.mark.parametrize(("procs", "gbs", "gens", "mb", "gen_batch", "want"), GRPO_ROWS)
def test_grpo_plan_for_1_to_4_processes(procs, gbs, gens, mb, gen_batch, want):
    cfg = GRPORunConfig(
        num_processes=procs,
        global_batch_size=gbs,
        num_generations=gens,
        micro_batch_size=mb,
        generation_batch_size=gen_batch,
    )
    plan = decide(machine_snapshot("cpu"), cfg, SHAPE, seq_len=256)
    assert (plan.gradient_accumulation_steps, plan.generation_batch_size) == want
    assert plan.micro_batch_size * plan.gradient_accumulation_steps * procs == gbs
    # TRL's own rules: whole groups, and whole per-process forward batches
    assert plan.generation_batch_size % gens == 0
    assert plan.generation_batch_size % (mb * procs) == 0


# ---------------------------------------------------------------- the launcher's count
def test_world_size_from_the_launcher_sets_num_processes(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    cfg, source = load_config("sft")
    assert cfg.num_processes == 2 and source["num_processes"] == "WORLD_SIZE"
    rows = dataclasses.replace(cfg, token_budget="off")
    plan = decide(machine_snapshot("h200x2-fa-vllm"), rows, SHAPE, seq_len=512)
    assert plan.micro_batch_size * plan.gradient_accumulation_steps * 2 == cfg.global_batch_size


def test_world_size_that_disagrees_with_the_config_is_an_error(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(ToolError, match=r"num_processes: 2 \(from flag\).*WORLD_SIZE=4"):
        load_config("grpo", flags={"num_processes": 2})
    cfg, _ = load_config("grpo", flags={"num_processes": 4})
    assert cfg.num_processes == 4


@pytest.mark.parametrize("value", ["", "x", "0"])
def test_no_or_odd_world_size_keeps_the_default(monkeypatch, value):
    monkeypatch.setenv("WORLD_SIZE", value)
    assert load_config("sft")[0].num_processes == 1


# ---------------------------------------------------------------- the doctor's plan checks
def _plan(**kw) -> Facts:
    return Facts({"plan": kw})


# (processes, per device, steps, generations) -> finding title or None
GRPO_CHECK_ROWS = [
    (
        1,
        8,
        1,
        3,
        "GRPO generation batch 8 (1 process(es) x per_device_train_batch_size 8 x steps_per_generation 1) is not divisible by num_generations=3",
    ),
    (
        2,
        8,
        1,
        3,
        "GRPO generation batch 16 (2 process(es) x per_device_train_batch_size 8 x steps_per_generation 1) is not divisible by num_generations=3",
    ),
    (3, 8, 1, 3, None),  # 24 completions: 8 groups of 3
    (
        4,
        8,
        1,
        3,
        "GRPO generation batch 32 (4 process(es) x per_device_train_batch_size 8 x steps_per_generation 1) is not divisible by num_generations=3",
    ),
    (1, 2, 3, 3, None),  # 6 = 2 x 3 steps
    (2, 2, 2, 8, None),  # 8 = 2 x 2 x 2: one group of 8
    (
        3,
        2,
        2,
        8,
        "GRPO generation batch 12 (3 process(es) x per_device_train_batch_size 2 x steps_per_generation 2) is not divisible by num_generations=8",
    ),
    (4, 4, 1, 1, "num_generations=1: GRPO needs at least 2 completions per prompt"),
]


@pytest.mark.parametrize(("procs", "per_device", "steps", "gens", "title"), GRPO_CHECK_ROWS)
def test_doctor_grpo_batch_check_counts_processes(procs, per_device, steps, gens, title):
    facts = _plan(
        task="grpo",
        num_processes=procs,
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=steps,
        num_generations=gens,
    )
    found = list(grpo_batch_divisible(facts))
    assert [f.title for f in found] == ([title] if title else [])
    if title and gens >= 2:
        size = procs * per_device * steps
        valid = ", ".join(str(g) for g in range(2, size + 1) if size % g == 0)
        assert found[0].fix.startswith(f"num_generations: one of {valid}")


def test_doctor_grpo_fix_names_the_steps_multiple():
    # 1 x 4 x 1 = 4 completions, groups of 6: steps_per_generation a multiple of 6/gcd(6,4) = 3
    facts = _plan(task="grpo", num_processes=1, per_device_train_batch_size=4, num_generations=6)
    (f,) = grpo_batch_divisible(facts)
    assert (
        f.fix
        == "num_generations: one of 2, 4; or keep num_generations=6 with steps_per_generation a multiple of 3"
    )
    explicit = _plan(task="grpo", generation_batch_size=10, num_generations=4)
    (g,) = grpo_batch_divisible(explicit)
    assert "generation_batch_size=10" in g.title and g.fix == "num_generations: one of 2, 5, 10"
    assert list(grpo_batch_divisible(_plan(task="sft", num_generations=3))) == []


# GRPO: rows vs prompts per generation batch = processes x per device x steps / generations
GRPO_TINY_ROWS = [
    (1, 3, None),  # 4 completions / 4 = 1 prompt
    (3, 3, None),  # 12 / 4 = 3 prompts: exactly enough
    (4, 3, "3 dataset rows < 4 prompts per GRPO generation batch (16 completions / 4)"),
    (2, 1, "1 dataset rows < 2 prompts per GRPO generation batch (8 completions / 4)"),
]


@pytest.mark.parametrize(("procs", "rows", "title"), GRPO_TINY_ROWS)
def test_doctor_grpo_tiny_dataset_counts_processes(procs, rows, title):
    facts = _plan(
        task="grpo",
        num_processes=procs,
        per_device_train_batch_size=4,
        num_generations=4,
        dataset_rows=rows,
    )
    assert [f.title for f in tiny_dataset(facts)] == ([title] if title else [])


# SFT: rows vs one effective batch = processes x per device x accumulation
SFT_TINY_ROWS = [
    (1, 20, None, None),  # 8
    (2, 20, None, None),  # 16
    (3, 20, "20 dataset rows < one effective batch of 24 (3 x 8 x 1 accumulation steps)", 6),
    (4, 20, "20 dataset rows < one effective batch of 32 (4 x 8 x 1 accumulation steps)", 5),
    (2, 16, None, None),  # exactly one batch
]


@pytest.mark.parametrize(("procs", "rows", "title", "per_proc"), SFT_TINY_ROWS)
def test_doctor_sft_tiny_dataset_counts_processes(procs, rows, title, per_proc):
    facts = _plan(task="sft", num_processes=procs, per_device_train_batch_size=8, dataset_rows=rows)
    found = list(tiny_dataset(facts))
    assert [f.title for f in found] == ([title] if title else [])
    if title:
        assert found[0].fix.endswith(f"<= {per_proc}")


def test_doctor_tiny_dataset_skips_a_grpo_batch_it_reports_elsewhere():
    # not divisible: grpo_batch_divisible reports it, tiny_dataset stays quiet
    facts = _plan(task="grpo", per_device_train_batch_size=3, num_generations=2, dataset_rows=0)
    assert list(tiny_dataset(facts)) == [] and len(list(grpo_batch_divisible(facts))) == 1
    assert list(tiny_dataset(_plan(task="sft"))) == []  # no row count: nothing to say


# (command, processes, generations) -> default global batch and where it came from
DEFAULT_BATCH_ROWS = [
    ("sft", 1, None, 64, None),
    ("sft", 2, None, 64, None),
    ("sft", 3, None, 66, "default rounded up to a multiple of 3"),
    ("sft", 4, None, 64, None),
    ("grpo", 2, None, 64, None),
    ("grpo", 3, None, 72, "default rounded up to a multiple of 24"),  # lcm(3, 8 generations)
    ("grpo", 3, 4, 72, "default rounded up to a multiple of 12"),
    ("grpo", 4, 16, 64, None),
]


@pytest.mark.parametrize(("command", "procs", "gens", "want", "origin"), DEFAULT_BATCH_ROWS)
def test_default_global_batch_splits_over_the_processes(command, procs, gens, want, origin):
    # `shop-r1 launch grpo --gpus 4` writes num_processes: 3 (one GPU serves vLLM)
    flags = {"num_processes": procs, **({"num_generations": gens} if gens else {})}
    cfg, source = load_config(command, flags=flags)
    assert cfg.global_batch_size == want and source.get("global_batch_size") == origin
    with pytest.raises(ToolError, match="not a multiple of num_processes 3"):
        load_config("sft", flags={"num_processes": 3, "global_batch_size": 64})
