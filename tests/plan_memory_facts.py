"""Snapshots and yardsticks shared by the decision rows of checks/plan_memory.py
(tests/shop_r1_doctor/checks/test_plan_memory_rows.py): the codes with their severities,
the GPUs and snapshots, and the memory model as yardstick."""

from __future__ import annotations

import dataclasses

from snapshots import GIB, NOT_PROBED, gpu, plain

from shop_r1_doctor.facts import GpuFacts, GpuProcess
from shop_r1_doctor.memory import KNOWN_SHAPES, estimate_training_memory

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
PARAMS = 500_000_000  # nearest known shape: Qwen2.5-0.5B, with this parameter count
SHAPE = dataclasses.replace(KNOWN_SHAPES["0.5b"], params=PARAMS)
SHAPE_7B = KNOWN_SHAPES["7b"]
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def _gpu(
    free: int | None = None,
    total: int | None = 80 * GIB,
    index: int = 0,
    name: str = H100,
    processes: list[GpuProcess] | None = None,
) -> GpuFacts:
    """A GPU of `total` bytes with `free` of them free (used memory unprobed without it)."""
    used = total - free if free is not None and total is not None else NOT_PROBED
    return gpu(name, NOT_PROBED, index, total, used, procs=processes)  # type: ignore[arg-type]


def _snap(plan: dict, gpus: list[GpuFacts] | None = None, env: dict | None = None) -> dict:
    snap: dict = {
        "gpus": plain([_gpu()] if gpus is None else gpus),
        "plan": {"model_params": PARAMS, **plan},
    }
    if env is not None:
        snap["env"] = env
    return snap


TOO_LARGE = ("MODEL_TOO_LARGE_FOR_GPU", "error")
OOM = ("OOM_LONG_SEQUENCE", "warning")
COLOCATE_BUDGET = ("TRL_COLOCATE_MEMORY_BUDGET", "error")
KV_SHORT = ("VLLM_KV_CACHE_NO_MEMORY", "error")


def _estimate(shape=SHAPE, **kw):
    settings = {
        "seq_len": 1024,
        "micro_batch": 1,
        "dtype": "bf16",
        "master_fp32": False,
        "grad_checkpointing": False,
        "chunked_loss": False,
        "fused_kernels": False,
        "shards": 1,
        **kw,
    }
    return estimate_training_memory(shape, **settings)


def _best(**kw):
    """The smallest footprint model_fits tries: micro batch 1, checkpointing, chunked loss."""
    return _estimate(**{**kw, "micro_batch": 1, "grad_checkpointing": True, "chunked_loss": True})
