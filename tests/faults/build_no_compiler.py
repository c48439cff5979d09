"""Building native code without a usable compiler: pip building an sdist's C extension
with no C compiler on PATH (or CC naming none), and nvcc refusing its host compiler.

The sdist (bitarray, a C extension and nothing else) is downloaded once; pip builds it
offline (--no-index --no-build-isolation: setuptools from this environment). nvcc checks
the host compiler's version in crt/host_config.h (`__GNUC__`); the case's -ccbin is a gcc
wrapper that defines __GNUC__ as 16, as a gcc 16 does, past CUDA 13.0's limit of 15.
Expected: no code in codes.yaml names either (TORCH_COMPILE_NO_COMPILER is Inductor's own
search); the proposed EXT_BUILD_NO_C_COMPILER and NVCC_HOST_COMPILER_UNSUPPORTED.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "build_no_compiler"
SDIST = "bitarray==3.12.3"
ENV = "SHOP_R1_FAULT_BUILD_CACHE"
CASES = (
    FaultCase(
        FAMILY,
        "pip_sdist_path_without_cc",
        ("EXT_BUILD_NO_C_COMPILER",),
        f"pip install --no-index --no-build-isolation of the {SDIST} sdist (a C extension)"
        " with PATH holding only python's bin directory",
        path_without_compiler=True,
        prepare="prepare_sdist",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "pip_sdist_cc_points_nowhere",
        ("EXT_BUILD_NO_C_COMPILER",),
        f"pip install --no-index --no-build-isolation of the {SDIST} sdist with"
        " CC=/opt/gcc-13/bin/gcc (not installed)",
        env={"CC": "/opt/gcc-13/bin/gcc"},
        prepare="prepare_sdist",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "nvcc_host_gcc_too_new",
        ("NVCC_HOST_COMPILER_UNSUPPORTED",),
        "a build step runs nvcc -ccbin <gcc wrapper defining __GNUC__=16> -c kernel.cu (CUDA 13.0"
        " supports gcc up to 15)",
        prepare="prepare_nvcc",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "pip_local_extension_typo",
        (),
        "pip install --no-index --no-build-isolation of a local package whose own C extension"
        " has a typo (an undeclared identifier), gcc on PATH",
        prepare="prepare_sdist",
        timeout=90,
    ),
)

SETUP = """from setuptools import Extension, setup

setup(name="fastsum", version="0.1", ext_modules=[Extension("fastsum", ["fastsum.c"])])
"""

FASTSUM = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *total(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return PyLong_FromLong(totl);
}
static PyMethodDef methods[] = {{"total", total, METH_O, ""}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fastsum", 0, -1, methods};
PyMODINIT_FUNC PyInit_fastsum(void) { return PyModule_Create(&def); }
"""

KERNEL = """__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""


def prepare_sdist(cache: Path) -> dict[str, str]:
    """The sdist, downloaded once into `cache`."""
    out = cache / "sdist"
    name, version = SDIST.split("==")
    if not sorted(out.glob(f"{name}-{version}.tar.gz")):
        out.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:"]
        argv += ["--no-build-isolation", "--disable-pip-version-check", "-q", SDIST, "-d"]
        try:
            proc = subprocess.run(
                [*argv, str(out)], capture_output=True, text=True, check=False, timeout=180
            )
        except subprocess.TimeoutExpired:
            raise Unavailable(f"pip download {SDIST} took over 180 s") from None
        if proc.returncode != 0 or not sorted(out.glob(f"{name}-{version}.tar.gz")):
            last = (proc.stderr.strip().splitlines() or ["no sdist"])[-1]
            raise Unavailable(f"pip could not download the {SDIST} sdist: {last}")
    return {ENV: str(out)}


def prepare_nvcc(cache: Path) -> dict[str, str]:
    """nvcc and gcc present; the wrapper written once into `cache`."""
    if shutil.which("nvcc") is None:
        raise Unavailable("no nvcc on PATH (the CUDA toolkit)")
    gcc = shutil.which("gcc")
    if gcc is None:
        raise Unavailable("no gcc on PATH")
    out = cache / "gcc16"
    out.mkdir(parents=True, exist_ok=True)
    wrapper = out / "gcc"
    wrapper.write_text(f'#!/bin/sh\nexec {gcc} -U__GNUC__ -D__GNUC__=16 "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return {ENV: str(out)}


def _built() -> Path:
    import os

    return Path(os.environ[ENV])


def _pip_install(target: str) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps"]
    argv += ["--no-build-isolation", "--disable-pip-version-check", target]
    sys.exit(subprocess.run(argv, check=False).returncode)


def _sdist() -> str:
    return str(sorted(_built().glob("*.tar.gz"))[0])


def pip_sdist_path_without_cc(work: Path) -> None:
    _pip_install(_sdist())


def pip_sdist_cc_points_nowhere(work: Path) -> None:
    _pip_install(_sdist())


def pip_local_extension_typo(work: Path) -> None:
    src = work / "fastsum"
    src.mkdir()
    (src / "setup.py").write_text(SETUP, encoding="utf-8")
    (src / "fastsum.c").write_text(FASTSUM, encoding="utf-8")
    _pip_install(str(src))


def nvcc_host_gcc_too_new(work: Path) -> None:
    (work / "scale.cu").write_text(KERNEL, encoding="utf-8")
    argv = ["nvcc", "-ccbin", str(_built() / "gcc"), "-O2", "-Xcompiler", "-fPIC"]
    argv += ["-c", str(work / "scale.cu"), "-o", str(work / "scale.o")]
    print(" ".join(argv), flush=True)
    code = subprocess.run(argv, check=False).returncode
    if code != 0:
        raise RuntimeError(f"nvcc failed with exit code {code}")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
