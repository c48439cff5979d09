"""A temp or cache directory on a file system mounted `noexec` (HPC nodes and Docker mount
/tmp so), then code that builds a shared library there and loads it: torch.compile on
CPU (Inductor writes <key>.main.so under TORCHINDUCTOR_CACHE_DIR, default
<temp dir>/torchinductor_<user>, and dlopens it) and torch.utils.cpp_extension.load_inline
(builds under TORCH_EXTENSIONS_DIR and imports the .so).

The tmpfs is mounted `-o size=<n>,noexec` in a private mount namespace (the case's tmpfs
size carries the mount option). The kernel refuses the executable mapping: the dynamic
loader's `failed to map segment from shared object`.

Expected: TMP_DIR_NOEXEC (a directory the stack builds and loads libraries from is on a
noexec mount).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "tmp_noexec"
EXPECTED = ("TMP_DIR_NOEXEC",)
CASES = (
    FaultCase(
        FAMILY,
        "tmp_noexec_compile",
        EXPECTED,
        "/tmp a 256 MB tmpfs mounted noexec (Inductor's default cache under it):"
        " torch.compile of gelu(x @ y).sum(-1) on CPU",
        tmpfs=("/tmp", "256m,noexec"),
        timeout=150,
    ),
    FaultCase(
        FAMILY,
        "inductor_cache_dir_noexec",
        EXPECTED,
        "TORCHINDUCTOR_CACHE_DIR on a 256 MB tmpfs mounted noexec: torch.compile of"
        " gelu(x @ y).sum(-1) on CPU",
        tmpfs=("work", "256m,noexec"),
        timeout=150,
    ),
    FaultCase(
        FAMILY,
        "load_inline_noexec",
        EXPECTED,
        "TORCH_EXTENSIONS_DIR on a 256 MB tmpfs mounted noexec: cpp_extension.load_inline of"
        " a one-function C++ extension (g++ builds it, Python imports the .so)",
        tmpfs=("work", "256m,noexec"),
        timeout=240,
    ),
    FaultCase(
        FAMILY,
        "load_inline_cpp_typo",
        (),
        "TORCH_EXTENSIONS_DIR on a 256 MB tmpfs mounted noexec, not reached: the user's C++"
        " source has a typo (an undeclared name), so g++ fails before anything is loaded",
        tmpfs=("work", "256m,noexec"),
        timeout=240,
    ),
)

GOOD = "torch::Tensor twice(torch::Tensor x) { return x * 2; }"
TYPO = "torch::Tensor twice(torch::Tensor x) { return y * 2; }"


def _compiled() -> None:
    import torch

    def step(x, y):
        return torch.nn.functional.gelu(x @ y).sum(dim=-1)

    out = torch.compile(step)(torch.randn(64, 64), torch.randn(64, 64))
    print(tuple(out.shape))


def _inline(work: Path, source: str) -> None:
    # as `export TORCH_EXTENSIONS_DIR=...` in the launch script
    os.environ["TORCH_EXTENSIONS_DIR"] = str(work / "torch_extensions")
    import torch
    from torch.utils.cpp_extension import load_inline

    ext = load_inline("shop_twice", cpp_sources=[source], functions=["twice"], verbose=True)
    print(ext.twice(torch.ones(3)))


def tmp_noexec_compile(work: Path) -> None:
    _compiled()


def inductor_cache_dir_noexec(work: Path) -> None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor")
    _compiled()


def load_inline_noexec(work: Path) -> None:
    _inline(work, GOOD)


def load_inline_cpp_typo(work: Path) -> None:
    _inline(work, TYPO)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
