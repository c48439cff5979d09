"""torch.compile on CPU (Inductor, with the system C++ compiler) whose cache or temp
directory is on a full file system (a tiny tmpfs in a private mount namespace).

Inductor writes its generated C++ and the built libraries under TORCHINDUCTOR_CACHE_DIR
(default: <temp dir>/torchinductor_<user>) and has the compiler write through the temp
dir. Expected: DISK_LOW names free space in the temp dir; DISK_FULL_AT_CHECKPOINT the
full disk where the run writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "compile_tmp_full"
EXPECTED = ("DISK_LOW", "DISK_FULL_AT_CHECKPOINT")
CASES = (
    FaultCase(
        FAMILY,
        "inductor_cache_dir_full",
        EXPECTED,
        "TORCHINDUCTOR_CACHE_DIR on a 64 kB tmpfs: torch.compile of gelu(x @ y).sum(-1) on CPU",
        tmpfs=("work", "64k"),
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "tmp_full",
        EXPECTED,
        "/tmp a 256 kB tmpfs (Inductor's default cache and the compiler's output under it):"
        " torch.compile of gelu(x @ y).sum(-1) on CPU",
        tmpfs=("/tmp", "256k"),
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "shape_error_compiled",
        (),
        "TORCHINDUCTOR_CACHE_DIR on a 64 kB tmpfs, not reached: the compiled function multiplies"
        " (64, 32) by (64, 64), the user's shape bug caught while tracing",
        tmpfs=("work", "64k"),
        timeout=90,
    ),
)


def _compiled(x_shape: tuple[int, int]) -> None:
    import torch

    def step(x, y):
        return torch.nn.functional.gelu(x @ y).sum(dim=-1)

    out = torch.compile(step)(torch.randn(*x_shape), torch.randn(64, 64))
    print(tuple(out.shape))


def inductor_cache_dir_full(work: Path) -> None:
    import os

    # as `export TORCHINDUCTOR_CACHE_DIR=...` in the launch script (set before torch loads)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor")
    _compiled((64, 64))


def tmp_full(work: Path) -> None:
    _compiled((64, 64))


def shape_error_compiled(work: Path) -> None:
    import os

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor")
    _compiled((64, 32))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
