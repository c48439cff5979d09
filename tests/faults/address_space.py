"""An address-space limit (`ulimit -v`, as HPC nodes and some batch schedulers set it):
torch's CPU allocator and the model loader's mappings are refused while RAM is free.

`prepare` saves a 640 MB (fp32) random-init model with save_pretrained once into the
cache; the driver loads it under the limit. No finding code names this cause (the host
has RAM; the process may not map it); ADDRESS_SPACE_LIMIT is a proposed one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "address_space"
NEW = ("ADDRESS_SPACE_LIMIT",)  # proposed: not in codes.yaml
ENV = "SHOP_R1_FAULT_BIG_MODEL"  # the saved model's directory
CASES = (
    FaultCase(
        FAMILY,
        "tensor_alloc",
        NEW,
        "ulimit -v 2000000 (2 GB of address space; proposed code ADDRESS_SPACE_LIMIT): torch"
        " allocates a 3 GB float32 tensor on a machine with the RAM free",
        ulimits={"v": "2000000"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "from_pretrained",
        NEW,
        "ulimit -v 1200000 (1.2 GB; proposed code ADDRESS_SPACE_LIMIT):"
        " AutoModelForCausalLM.from_pretrained of a 640 MB safetensors checkpoint",
        ulimits={"v": "1200000"},
        prepare="prepare",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "dtype_mismatch",
        (),
        "ulimit -v 2000000 (not reached): the user multiplies an int64 tensor by a float32"
        " weight (a dtype error)",
        ulimits={"v": "2000000"},
        timeout=60,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """Save the model once into `cache`; the driver's environment to find it."""
    out = cache / "address-space-model"
    if not (out / "model.safetensors").exists():
        from shop_r1.tiny import model_from_config_dict, tiny_config_dict

        config = tiny_config_dict(150_000, hidden=1024, layers=2, heads=8, intermediate=2048)
        model_from_config_dict(config).save_pretrained(out)
    return {ENV: str(out)}


def tensor_alloc(work: Path) -> None:
    import torch

    logits = torch.empty(8, 512, 151_936 // 2, dtype=torch.float32)  # 1.2 GB
    print(f"logits {tuple(logits.shape)}", flush=True)
    full = torch.zeros(4, 1024, 151_936 + 32_000)  # 3 GB: a vocabulary-sized buffer
    print(full.shape)


def from_pretrained(work: Path) -> None:
    import os

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(os.environ[ENV])
    print(model.num_parameters())


def dtype_mismatch(work: Path) -> None:
    import torch

    ids = torch.randint(0, 100, (4, 16))
    weight = torch.randn(16, 8)
    print(ids @ weight)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
