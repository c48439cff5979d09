"""Decision rows for the plan's memory checks with vLLM (shop_r1_doctor/checks/plan_memory.py):
colocated vLLM's share of the training budget, TRL_COLOCATE_MEMORY_BUDGET and
VLLM_KV_CACHE_NO_MEMORY. Thresholds: vLLM fits when util x GPU >= its need and <= what
other processes leave; the colocate fix rounds the share that fits down to 0.05 and is
kept from 0.10 up (helpers and the memory model as yardstick: tests/plan_memory_facts.py)."""

from __future__ import annotations

import dataclasses

import pytest
from plan_memory_facts import (
    A100,
    GIB,
    H100,
    MODEL,
    SHAPE,
    SHAPE_7B,
    _best,
    _codes,
    _estimate,
    _found,
    _gpu,
    _snap,
    gib,
)
from snapshots import proc

from shop_r1_doctor.checks.plan_memory import colocate_budget, kv_cache, model_fits
from shop_r1_doctor.facts import GpuProcess
from shop_r1_doctor.memory import vllm_memory_fraction

# ------------------------------------------------------------ colocated vLLM's share
# (case, plan fields, vLLM's share of an 80 GiB GPU in bytes)
SHARE_ROWS = [
    ("colocate, default utilization 0.3", {"vllm_mode": "colocate"}, 0.3 * 80 * GIB),
    (
        "colocate at 0.5",
        {"vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.5},
        40 * GIB,
    ),
]


@pytest.mark.parametrize(("case", "plan", "share"), SHARE_ROWS, ids=[r[0] for r in SHARE_ROWS])
def test_colocated_vllm_share_comes_off_the_budget(case, plan, share):
    best = _best()
    plan = {"use_vllm": True, **plan}
    free = int(share) + best.total + 1  # one byte over: fits
    assert _codes(model_fits, _snap(plan, [_gpu(free=free)])) == []
    free = int(share) + best.total - 1
    assert _found(model_fits, _snap(plan, [_gpu(free=free)])) == [
        (
            "MODEL_TOO_LARGE_FOR_GPU",
            f"training a 0.5B model needs >= {gib(best.total)} per GPU even with gradient "
            f"checkpointing and micro-batch 1; {H100} (after vLLM's share) has "
            f"{gib(free - share)}",
            f"weights {gib(best.weights)}, grads {gib(best.grads)}, optimizer "
            f"{gib(best.optimizer)} (AdamW), activations {gib(best.activations)}.",
            "a smaller model (e.g. Qwen/Qwen2.5-0.5B-Instruct), LoRA (use_peft: true), or "
            "several GPUs with FSDP",
        )
    ]
    # colocated: the planned batch is the colocate check's business, not OOM_LONG_SEQUENCE
    assert (
        _codes(model_fits, _snap({**plan, "per_device_train_batch_size": 8}, [_gpu(free=free + 2)]))
        == []
    )


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
    assert _codes(model_fits, _snap(plan, [_gpu(free=best.total)])) == ["OOM_LONG_SEQUENCE"]
    (row,) = _found(model_fits, _snap(plan, [_gpu(free=best.total - 1)]))
    assert row[0] == "MODEL_TOO_LARGE_FOR_GPU" and f"{H100} has " in row[1]


# ------------------------------------------------------------ TRL_COLOCATE_MEMORY_BUDGET
COLOCATE = {"use_vllm": True, "vllm_mode": "colocate"}
SLEEP_FIX = (
    "vllm_enable_sleep_mode: true, a smaller per_device_train_batch_size, or "
    "gradient_checkpointing: true"
)
DETAIL = (
    "vLLM reserves its share at start; the optimizer state arrives after step 1: "
    "OOM at vLLM init or at step 2-3."
)
# (case, plan fields beyond colocate, training's predicted peak, expected (title, fix) or None)
COLOCATE_ROWS = [
    ("0.5 + exactly the rest", {"vllm_gpu_memory_utilization": 0.5}, 40 * GIB, None),
    (
        "0.5 + one byte more",
        {"vllm_gpu_memory_utilization": 0.5},
        40 * GIB + 1,
        (
            f"vLLM takes 0.50 x 80.0 GiB and training needs ~40.0 GiB on one {H100}",
            "vllm_gpu_memory_utilization: 0.45",
        ),
    ),
    (
        "default 0.3 with room",
        {},
        55 * GIB,
        None,
    ),
    (
        "default 0.3, training 57 GiB",
        {},
        57 * GIB,
        (
            f"vLLM takes 0.30 x 80.0 GiB and training needs ~57.0 GiB on one {H100}",
            "vllm_gpu_memory_utilization: 0.25",
        ),
    ),
    (
        "what fits is exactly 0.10",
        {"vllm_gpu_memory_utilization": 0.5},
        72 * GIB,
        (
            f"vLLM takes 0.50 x 80.0 GiB and training needs ~72.0 GiB on one {H100}",
            "vllm_gpu_memory_utilization: 0.10",
        ),
    ),
    (
        "what fits is just under 0.10",
        {"vllm_gpu_memory_utilization": 0.5},
        72 * GIB + 1,
        (f"vLLM takes 0.50 x 80.0 GiB and training needs ~72.0 GiB on one {H100}", SLEEP_FIX),
    ),
    (
        "training alone over the GPU",
        {"vllm_gpu_memory_utilization": 0.2},
        90 * GIB,
        (f"vLLM takes 0.20 x 80.0 GiB and training needs ~90.0 GiB on one {H100}", SLEEP_FIX),
    ),
]


@pytest.mark.parametrize(
    ("case", "plan", "train", "want"), COLOCATE_ROWS, ids=[r[0] for r in COLOCATE_ROWS]
)
def test_colocate_budget_rows(case, plan, train, want):
    snap = _snap({**COLOCATE, **plan, "predicted_peak_bytes": train})
    expected = [] if want is None else [("TRL_COLOCATE_MEMORY_BUDGET", want[0], DETAIL, want[1])]
    assert _found(colocate_budget, snap) == expected


@pytest.mark.parametrize(
    "plan",
    [
        {"use_vllm": False, "vllm_mode": "colocate"},
        {"use_vllm": True, "vllm_mode": "server"},
        {"use_vllm": True},
    ],
)
def test_colocate_budget_only_for_colocated_vllm(plan):
    assert _codes(colocate_budget, _snap({**plan, "predicted_peak_bytes": 79 * GIB})) == []


def test_colocate_budget_estimates_training_when_the_plan_has_no_peak():
    settings = {"max_length": 4096, "per_device_train_batch_size": 8}
    planned = _estimate(seq_len=4096, micro_batch=8)
    total = int(planned.total / 0.7) + GIB  # 0.3 of it + the estimate fits
    snap = _snap({**COLOCATE, **settings}, [_gpu(total=total)])
    assert _codes(colocate_budget, snap) == []
    total = int(planned.total / 0.7) - GIB
    (row,) = _found(colocate_budget, _snap({**COLOCATE, **settings}, [_gpu(total=total)]))
    assert row[1] == (
        f"vLLM takes 0.30 x {gib(total)} and training needs ~{gib(planned.total)} on one {H100}"
    )


def test_colocate_budget_uses_the_smallest_gpu():
    gpus = [_gpu(), _gpu(total=40 * GIB, index=1, name=A100), _gpu(total=None, index=2)]
    snap = _snap(
        {**COLOCATE, "vllm_gpu_memory_utilization": 0.5, "predicted_peak_bytes": 21 * GIB}, gpus
    )
    (row,) = _found(colocate_budget, snap)
    assert row[1] == f"vLLM takes 0.50 x 40.0 GiB and training needs ~21.0 GiB on one {A100}"
    assert row[3] == "vllm_gpu_memory_utilization: 0.45"


# ------------------------------------------------------------ VLLM_KV_CACHE_NO_MEMORY
KV_DETAIL = "'No available memory for the cache blocks. Try increasing gpu_memory_utilization'."


def _need(total: int, seq: int = 1024, shape=SHAPE) -> float:
    """vLLM's need for one sequence of `seq` tokens, as a fraction of `total`."""
    return vllm_memory_fraction(shape, total, max_seq_len=seq, concurrent_seqs=1)


def _kv_short(util: float, total: int, need: float, seq: int = 1024, model: str = "the model"):
    """The row for a share below the need (need in bytes)."""
    return (
        "VLLM_KV_CACHE_NO_MEMORY",
        f"vLLM cannot fit {model} on {H100}: {util:.2f} x {gib(total)} = {gib(util * total)} "
        f"< ~{gib(need)} for weights, one {seq}-token sequence and overhead",
        KV_DETAIL,
        f"vllm_gpu_memory_utilization: {min(0.95, need / total + 0.05):.2f}",
    )


def test_kv_cache_share_exactly_the_need_fits():
    total = 8 * GIB
    frac = _need(total)
    assert _found(kv_cache, _snap({"use_vllm": True, "vllm_gpu_memory_utilization": frac})) == []
    snap = _snap({"use_vllm": True, "vllm_gpu_memory_utilization": frac}, [_gpu(total=total)])
    assert _found(kv_cache, snap) == []
    under = frac * (1 - 1e-9)
    snap = _snap({"use_vllm": True, "vllm_gpu_memory_utilization": under}, [_gpu(total=total)])
    assert _found(kv_cache, snap) == [_kv_short(under, total, frac * total)]


# (case, plan fields beyond use_vllm, GPU total, expected: None or util shown)
KV_DEFAULT_ROWS = [
    ("colocate default 0.3 on 80 GiB", {"vllm_mode": "colocate"}, 80 * GIB, None),
    ("no mode said: 0.3 on 8 GiB is short", {}, 8 * GIB, 0.3),
    ("colocate: 0.3 on 8 GiB is short", {"vllm_mode": "colocate"}, 8 * GIB, 0.3),
    ("server default 0.9 on 8 GiB", {"vllm_mode": "server"}, 8 * GIB, None),
    ("server default 0.9 on 3 GiB", {"vllm_mode": "server"}, 3 * GIB, 0.9),
]


@pytest.mark.parametrize(
    ("case", "plan", "total", "util"), KV_DEFAULT_ROWS, ids=[r[0] for r in KV_DEFAULT_ROWS]
)
def test_kv_cache_default_utilization_per_mode(case, plan, total, util):
    found = _found(kv_cache, _snap({"use_vllm": True, **plan}, [_gpu(total=total)]))
    assert found == ([] if util is None else [_kv_short(util, total, _need(total) * total)])


def test_kv_cache_fix_is_capped_at_0_95():
    total = 3 * GIB
    assert _need(total) + 0.05 > 0.95
    snap = _snap({"use_vllm": True, "vllm_mode": "server"}, [_gpu(total=total)])
    assert _found(kv_cache, snap)[0][3] == "vllm_gpu_memory_utilization: 0.95"


def test_kv_cache_tensor_parallel_splits_the_need():
    total = 8 * GIB
    assert 0.3 * total < _need(total) * total  # one rank: short
    assert 0.3 * total >= _need(total) * total / 2  # two ranks: fits
    snap = _snap({"use_vllm": True, "vllm_tensor_parallel_size": 2}, [_gpu(total=total)])
    assert _found(kv_cache, snap) == []
    snap = _snap({"use_vllm": True, "vllm_tensor_parallel_size": 1}, [_gpu(total=total)])
    assert _codes(kv_cache, snap) == ["VLLM_KV_CACHE_NO_MEMORY"]
    # split over 2 ranks but still short: the need shown is one rank's
    util = 0.1
    snap = _snap(
        {"use_vllm": True, "vllm_tensor_parallel_size": 2, "vllm_gpu_memory_utilization": util},
        [_gpu(total=total)],
    )
    assert _found(kv_cache, snap) == [_kv_short(util, total, _need(total) * total / 2)]


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
    found = _found(kv_cache, _snap(plan, [_gpu(total=total)]))
    assert found == [_kv_short(0.04, total, need, seq=32768, model=MODEL)]
    plan = {**plan, "longest_sample_tokens": 1024}
    assert _found(kv_cache, _snap(plan, [_gpu(total=total)])) == []


def test_kv_cache_uses_the_plans_full_shape():
    total = 80 * GIB
    plan = {"use_vllm": True, "model_shape": dataclasses.asdict(SHAPE_7B)}
    need = _need(total, shape=SHAPE_7B) * total
    assert need > 0.3 * total * 0.5 and 0.3 * total >= _need(total) * total
    util = need / total * 0.99
    found = _found(kv_cache, _snap({**plan, "vllm_gpu_memory_utilization": util}, [_gpu()]))
    assert found == [_kv_short(util, total, need)]
    util = need / total
    assert _found(kv_cache, _snap({**plan, "vllm_gpu_memory_utilization": util}, [_gpu()])) == []


def _procs(*used: int) -> list:
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


@pytest.mark.parametrize(("case", "procs", "fires"), OTHERS_ROWS, ids=[r[0] for r in OTHERS_ROWS])
def test_kv_cache_other_processes(case, procs, fires):
    plan = {"use_vllm": True, "vllm_gpu_memory_utilization": 0.5}
    found = _found(kv_cache, _snap(plan, [_gpu(processes=procs)]))
    others = sum(
        p.used_bytes
        for p in procs or []
        if isinstance(p, GpuProcess) and isinstance(p.used_bytes, int)
    )
    want = [
        (
            "VLLM_KV_CACHE_NO_MEMORY",
            f"vLLM cannot fit the model on {H100}: other processes already hold "
            f"{gib(others)}, leaving less than 40.0 GiB",
            KV_DETAIL,
            "free the GPU (see GPU_BUSY_OTHER_PROCESSES) or lower vllm_gpu_memory_utilization",
        )
    ]
    assert found == (want if fires else [])


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
    assert _found(kv_cache, _snap(plan, gpus)) == []


def test_kv_cache_reads_the_first_gpu():
    gpus = [_gpu(total=GIB, name=A100), _gpu(index=1)]
    (row,) = _found(kv_cache, _snap({"use_vllm": True}, gpus))
    assert row[1].startswith(f"vLLM cannot fit the model on {A100}: 0.30 x 1.0 GiB")


def test_kv_cache_share_exactly_the_need_but_others_hold_the_rest():
    """share == need (fits by itself) and other processes leave less: the reason is the
    other processes, not the share."""
    total = 8 * GIB
    frac = _need(total)
    gpu = _gpu(total=total, processes=_procs(total - int(frac * total) + 1))
    snap = _snap({"use_vllm": True, "vllm_gpu_memory_utilization": frac}, [gpu])
    ((code, title, _, fix),) = _found(kv_cache, snap)
    assert code == "VLLM_KV_CACHE_NO_MEMORY"
    assert "other processes already hold" in title
    assert fix.startswith("free the GPU")


def test_a_full_gpu_is_the_budget_over_one_with_a_byte_free():
    best = _best()
    gpus = [_gpu(free=1, name=A100), _gpu(free=0, index=1)]
    (row,) = _found(model_fits, _snap({}, gpus))
    assert row[0] == "MODEL_TOO_LARGE_FOR_GPU"
    assert row[1] == (
        f"training a 0.5B model needs >= {gib(best.total)} per GPU even with gradient "
        f"checkpointing and micro-batch 1; {H100} has 0.0 GiB"
    )


def test_model_size_in_the_title_rounds_to_a_tenth_of_a_billion():
    plan = {"model_params": 1_050_000_000}
    (row,) = _found(model_fits, _snap(plan, [_gpu(free=GIB)]))
    assert row[1].startswith("training a 1.1B model needs >= ")
