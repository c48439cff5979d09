"""Decision rows for the plan's memory checks (shop_r1_doctor/checks/plan_memory.py):
model size vs the GPU (MODEL_TOO_LARGE_FOR_GPU, OOM_LONG_SEQUENCE), colocated vLLM's share
(TRL_COLOCATE_MEMORY_BUDGET) and its KV cache (VLLM_KV_CACHE_NO_MEMORY); each row's codes,
severities and the figures its findings must name; the wording is in
tests/fixtures/golden/checks/plan_memory.txt.

The memory model itself (shop_r1_doctor.memory) has its own tables; here it is the
yardstick, called with the settings each plan row should map to (written out by hand),
and every threshold is tried at the estimate exactly (silent) and one byte past it.
Thresholds: a plan fits when its estimate <= the free memory (minus vLLM's share when
colocated); vLLM fits when util x GPU >= its need and <= what other processes leave;
the colocate fix rounds the share that fits down to 0.05 and is kept from 0.10 up
(helpers: tests/plan_memory_facts.py)."""

from __future__ import annotations

import dataclasses

import pytest
from check_wording import assert_row, found
from plan_memory_facts import (
    A100,
    COLOCATE_BUDGET,
    GIB,
    H100,
    KV_SHORT,
    MODEL,
    OOM,
    PARAMS,
    SHAPE,
    SHAPE_7B,
    TOO_LARGE,
    _best,
    _estimate,
    _gpu,
    _snap,
    gib,
)
from snapshots import proc

from shop_r1_doctor.checks.plan_memory import colocate_budget, kv_cache, model_fits
from shop_r1_doctor.facts import GpuProcess
from shop_r1_doctor.memory import vllm_memory_fraction

NAMED = "ecom/shop-r1-0.5b"  # not the fix's example model, so the title's name is a fact


def _too_large(best, budget: float, model: str = "a 0.5B model", where: str = H100) -> tuple:
    return (
        *TOO_LARGE,
        f"training {model} ",
        f">= {gib(best.total)}",
        f"{where} has {gib(budget)}",
        f"weights {gib(best.weights)}",
        f"grads {gib(best.grads)}",
        f"optimizer {gib(best.optimizer)}",
        f"activations {gib(best.activations)}",
        "use_peft: true",
    )


# ------------------------------------------------------------ plan fields -> estimate
# (case, plan fields, the estimate's settings they mean)
SETTINGS_ROWS: list[tuple[str, dict, dict]] = [
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


def _oom_snap(plan: dict, settings: dict) -> dict:
    """One byte short of the planned estimate."""
    return _snap(plan, [_gpu(free=_estimate(**settings).total - 1)])


def _too_large_snap(plan: dict, settings: dict) -> dict:
    """One byte short of the smallest footprint, the model named."""
    return _snap({**plan, "model": NAMED}, [_gpu(free=_best(**settings).total - 1)])


@pytest.mark.parametrize(
    ("case", "plan", "settings"), SETTINGS_ROWS, ids=[r[0] for r in SETTINGS_ROWS]
)
def test_oom_long_sequence_at_the_planned_estimate(case, plan, settings):
    planned = _estimate(**settings)
    assert planned.total > _best(**settings).total  # the row reaches the OOM branch
    # exactly the estimate free: fits
    assert_row(model_fits, _snap(plan, [_gpu(free=planned.total)]), [])
    # one byte short: OOM_LONG_SEQUENCE, its figures from the same settings
    seq, mb = settings.get("seq_len", 1024), settings.get("micro_batch", 1)
    checkpointing = settings.get("grad_checkpointing", False)
    levers = ([] if checkpointing else ["gradient_checkpointing: true"]) + [
        f"max_length below {seq}"
    ]
    if mb > 1:
        levers.append("per_device_train_batch_size: 1")
    snap = _oom_snap(plan, settings)
    want = (
        *OOM,
        f"max_length {seq} x batch {mb} ",
        f"~{gib(planned.total)}",
        f"{H100} has {gib(planned.total - 1)}",
        f"activations {gib(planned.activations)}",
        f"logits {gib(planned.logits)}",
        *levers,
    )
    assert_row(model_fits, snap, [want])
    (f,) = found(model_fits, snap)  # a lever the plan already pulled is not offered
    assert ("per_device_train_batch_size" in f.fix) == (mb > 1)
    assert ("gradient_checkpointing" in f.fix) == (not checkpointing)


@pytest.mark.parametrize(
    ("case", "plan", "settings"), SETTINGS_ROWS, ids=[r[0] for r in SETTINGS_ROWS]
)
def test_model_too_large_at_the_smallest_footprint(case, plan, settings):
    best = _best(**settings)
    # the smallest footprint fits exactly: no MODEL_TOO_LARGE (OOM_LONG_SEQUENCE instead)
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total)]), [OOM])
    assert_row(
        model_fits, _too_large_snap(plan, settings), [_too_large(best, best.total - 1, NAMED)]
    )


