"""torch.compile on CPU with no usable C++ compiler (Inductor compiles C++ kernels).

On CPU, Inductor searches for the compiler itself (torch/_inductor/cpp_builder.py) and
never reaches Triton (the CPU wheel has none), so these recordings hold torch's
InvalidCxxCompiler text, not Triton's "Failed to find C/C++ compiler" raises; those are
read by the triton-no-c-compiler signature (tests/shop_r1_doctor/test_logscan.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "compiler"
CASES = (
    FaultCase(
        FAMILY,
        "path_without_cc",
        ("TORCH_COMPILE_NO_COMPILER",),
        "torch.compile of a small function with PATH holding only python's bin directory",
        path_without_compiler=True,
    ),
    FaultCase(
        FAMILY,
        "cxx_points_nowhere",
        ("TORCH_COMPILE_NO_COMPILER",),
        "torch.compile with CXX=/opt/gcc-13/bin/g++ (not installed)",
        env={
            "CXX": "/opt/gcc-13/bin/g++",
            "TORCHINDUCTOR_CACHE_DIR": "/tmp/shop-r1-fault-inductor",
        },
    ),
)


def _compile_and_run(work: Path) -> None:
    import os

    import torch

    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(work / "inductor"))  # no cached kernel

    @torch.compile
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) * 2 + x.cos()

    f(torch.randn(64))


def path_without_cc(work: Path) -> None:
    _compile_and_run(work)


def cxx_points_nowhere(work: Path) -> None:
    _compile_and_run(work)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
