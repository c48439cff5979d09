"""Decision rows for the plan's memory checks (shop_r1_doctor/checks/plan_memory.py):
model size vs the GPU (MODEL_TOO_LARGE_FOR_GPU, OOM_LONG_SEQUENCE). Colocated vLLM's
share and KV cache: test_plan_memory_rows_vllm.py.

The memory model itself (shop_r1_doctor.memory) has its own tables; here it is the
yardstick, called with the settings each plan row should map to (written out by hand),
and every threshold is tried at the estimate exactly (silent) and one byte past it.
Thresholds: a plan fits when its estimate <= the free memory (minus vLLM's share when
colocated); vLLM fits when util x GPU >= its need and <= what other processes leave;
the colocate fix rounds the share that fits down to 0.05 and is kept from 0.10 up."""

from __future__ import annotations

import dataclasses

import pytest
from plan_memory_facts import (
    A100,
    GIB,
    H100,
    MODEL,
    PARAMS,
    SHAPE_7B,
    _best,
    _codes,
    _estimate,
    _found,
    _gpu,
    _snap,
    gib,
)

from shop_r1_doctor.checks.plan_memory import colocate_budget, model_fits

# ------------------------------------------------------------ plan fields -> estimate
# (case, plan fields, the estimate's settings they mean)
SETTINGS_ROWS = [
    ("nothing said: 1024 tokens, bf16, micro batch 1", {}, {}),
    ("max_length", {"max_length": 2048}, {"seq_len": 2048}),
    ("longest sample only", {"longest_sample_tokens": 700}, {"seq_len": 700}),
    (
        "longest sample shorter than max_length",
        {"max_length": 2048, "longest_sample_tokens": 700},
        {"seq_len": 700},
    ),
    (
        "max_length shorter than the longest sample",
        {"max_length": 600, "longest_sample_tokens": 700},
        {"seq_len": 600},
    ),
    ("micro batch 4", {"per_device_train_batch_size": 4}, {"micro_batch": 4}),
    ("micro batch 2", {"per_device_train_batch_size": 2}, {"micro_batch": 2}),
    ("fp16 without bf16", {"fp16": True, "bf16": False}, {"dtype": "fp16"}),
    ("fp16 false, bf16 false: fp32", {"fp16": False, "bf16": False}, {"dtype": "fp32"}),
    ("bf16 false: fp32", {"bf16": False}, {"dtype": "fp32"}),
    ("bf16 true", {"bf16": True}, {"dtype": "bf16"}),
    ("fp32 master weights", {"master_fp32": True}, {"master_fp32": True}),
    ("fp32 masters off", {"master_fp32": False}, {}),
    ("gradient checkpointing", {"gradient_checkpointing": True}, {"grad_checkpointing": True}),
    ("checkpointing off", {"gradient_checkpointing": False}, {}),
    ("chunked loss", {"chunked_loss": True}, {"chunked_loss": True}),
    ("Liger kernels", {"use_liger_kernel": True}, {"fused_kernels": True}),
    ("FSDP over 2 processes", {"fsdp": True, "num_processes": 2}, {"shards": 2}),
    ("FSDP over 4 processes", {"fsdp": True, "num_processes": 4}, {"shards": 4}),
    ("FSDP, processes unknown", {"fsdp": True}, {"shards": 1}),
    ("2 processes without FSDP", {"num_processes": 2}, {"shards": 1}),
    ("FSDP off, 2 processes", {"fsdp": False, "num_processes": 2}, {"shards": 1}),
    ("LoRA said false", {"use_peft": False}, {}),
    (
        "all at once",
        {
            "max_length": 4096,
            "longest_sample_tokens": 3000,
            "per_device_train_batch_size": 2,
            "master_fp32": True,
            "use_liger_kernel": True,
            "fsdp": True,
            "num_processes": 2,
        },
        {
            "seq_len": 3000,
            "micro_batch": 2,
            "master_fp32": True,
            "fused_kernels": True,
            "shards": 2,
        },
    ),
]


@pytest.mark.parametrize(
    ("case", "plan", "settings"), SETTINGS_ROWS, ids=[r[0] for r in SETTINGS_ROWS]
)
def test_oom_long_sequence_at_the_planned_estimate(case, plan, settings):
    planned = _estimate(**settings)
    assert planned.total > _best(**settings).total  # the row reaches the OOM branch
    # exactly the estimate free: fits
    assert _codes(model_fits, _snap(plan, [_gpu(free=planned.total)])) == []
    # one byte short: OOM_LONG_SEQUENCE, its figures from the same settings
    seq, mb = settings.get("seq_len", 1024), settings.get("micro_batch", 1)
    levers = ([] if settings.get("grad_checkpointing") else ["gradient_checkpointing: true"]) + [
        f"max_length below {seq}"
    ]
    if mb > 1:
        levers.append("per_device_train_batch_size: 1 (raise gradient_accumulation_steps)")
    assert _found(model_fits, _snap(plan, [_gpu(free=planned.total - 1)])) == [
        (
            "OOM_LONG_SEQUENCE",
            f"a 0.5B model at max_length {seq} x batch {mb} needs ~{gib(planned.total)}; "
            f"{H100} has {gib(planned.total - 1)}",
            f"activations {gib(planned.activations)}, logits {gib(planned.logits)}: "
            "'CUDA out of memory' when the longest sample arrives.",
            ", ".join(levers),
        )
    ]


