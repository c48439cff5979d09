"""Synthetic snapshots shared by the decision rows of shop_r1/autoconfig.py
(tests/shop_r1/test_autoconfig_rows*.py): GPUs by compute capability, torch facts, import
health, and the plan's decisions as a {setting: (value, reason)} dict."""

from __future__ import annotations

from shop_r1.autoconfig import AutoPlan
from shop_r1_doctor.memory import KNOWN_SHAPES, estimate_training_memory

GIB = 1024**3
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
SHAPE = KNOWN_SHAPES["0.5b"]
OK = {"ok": True, "error": None}


def fail(error: str = "ImportError: boom") -> dict:
    return {"ok": False, "error": error}


def snap(
    ccs=("9.0",),
    *,
    cuda: bool | None = True,
    version: str | None = "2.11.0+cu130",
    bf16: bool | None = None,
    total: int | None = 80 * GIB,
    used: int | None = 0,
    imports: dict | None = None,
    packages: dict | None = None,
    ram: int | None = None,
    device_count: int | None = None,
    names=None,
) -> dict:
    gpus = [
        {
            "index": i,
            "name": (names or [H100] * len(ccs))[i],
            "compute_capability": cc,
            "memory_total_bytes": total,
            "memory_used_bytes": used,
        }
        for i, cc in enumerate(ccs)
    ]
    torch: dict = {"version": version}
    if cuda is not None:
        torch["cuda_available"] = cuda
    if bf16 is not None:
        torch["bf16_supported"] = bf16
    if device_count is not None:
        torch["device_count"] = device_count
    return {
        "gpus": gpus,
        "torch": torch,
        "imports": imports or {},
        "packages": packages or {},
        "host": {} if ram is None else {"ram_bytes": ram},
    }


def notes(plan: AutoPlan) -> dict[str, tuple]:
    return {d.setting: (d.value, d.reason) for d in plan.decisions}


# the memory model's bytes for micro batch `mb` of the 0.5B shape: the yardstick
SEQ = 1024


def est(mb: int, ckpt: bool, *, seq: int = SEQ, **kw) -> int:
    settings = {
        "seq_len": seq,
        "micro_batch": mb,
        "dtype": "bf16",
        "master_fp32": False,
        "grad_checkpointing": ckpt,
        "chunked_loss": True,
        "loss_tokens": None,
        "attention": "sdpa",
        "fused_kernels": False,
        "explicit_mask": False,
        **kw,
    }
    return estimate_training_memory(SHAPE, **settings).total
