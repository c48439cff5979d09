"""xformers' released wheels, built for another torch and CUDA, imported under this
environment's torch 2.13+cpu: xformers warns that it cannot load its C++/CUDA
extensions, and memory_efficient_attention then finds no operator.

`prepare` downloads xformers 0.0.35 (built for torch 2.10.0+cu128, requires torch>=2.10)
and 0.0.28.post3 (requires torch==2.5.1) with pip download --no-deps and unpacks them into
the cache; the driver puts one first on sys.path, as if pip had installed it without
its torch pin being honoured (`--no-deps`, or an image's torch replaced afterwards).
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

from .case import FaultCase, download_wheel, drive

FAMILY = "xformers_wheel"
WHEELS = ("xformers==0.0.35", "xformers==0.0.28.post3")
ENV = "SHOP_R1_FAULT_XFORMERS"  # version=dir pairs, os.pathsep-separated
CASES = (
    FaultCase(
        FAMILY,
        "attention_built_for_other_torch",
        ("XFORMERS_WHEEL_MISMATCH",),
        "xformers 0.0.35's wheel (built for torch 2.10.0+cu128) first on sys.path under torch"
        " 2.13.0+cpu: import xformers.ops, then memory_efficient_attention(q, k, v)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "attention_pinned_old_torch",
        ("XFORMERS_WHEEL_MISMATCH",),
        "xformers 0.0.28.post3's wheel (Requires-Dist torch==2.5.1) first on sys.path under"
        " torch 2.13.0+cpu: import xformers.ops, then memory_efficient_attention(q, k, v)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "attention_user_shape_bug",
        (),
        "the user's own bug under the same xformers 0.0.35: memory_efficient_attention with a"
        " key whose head dim (4) is not the query's (8)",
        prepare="prepare",
        timeout=60,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """Unpack the wheels once into `cache`; the driver's environment to find them."""
    pairs = []
    for spec in WHEELS:
        name, version = spec.split("==")
        out = cache / f"{name}-{version}"
        if not (out / name / "__init__.py").exists():
            with zipfile.ZipFile(download_wheel(spec, cache)) as zf:
                zf.extractall(out)
        pairs.append(f"{version}={out}")
    return {ENV: os.pathsep.join(pairs)}


def _use(version: str):
    dirs = dict(p.split("=", 1) for p in os.environ[ENV].split(os.pathsep))
    sys.path.insert(0, dirs[version])
    import torch
    import xformers.ops

    return torch, xformers.ops


def _attention(version: str, head_dim_k: int = 8) -> None:
    torch, xops = _use(version)
    q = torch.randn(2, 128, 4, 8)  # batch, sequence, heads, head dim
    kv = torch.randn(2, 128, 4, head_dim_k)
    print(xops.memory_efficient_attention(q, kv, kv).shape)


def attention_built_for_other_torch(work: Path) -> None:
    _attention("0.0.35")


def attention_pinned_old_torch(work: Path) -> None:
    _attention("0.0.28.post3")


def attention_user_shape_bug(work: Path) -> None:
    _attention("0.0.35", head_dim_k=4)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