@pytest.mark.parametrize(
    ("case", "plan", "settings"), SETTINGS_ROWS, ids=[r[0] for r in SETTINGS_ROWS]
)
def test_model_too_large_at_the_smallest_footprint(case, plan, settings):
    best = _best(**settings)
    # the smallest footprint fits exactly: no MODEL_TOO_LARGE (OOM_LONG_SEQUENCE instead)
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total)])) == ["OOM_LONG_SEQUENCE"]
    assert _found(model_fits, _snap({**plan, "model": MODEL}, [_gpu(free=best.total - 1)])) == [
        (
            "MODEL_TOO_LARGE_FOR_GPU",
            f"training {MODEL} needs >= {gib(best.total)} per GPU even with gradient "
            f"checkpointing and micro-batch 1; {H100} has {gib(best.total - 1)}",
            f"weights {gib(best.weights)}, grads {gib(best.grads)}, optimizer "
            f"{gib(best.optimizer)} (AdamW), activations {gib(best.activations)}.",
            "a smaller model (e.g. Qwen/Qwen2.5-0.5B-Instruct), LoRA (use_peft: true), or "
            "several GPUs with FSDP",
        )
    ]


def test_checkpointing_and_chunked_loss_at_micro_batch_1_is_the_smallest_footprint():
    # the plan already is the smallest footprint: one byte short is MODEL_TOO_LARGE only
    plan = {"gradient_checkpointing": True, "chunked_loss": True, "max_length": 2048}
    best = _best(seq_len=2048)
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total)])) == []
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total - 1)])) == [
        "MODEL_TOO_LARGE_FOR_GPU"
    ]


# ------------------------------------------------------------ what is not checked
SILENT_ROWS = [
    ("no parameter count", {"model_params": None}, [_gpu(free=GIB)]),
    ("parameter count 0", {"model_params": 0}, [_gpu(free=GIB)]),
    ("no GPUs", {}, []),
    ("GPU size unknown", {}, [_gpu(total=None)]),
    ("LoRA: the estimate is for full fine-tuning", {"use_peft": True}, [_gpu(free=GIB)]),
]


@pytest.mark.parametrize(("case", "plan", "gpus"), SILENT_ROWS, ids=[r[0] for r in SILENT_ROWS])
@pytest.mark.parametrize("check", [model_fits, colocate_budget])
def test_unknown_or_lora_plans_are_not_estimated(case, plan, gpus, check):
    vllm = {"use_vllm": True, "vllm_mode": "colocate", "predicted_peak_bytes": 100 * GIB}
    assert _codes(check, _snap({**vllm, **plan}, gpus)) == []


def test_a_gpu_of_unknown_size_is_left_out_of_the_smallest():
    best = _best()
    gpus = [_gpu(total=None, index=1, name="GPU unknown"), _gpu(free=best.total - 1)]
    assert _codes(model_fits, _snap({}, gpus)) == ["MODEL_TOO_LARGE_FOR_GPU"]


# ------------------------------------------------------------ several GPUs
def test_the_gpu_with_least_free_memory_is_the_budget_and_named():
    best = _best()
    gpus = [
        _gpu(free=70 * GIB),
        _gpu(free=best.total - 1, total=40 * GIB, index=1, name=A100),
    ]
    (row,) = _found(model_fits, _snap({}, gpus))
    assert row[0] == "MODEL_TOO_LARGE_FOR_GPU"
    assert row[1].endswith(f"; {A100} has {gib(best.total - 1)}")
    # CUDA_VISIBLE_DEVICES=0 hides the small one
    assert _codes(model_fits, _snap({}, gpus, env={"CUDA_VISIBLE_DEVICES": "0"})) == []


def test_the_budget_is_the_least_free_even_on_the_largest_gpu():
    """The 80 GB GPU is nearly full, the 40 GB one is empty: the title names the GPU whose
    free memory is the budget (it named the smallest GPU, which has room)."""
    best = _best()
    gpus = [
        _gpu(free=best.total - 1),
        _gpu(free=40 * GIB, total=40 * GIB, index=1, name=A100),
    ]
    (row,) = _found(model_fits, _snap({}, gpus))
    assert row[1].endswith(f"; {H100} has {gib(best.total - 1)}")


def test_used_memory_unknown_means_all_of_it_is_free():
    best = _best()
    assert _codes(model_fits, _snap({}, [_gpu(total=best.total)])) == ["OOM_LONG_SEQUENCE"]
    assert _codes(model_fits, _snap({}, [_gpu(total=best.total - 1)])) == [
        "MODEL_TOO_LARGE_FOR_GPU"
    ]


# ------------------------------------------------------------ model shape
def test_a_full_shape_in_the_plan_is_used_as_given():
    shape = dataclasses.asdict(SHAPE_7B)
    best = _best(shape=SHAPE_7B)
    plan = {"model_params": PARAMS, "model_shape": shape}
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total)])) == ["OOM_LONG_SEQUENCE"]
    (row,) = _found(model_fits, _snap(plan, [_gpu(free=best.total - 1)]))
    assert row[1].startswith(f"training a 7.6B model needs >= {gib(best.total)} per GPU")


def test_an_incomplete_shape_falls_back_to_the_nearest_known_one():
    shape = dataclasses.asdict(SHAPE_7B)
    del shape["tied_embeddings"]  # the seven documented numbers alone
    best = _best()  # 0.5B with the plan's parameter count
    plan = {"model_shape": shape}
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total)])) == ["OOM_LONG_SEQUENCE"]
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total - 1)])) == [
        "MODEL_TOO_LARGE_FOR_GPU"
    ]
