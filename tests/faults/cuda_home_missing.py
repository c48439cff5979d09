"""A CUDA extension built on a machine with no CUDA toolkit (CUDA_HOME unset, no nvcc).

torch.utils.cpp_extension looks for the toolkit in CUDA_HOME / CUDA_PATH, then the
directory above `nvcc` on PATH, then /usr/local/cuda. The recording machine has a
toolkit under /usr/local (cuda-13.0, and /usr/local/bin/nvcc), so each case runs in a
private mount namespace with an empty tmpfs over /usr/local: the state of a machine
without the toolkit (the system compiler in /usr/bin stays). The runner clears CUDA_*.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "cuda_home_missing"
_NO_TOOLKIT = ("/usr/local", "1m")
CASES = (
    FaultCase(
        FAMILY,
        "load_inline_cuda",
        ("CUDA_HOME_UNSET_EXT_BUILD",),
        "torch.utils.cpp_extension.load_inline(..., cuda_sources=<a kernel>) with no CUDA"
        " toolkit (CUDA_HOME unset, /usr/local hidden by a tmpfs)",
        tmpfs=_NO_TOOLKIT,
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "pip_install_cuda_extension",
        ("CUDA_HOME_UNSET_EXT_BUILD",),
        "pip install --no-build-isolation . of a setup.py with a CUDAExtension (into a --target"
        " directory) with no CUDA toolkit (CUDA_HOME unset, /usr/local hidden by a tmpfs)",
        tmpfs=_NO_TOOLKIT,
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "load_inline_cpp_typo",
        (),
        "load_inline of a C++-only extension whose source has a typo (an undeclared name),"
        " same machine state (the user's own bug)",
        tmpfs=_NO_TOOLKIT,
        timeout=120,
    ),
)

CUDA_SOURCE = """
__global__ void add_one_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.f;
}
torch::Tensor add_one(torch::Tensor x) {
    add_one_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel());
    return x;
}
"""

SETUP_PY = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fused_add",
    version="0.1.0",
    ext_modules=[CUDAExtension("fused_add._C", ["csrc/fused_add.cpp", "csrc/fused_add_kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
"""

CPP_TYPO = """
torch::Tensor scale(torch::Tensor x, double s) {
    return x * scal;
}
"""


def load_inline_cuda(work: Path) -> None:
    from torch.utils.cpp_extension import load_inline

    load_inline(
        name="add_one_ext",
        cpp_sources="torch::Tensor add_one(torch::Tensor x);",
        cuda_sources=CUDA_SOURCE,
        functions=["add_one"],
        build_directory=str(work),
        verbose=True,
    )


def pip_install_cuda_extension(work: Path) -> None:
    project = work / "fused_add"
    (project / "csrc").mkdir(parents=True)
    (project / "setup.py").write_text(SETUP_PY, encoding="utf-8")
    (project / "csrc" / "fused_add.cpp").write_text("#include <torch/extension.h>\n")
    kernel = "__global__ void add_one(float* x) { x[0] += 1.f; }\n"
    (project / "csrc" / "fused_add_kernel.cu").write_text(kernel)
    argv = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps"]
    argv += ["--disable-pip-version-check", "--target", str(work / "site"), "."]
    print("$ pip install --no-build-isolation .", flush=True)
    sys.exit(subprocess.run(argv, cwd=project, check=False).returncode)


def load_inline_cpp_typo(work: Path) -> None:
    from torch.utils.cpp_extension import load_inline

    load_inline(
        name="scale_ext",
        cpp_sources=CPP_TYPO,
        functions=["scale"],
        build_directory=str(work),
        verbose=True,
    )


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
