"""`pip install flash-attn` from its source distribution on PyPI in an environment with a
CPU torch: under pip's build isolation (the isolated build environment has no torch,
which flash-attn's setup.py imports at its top) and with --no-build-isolation on this
machine (no CUDA toolkit, no nvcc: setup.py's CUDAExtension asks for CUDA_HOME).

Nothing is installed into the environment (`--target` a scratch dir, --no-deps); pip's
HTTP cache keeps the sdist after the first download.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "flash_attn_build"
VERSION = "2.8.3.post2"
CASES = (
    FaultCase(
        FAMILY,
        "build_isolation_no_torch",
        ("FA_BUILD_ISOLATION_NO_TORCH",),
        f"`pip install --no-deps --target <dir> flash-attn=={VERSION}` (the sdist, pip's"
        " build isolation) with torch 2.13+cpu in the environment",
        timeout=180,
    ),
    FaultCase(
        FAMILY,
        "no_build_isolation_no_cuda",
        ("CUDA_HOME_UNSET_EXT_BUILD",),
        f"`pip install --no-deps --no-build-isolation --target <dir> flash-attn=={VERSION}`"
        " with torch 2.13+cpu on a machine without a CUDA toolkit (no nvcc, CUDA_HOME unset)",
        timeout=180,
    ),
    FaultCase(
        FAMILY,
        "version_typo",
        (),
        "the user's own typo: `pip install --no-deps --target <dir> flash-attn==2.8.33`"
        " (no such release)",
        timeout=120,
    ),
)


def _pip(work: Path, *args: str) -> None:
    argv = ["pip", "install", "--no-deps", "--target", str(work / "site"), *args]
    sys.exit(subprocess.run(argv, check=False).returncode)


def build_isolation_no_torch(work: Path) -> None:
    _pip(work, f"flash-attn=={VERSION}")


def no_build_isolation_no_cuda(work: Path) -> None:
    _pip(work, "--no-build-isolation", f"flash-attn=={VERSION}")


def version_typo(work: Path) -> None:
    _pip(work, "flash-attn==2.8.33")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