def test_checkpointing_and_chunked_loss_at_micro_batch_1_is_the_smallest_footprint():
    # the plan already is the smallest footprint: one byte short is MODEL_TOO_LARGE only
    plan = {"gradient_checkpointing": True, "chunked_loss": True, "max_length": 2048}
    best = _best(seq_len=2048)
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total)]), [])
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total - 1)]), [TOO_LARGE])


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
    assert_row(check, _snap({**vllm, **plan}, gpus), [])


def test_a_gpu_of_unknown_size_is_left_out_of_the_smallest():
    best = _best()
    gpus = [_gpu(total=None, index=1, name="GPU unknown"), _gpu(free=best.total - 1)]
    assert_row(model_fits, _snap({}, gpus), [(*TOO_LARGE, H100)])


# ------------------------------------------------------------ several GPUs
LEAST_FREE_A100 = [
    _gpu(free=70 * GIB),
    _gpu(free=_best().total - 1, total=40 * GIB, index=1, name=A100),
]


def test_the_gpu_with_least_free_memory_is_the_budget_and_named():
    best = _best()
    want = [_too_large(best, best.total - 1, where=A100)]
    assert_row(model_fits, _snap({}, LEAST_FREE_A100), want)
    # CUDA_VISIBLE_DEVICES=0 hides the small one
    assert_row(model_fits, _snap({}, LEAST_FREE_A100, env={"CUDA_VISIBLE_DEVICES": "0"}), [])


def test_the_budget_is_the_least_free_even_on_the_largest_gpu():
    """The 80 GB GPU is nearly full, the 40 GB one is empty: the finding names the GPU whose
    free memory is the budget (it named the smallest GPU, which has room)."""
    best = _best()
    gpus = [
        _gpu(free=best.total - 1),
        _gpu(free=40 * GIB, total=40 * GIB, index=1, name=A100),
    ]
    assert_row(model_fits, _snap({}, gpus), [_too_large(best, best.total - 1)])


FULL_H100 = _snap({}, [_gpu(free=1, name=A100), _gpu(free=0, index=1)])


def test_a_full_gpu_is_the_budget_over_one_with_a_byte_free():
    assert_row(model_fits, FULL_H100, [_too_large(_best(), 0)])


def test_used_memory_unknown_means_all_of_it_is_free():
    best = _best()
    assert_row(model_fits, _snap({}, [_gpu(total=best.total)]), [OOM])
    assert_row(model_fits, _snap({}, [_gpu(total=best.total - 1)]), [TOO_LARGE])


# ------------------------------------------------------------ model shape
def test_a_full_shape_in_the_plan_is_used_as_given():
    shape = dataclasses.asdict(SHAPE_7B)
    best = _best(shape=SHAPE_7B)
    plan = {"model_params": PARAMS, "model_shape": shape}
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total)]), [OOM])
    snap = _snap(plan, [_gpu(free=best.total - 1)])
    assert_row(model_fits, snap, [_too_large(best, best.total - 1, "a 7.6B model")])


