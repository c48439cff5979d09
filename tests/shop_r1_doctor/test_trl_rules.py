"""TRL's batch rules in one module, checked against TRL's own GRPOConfig where it runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.trl_rules import (
    accumulation_steps,
    effective_batch,
    grpo_batch,
    grpo_eval_groups,
    grpo_generation_unit,
    sft_effective_batch,
    steps_multiple_for,
    vllm_fields_in_effect,
    vllm_layout,
)


def test_batches_count_processes():
    assert grpo_batch(num_processes=3, per_device=2, gradient_accumulation_steps=4).size == 24
    assert grpo_batch(num_processes=3, per_device=2, steps_per_generation=5).size == 30
    assert grpo_batch(generation_batch_size=64, num_processes=8).size == 64
    assert grpo_batch().size == 8 and grpo_batch().num_generations == 8  # TRL's defaults
    assert sft_effective_batch(4, 2, 8) == 64
    assert sft_effective_batch(None, None, None) == 8


@given(
    gens=st.integers(2, 16),
    procs=st.integers(1, 8),
    micro=st.integers(1, 16),
    mult=st.integers(1, 4),
)
def test_generation_unit_satisfies_every_rule(gens, procs, micro, mult):
    size = grpo_generation_unit(gens, procs, micro) * mult
    assert size % gens == 0  # whole groups
    assert size % (micro * procs) == 0  # TRL: a multiple of the global batch
    plan = {
        "task": "grpo",
        "num_generations": gens,
        "num_processes": procs,
        "per_device_train_batch_size": micro,
        "generation_batch_size": size,
    }
    assert "TRL_GRPO_BATCH_NOT_DIVISIBLE" not in {f.code for f in run_checks({"plan": plan})}


def test_steps_multiple_makes_whole_groups():
    for gens in range(2, 17):
        for per_step in range(1, 17):
            k = steps_multiple_for(gens, per_step)
            assert (per_step * k) % gens == 0
            assert all((per_step * j) % gens for j in range(1, k))  # the smallest


@pytest.mark.parametrize(
    ("per_device", "gas", "steps", "gen_batch"),
    [(8, 1, None, None), (2, 4, None, None), (4, None, 3, None), (4, None, None, 16)],
)
def test_matches_trl_grpo_config(tmp_path, per_device, gas, steps, gen_batch):
    trl = pytest.importorskip("trl")
    kwargs = {"per_device_train_batch_size": per_device, "num_generations": 2}
    if gas:
        kwargs["gradient_accumulation_steps"] = gas
    if steps:
        kwargs["steps_per_generation"] = steps
    if gen_batch:
        kwargs["generation_batch_size"] = gen_batch
    cfg = trl.GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, **kwargs)
    ours = grpo_batch(
        num_processes=cfg.world_size,
        per_device=per_device,
        gradient_accumulation_steps=gas,
        steps_per_generation=steps,
        generation_batch_size=gen_batch,
        num_generations=2,
    )
    assert ours.size == cfg.generation_batch_size


# (gpus, processes, nodes, ray, vllm known) -> (mode, cause, spare). One rule for the
# trainer's auto-configuration (processes given) and `launch` (None: it places them).
LAYOUT_ROWS = [
    # a GPU no trainer uses takes the server (NCCL refuses two ranks on one GPU)
    ((2, 1, 1, False, True), ("server", "spare_gpu", 1)),
    ((8, 6, 1, False, True), ("server", "spare_gpu", 2)),
    ((4, None, 1, False, True), ("server", "spare_gpu", 1)),
    # every GPU trains: colocate
    ((2, 2, 1, False, True), ("colocate", "one_gpu_per_trainer", 0)),
    ((1, None, 1, False, True), ("colocate", "one_gpu_per_trainer", 0)),
    ((0, 1, 1, False, True), ("colocate", "one_gpu_per_trainer", 0)),
    # Ray places the workers and starts no server, whatever GPUs are spare
    ((8, 2, 1, True, True), ("colocate", "ray", 0)),
    # more processes than this machine's GPUs: the run spans machines
    ((8, 16, 1, False, True), ("colocate", "nodes", 0)),
    ((8, None, 2, False, True), ("colocate", "nodes", 0)),
    ((None, None, 1, False, True), ("colocate", "count_unknown", 0)),
    ((4, None, 1, False, False), ("colocate", "vllm_unknown", 0)),
]


@pytest.mark.parametrize(("given", "want"), LAYOUT_ROWS, ids=[str(r[0]) for r in LAYOUT_ROWS])
def test_vllm_layout_edges(given, want):
    gpus, processes, nodes, ray, known = given
    got = vllm_layout(gpus=gpus, processes=processes, nodes=nodes, ray=ray, vllm_known=known)
    assert (got.mode, got.cause, got.spare) == want


def test_vllm_fields_apply_in_their_mode_only():
    both = {
        "use_vllm": True,
        "vllm_tensor_parallel_size": 2,
        "vllm_server_port": 8000,
        "num_generations": 4,
    }
    colocated = vllm_fields_in_effect({**both, "vllm_mode": "colocate"})
    assert "vllm_server_port" not in colocated and colocated["vllm_tensor_parallel_size"] == 2
    served = vllm_fields_in_effect({**both, "vllm_mode": "server"})
    assert "vllm_tensor_parallel_size" not in served and served["vllm_server_port"] == 8000
    # TRL's default mode is colocate
    assert "vllm_server_port" not in vllm_fields_in_effect(both)
    off = vllm_fields_in_effect({**both, "use_vllm": False, "vllm_mode": "server"})
    assert off == {"use_vllm": False, "num_generations": 4}


def test_batch_arithmetic_counts_every_process():
    assert effective_batch(4, 2, 8) == 64
    assert effective_batch(0, 4, 1) == 0  # a bad micro batch is not replaced by a default
    assert accumulation_steps(64, 8, 1) == 8
    assert accumulation_steps(64, 8, 4) == 2  # 16 rows per process
    assert accumulation_steps(64, 32, 4) == 1  # never below one


# (per_device, steps_per_generation, generation_batch_size, num_generations): every way a
# plan sizes the generation batch, at the edges of TRL's rules on one process
GRPO_SIZES = [
    (4, None, None, 2),
    (4, 2, None, 4),
    (4, None, 8, 4),  # a multiple of the global batch and of the group
    (4, 2, 8, 4),  # both set: refused even though the sizes agree
    (4, 1, 4, 2),
    (4, None, 6, 2),  # not a multiple of the global batch 4
    (4, None, 2, 2),  # smaller than one global batch
    (3, None, 9, 3),
    (3, None, 6, 4),  # a multiple of the global batch, not whole groups
    (2, 3, None, 4),  # 6 completions, groups of 4
    (4, None, None, 1),  # one completion per prompt
]


@pytest.mark.parametrize(("per_device", "steps", "gen_batch", "gens"), GRPO_SIZES)
def test_refuses_what_trl_grpo_config_refuses(tmp_path, per_device, steps, gen_batch, gens):
    trl = pytest.importorskip("trl")
    kwargs = {"per_device_train_batch_size": per_device, "num_generations": gens}
    if steps:
        kwargs["steps_per_generation"] = steps
    if gen_batch:
        kwargs["generation_batch_size"] = gen_batch
    try:
        cfg = trl.GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, **kwargs)
        trl_refuses = False
    except ValueError:
        trl_refuses = True
        cfg = None
    ours = grpo_batch(
        num_processes=1,
        per_device=per_device,
        steps_per_generation=steps,
        generation_batch_size=gen_batch,
        num_generations=gens,
    )
    assert (ours.refused is not None or not ours.whole_groups) == trl_refuses
    if cfg is not None:
        assert cfg.world_size == 1 and ours.size == cfg.generation_batch_size


def test_refusal_names_the_rule():
    assert grpo_batch(generation_batch_size=16, steps_per_generation=2).refused == "both_set"
    assert grpo_batch(generation_batch_size=12, per_device=8).refused == "not_global_multiple"
    # the global batch counts every process: 16 is one micro batch of 8 on 1 process, not on 4
    assert grpo_batch(generation_batch_size=16, per_device=4, num_processes=1).refused is None
    assert (
        grpo_batch(generation_batch_size=24, per_device=4, num_processes=4).refused
        == "not_global_multiple"
    )
    assert grpo_batch(steps_per_generation=2).refused is None


# (eval_strategy, per_device_eval_batch_size, num_generations, num_generations_eval)
GRPO_EVAL = [
    ("no", 3, 4, None),  # no evaluation: not checked
    ("steps", 4, 4, None),
    ("steps", 3, 4, None),  # 3 completions, groups of 4
    ("epoch", 3, 2, 3),  # the eval group size wins over num_generations
    ("steps", 8, 2, 3),
    ("steps", None, 4, None),  # TRL's default eval batch 8
    ("steps", None, 3, None),
]


@pytest.mark.parametrize(("strategy", "per_eval", "gens", "gens_eval"), GRPO_EVAL)
def test_eval_groups_refused_as_trl_refuses(tmp_path, strategy, per_eval, gens, gens_eval):
    trl = pytest.importorskip("trl")
    kwargs = {"eval_strategy": strategy, "num_generations": gens, "generation_batch_size": 24}
    if per_eval:
        kwargs["per_device_eval_batch_size"] = per_eval
    if gens_eval:
        kwargs["num_generations_eval"] = gens_eval
    try:
        trl.GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True, **kwargs)
        trl_refuses = False
    except ValueError as exc:
        assert "eval" in str(exc)
        trl_refuses = True
    ours = grpo_eval_groups(
        eval_strategy=strategy,
        num_processes=1,
        per_device_eval=per_eval,
        num_generations=gens,
        num_generations_eval=gens_eval,
    )
    assert (ours is not None) == trl_refuses


def test_eval_batch_counts_every_process():
    def groups(procs):
        return grpo_eval_groups(
            eval_strategy="steps", num_processes=procs, per_device_eval=2, num_generations=4
        )

    assert groups(2) is None and groups(1) == (2, 4)


def test_trl_refuses_auto_find_batch_size_for_grpo(tmp_path):
    """The rule the plan check reports as TRL_GRPO_BATCH_REFUSED; checked here so a TRL
    that drops it shows up."""
    trl = pytest.importorskip("trl")
    with pytest.raises(ValueError, match="auto_find_batch_size"):
        trl.GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=True,
                       auto_find_batch_size=True)  # fmt: skip
    plan = {"task": "grpo", "auto_find_batch_size": True}
    assert "TRL_GRPO_BATCH_REFUSED" in {f.code for f in run_checks({"plan": plan})}