def test_an_incomplete_shape_falls_back_to_the_nearest_known_one():
    shape = dataclasses.asdict(SHAPE_7B)
    del shape["tied_embeddings"]  # the seven documented numbers alone
    best = _best()  # 0.5B with the plan's parameter count
    plan = {"model_shape": shape}
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total)]), [OOM])
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total - 1)]), [TOO_LARGE])


def test_model_size_in_the_finding_rounds_to_a_tenth_of_a_billion():
    snap = _snap({"model_params": 1_050_000_000}, [_gpu(free=GIB)])
    assert_row(model_fits, snap, [(*TOO_LARGE, "training a 1.1B model ")])


# ------------------------------------------------------------ colocated vLLM's share
# (case, plan fields, vLLM's share of an 80 GiB GPU in bytes)
SHARE_ROWS: list[tuple[str, dict, float]] = [
    ("colocate, default utilization 0.3", {"vllm_mode": "colocate"}, 0.3 * 80 * GIB),
    (
        "colocate at 0.5",
        {"vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.5},
        40 * GIB,
    ),
]


def _share_snap(plan: dict, share: float) -> dict:
    """Colocated vLLM's share plus the smallest footprint, one byte short."""
    return _snap({"use_vllm": True, **plan}, [_gpu(free=int(share) + _best().total - 1)])


@pytest.mark.parametrize(("case", "plan", "share"), SHARE_ROWS, ids=[r[0] for r in SHARE_ROWS])
def test_colocated_vllm_share_comes_off_the_budget(case, plan, share):
    best = _best()
    plan = {"use_vllm": True, **plan}
    free = int(share) + best.total + 1  # one byte over: fits
    assert_row(model_fits, _snap(plan, [_gpu(free=free)]), [])
    free = int(share) + best.total - 1
    snap = _share_snap(plan, share)
    where = f"{H100} (after vLLM's share)"
    assert_row(model_fits, snap, [_too_large(best, free - share, where=where)])
    # colocated: the planned batch is the colocate check's business, not OOM_LONG_SEQUENCE
    batch8 = _snap({**plan, "per_device_train_batch_size": 8}, [_gpu(free=free + 2)])
    assert_row(model_fits, batch8, [])


@pytest.mark.parametrize(
    "plan",
    [
        {"use_vllm": True, "vllm_mode": "server"},
        {"use_vllm": True},
        {"use_vllm": False, "vllm_mode": "colocate"},
    ],
)
def test_vllm_elsewhere_takes_nothing_from_the_training_budget(plan):
    best = _best()
    assert_row(model_fits, _snap(plan, [_gpu(free=best.total)]), [OOM])
    snap = _snap(plan, [_gpu(free=best.total - 1)])
    assert_row(model_fits, snap, [_too_large(best, best.total - 1)])
    (f,) = found(model_fits, snap)
    assert "vLLM" not in f.title


# ------------------------------------------------------------ TRL_COLOCATE_MEMORY_BUDGET
COLOCATE = {"use_vllm": True, "vllm_mode": "colocate"}
SLEEP_FIX = "vllm_enable_sleep_mode: true"


def _budget(share: str, train: str, fix: str, gpu: str = H100) -> list[tuple]:
    return [(*COLOCATE_BUDGET, share, f"~{train}", gpu, fix)]


# (case, plan fields beyond colocate, training's predicted peak, expected rows)
COLOCATE_ROWS = [
    ("0.5 + exactly the rest", {"vllm_gpu_memory_utilization": 0.5}, 40 * GIB, []),
    (
        "0.5 + one byte more",
        {"vllm_gpu_memory_utilization": 0.5},
        40 * GIB + 1,
        _budget("0.50 x 80.0 GiB", "40.0 GiB", "vllm_gpu_memory_utilization: 0.45"),
    ),
    ("default 0.3 with room", {}, 55 * GIB, []),
    (
        "default 0.3, training 57 GiB",
        {},
        57 * GIB,
        _budget("0.30 x 80.0 GiB", "57.0 GiB", "vllm_gpu_memory_utilization: 0.25"),
    ),
    (
        "what fits is exactly 0.10",
        {"vllm_gpu_memory_utilization": 0.5},
        72 * GIB,
        _budget("0.50 x 80.0 GiB", "72.0 GiB", "vllm_gpu_memory_utilization: 0.10"),
    ),
    (
        "what fits is just under 0.10",
        {"vllm_gpu_memory_utilization": 0.5},
        72 * GIB + 1,
        _budget("0.50 x 80.0 GiB", "72.0 GiB", SLEEP_FIX),
    ),
    (
        "training alone over the GPU",
        {"vllm_gpu_memory_utilization": 0.2},
        90 * GIB,
        _budget("0.20 x 80.0 GiB", "90.0 GiB", SLEEP_FIX),
    ),
]


def _colocate_snap(plan: dict, train: int) -> dict:
    return _snap({**COLOCATE, **plan, "predicted_peak_bytes": train})


@pytest.mark.parametrize(
    ("case", "plan", "train", "want"), COLOCATE_ROWS, ids=[r[0] for r in COLOCATE_ROWS]
)
def test_colocate_budget_rows(case, plan, train, want):
    assert_row(colocate_budget, _colocate_snap(plan, train), want)


@pytest.mark.parametrize(
    "plan",
    [
        {"use_vllm": False, "vllm_mode": "colocate"},
        {"use_vllm": True, "vllm_mode": "server"},
        {"use_vllm": True},
    ],
)
def test_colocate_budget_only_for_colocated_vllm(plan):
    assert_row(colocate_budget, _snap({**plan, "predicted_peak_bytes": 79 * GIB}), [])


def test_colocate_budget_estimates_training_when_the_plan_has_no_peak():
    settings = {"max_length": 4096, "per_device_train_batch_size": 8}
    planned = _estimate(seq_len=4096, micro_batch=8)
    total = int(planned.total / 0.7) + GIB  # 0.3 of it + the estimate fits
    assert_row(colocate_budget, _snap({**COLOCATE, **settings}, [_gpu(total=total)]), [])
    total = int(planned.total / 0.7) - GIB
    snap = _snap({**COLOCATE, **settings}, [_gpu(total=total)])
    want = _budget(f"0.30 x {gib(total)}", gib(planned.total), "vllm_gpu_memory_utilization: 0.")
    assert_row(colocate_budget, snap, want)


def test_colocate_budget_uses_the_smallest_gpu():
    gpus = [_gpu(), _gpu(total=40 * GIB, index=1, name=A100), _gpu(total=None, index=2)]
    plan = {**COLOCATE, "vllm_gpu_memory_utilization": 0.5, "predicted_peak_bytes": 21 * GIB}
    snap = _snap(plan, gpus)
    want = _budget("0.50 x 40.0 GiB", "21.0 GiB", "vllm_gpu_memory_utilization: 0.45", A100)
    assert_row(colocate_budget, snap, want)


# ------------------------------------------------------------ VLLM_KV_CACHE_NO_MEMORY
def _need(total: int, seq: int = 1024, shape=SHAPE) -> float:
    """vLLM's need for one sequence of `seq` tokens, as a fraction of `total`."""
    return vllm_memory_fraction(shape, total, max_seq_len=seq, concurrent_seqs=1)


def _kv_short(
    util: float, total: int, need: float, seq: int = 1024, model: str = "the model", gpu=H100
) -> tuple:
    """The row for a share below the need (need in bytes)."""
    return (
        *KV_SHORT,
        f"fit {model} on {gpu}",
        f"{util:.2f} x {gib(total)} = {gib(util * total)}",
        f"~{gib(need)}",
        f"{seq}-token",
        f"vllm_gpu_memory_utilization: {min(0.95, need / total + 0.05):.2f}",
    )


def test_kv_cache_share_exactly_the_need_fits():
    total = 8 * GIB
    frac = _need(total)
    assert_row(kv_cache, _snap({"use_vllm": True, "vllm_gpu_memory_utilization": frac}), [])
    snap = _snap({"use_vllm": True, "vllm_gpu_memory_utilization": frac}, [_gpu(total=total)])
    assert_row(kv_cache, snap, [])
    under = frac * (1 - 1e-9)
    snap = _snap({"use_vllm": True, "vllm_gpu_memory_utilization": under}, [_gpu(total=total)])
    assert_row(kv_cache, snap, [_kv_short(under, total, frac * total)])


# (case, plan fields beyond use_vllm, GPU total, expected: None or util shown)
KV_DEFAULT_ROWS = [
    ("colocate default 0.3 on 80 GiB", {"vllm_mode": "colocate"}, 80 * GIB, None),
    ("no mode said: 0.3 on 8 GiB is short", {}, 8 * GIB, 0.3),
    ("colocate: 0.3 on 8 GiB is short", {"vllm_mode": "colocate"}, 8 * GIB, 0.3),
    ("server default 0.9 on 8 GiB", {"vllm_mode": "server"}, 8 * GIB, None),
    ("server default 0.9 on 3 GiB", {"vllm_mode": "server"}, 3 * GIB, 0.9),
]


def _kv_default_snap(plan: dict, total: int) -> dict:
    return _snap({"use_vllm": True, **plan}, [_gpu(total=total)])


@pytest.mark.parametrize(
    ("case", "plan", "total", "util"), KV_DEFAULT_ROWS, ids=[r[0] for r in KV_DEFAULT_ROWS]
)
def test_kv_cache_default_utilization_per_mode(case, plan, total, util):
    want = [] if util is None else [_kv_short(util, total, _need(total) * total)]
    assert_row(kv_cache, _kv_default_snap(plan, total), want)


def test_kv_cache_fix_is_capped_at_0_95():
    total = 3 * GIB
    assert _need(total) + 0.05 > 0.95
    snap = _snap({"use_vllm": True, "vllm_mode": "server"}, [_gpu(total=total)])
    assert_row(kv_cache, snap, [(*KV_SHORT, "vllm_gpu_memory_utilization: 0.95")])


def test_kv_cache_tensor_parallel_splits_the_need():
    total = 8 * GIB
    assert 0.3 * total < _need(total) * total  # one rank: short
    assert 0.3 * total >= _need(total) * total / 2  # two ranks: fits
    snap = _snap({"use_vllm": True, "vllm_tensor_parallel_size": 2}, [_gpu(total=total)])
    assert_row(kv_cache, snap, [])
    snap = _snap({"use_vllm": True, "vllm_tensor_parallel_size": 1}, [_gpu(total=total)])
    assert_row(kv_cache, snap, [KV_SHORT])
    # split over 2 ranks but still short: the need shown is one rank's
    util = 0.1
    snap = _snap(
        {"use_vllm": True, "vllm_tensor_parallel_size": 2, "vllm_gpu_memory_utilization": util},
        [_gpu(total=total)],
    )
    assert_row(kv_cache, snap, [_kv_short(util, total, _need(total) * total / 2)])


def test_kv_cache_sequence_length_and_model_name():
    total = 80 * GIB
    plan = {
        "use_vllm": True,
        "max_length": 32768,
        "model": MODEL,
        "vllm_gpu_memory_utilization": 0.04,
    }
    need = _need(total, seq=32768) * total
    assert 0.04 * total < need and 0.04 * total >= _need(total) * total  # 1024 would fit
    snap = _snap(plan, [_gpu(total=total)])
    assert_row(kv_cache, snap, [_kv_short(0.04, total, need, seq=32768, model=MODEL)])
    plan = {**plan, "longest_sample_tokens": 1024}
    assert_row(kv_cache, _snap(plan, [_gpu(total=total)]), [])


def test_kv_cache_uses_the_plans_full_shape():
    total = 80 * GIB
    plan = {"use_vllm": True, "model_shape": dataclasses.asdict(SHAPE_7B)}
    need = _need(total, shape=SHAPE_7B) * total
    assert need > 0.3 * total * 0.5 and 0.3 * total >= _need(total) * total
    util = need / total * 0.99
    snap = _snap({**plan, "vllm_gpu_memory_utilization": util}, [_gpu()])
    assert_row(kv_cache, snap, [_kv_short(util, total, need)])
    util = need / total
    assert_row(kv_cache, _snap({**plan, "vllm_gpu_memory_utilization": util}, [_gpu()]), [])


def _procs(*used: int | None) -> list:
    return [proc(7 + i, "python", u) for i, u in enumerate(used)]


# (case, other processes on the GPU, fires)
OTHERS_ROWS = [
    ("others leave exactly the share", _procs(30 * GIB, 10 * GIB, 0), False),
    ("others leave one byte less", _procs(30 * GIB, 10 * GIB + 1), True),
    (
        "unknown sizes and junk ignored",
        [*_procs(40 * GIB, None), "junk", {"used_bytes": "1"}],
        False,
    ),
    ("one process over", [*_procs(40 * GIB + 1, None)], True),
    ("no process list", None, False),
]


def _others_snap(procs) -> dict:
    return _snap({"use_vllm": True, "vllm_gpu_memory_utilization": 0.5}, [_gpu(processes=procs)])


@pytest.mark.parametrize(("case", "procs", "fires"), OTHERS_ROWS, ids=[r[0] for r in OTHERS_ROWS])
def test_kv_cache_other_processes(case, procs, fires):
    others = sum(
        p.used_bytes
        for p in procs or []
        if isinstance(p, GpuProcess) and isinstance(p.used_bytes, int)
    )
    want = (*KV_SHORT, H100, f"hold {gib(others)}", "40.0 GiB", "GPU_BUSY_OTHER_PROCESSES")
    assert_row(kv_cache, _others_snap(procs), [want] if fires else [])


@pytest.mark.parametrize(
    ("plan", "gpus"),
    [
        ({"use_vllm": False}, [_gpu(total=GIB)]),
        ({"use_vllm": True, "model_params": None}, [_gpu(total=GIB)]),
        ({"use_vllm": True}, []),
        ({"use_vllm": True}, [_gpu(total=None), _gpu(total=GIB, index=1)]),
    ],
)
def test_kv_cache_silent_without_vllm_params_or_gpu_size(plan, gpus):
    assert_row(kv_cache, _snap(plan, gpus), [])


def test_kv_cache_reads_the_first_gpu():
    gpus = [_gpu(total=GIB, name=A100), _gpu(index=1)]
    assert_row(
        kv_cache, _snap({"use_vllm": True}, gpus), [(*KV_SHORT, f"on {A100}", "0.30 x 1.0 GiB")]
    )


def test_kv_cache_share_exactly_the_need_but_others_hold_the_rest():
    """share == need (fits by itself) and other processes leave less: the reason is the
    other processes, not the share."""
    total = 8 * GIB
    frac = _need(total)
    gpu = _gpu(total=total, processes=_procs(total - int(frac * total) + 1))
    snap = _snap({"use_vllm": True, "vllm_gpu_memory_utilization": frac}, [gpu])
    assert_row(kv_cache, snap, [(*KV_SHORT, "hold ", "GPU_BUSY_OTHER_PROCESSES")])
    (f,) = found(kv_cache, snap)
    assert f"{frac:.2f} x" not in f.title


SNAPSHOTS = [
    *[(f"oom: {case}", _oom_snap(plan, settings)) for case, plan, settings in SETTINGS_ROWS],
    *[(f"too large: {c}", _too_large_snap(plan, settings)) for c, plan, settings in SETTINGS_ROWS],
    ("least free: the A100", _snap({}, LEAST_FREE_A100)),
    ("a full H100", FULL_H100),
    *[(f"share: {case}", _share_snap(plan, share)) for case, plan, share in SHARE_ROWS],
    *[(r[0], _colocate_snap(r[1], r[2])) for r in COLOCATE_ROWS],
    *[(r[0], _kv_default_snap(r[1], r[2])) for r in KV_DEFAULT_ROWS],
    *[(r[0], _others_snap(r[1])) for r in OTHERS_ROWS],
]
