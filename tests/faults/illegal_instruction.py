"""Native code built for instructions this CPU lacks: the CPU raises #UD, the kernel sends
SIGILL, and the process dies at once ("Illegal instruction"), as a wheel or extension built
with -march=native on a newer build host does on an older node.

The builds are made here (prepare): AMX tile intrinsics (-mamx-tile, _tile_loadconfig /
_tile_zero) in a plain shared library for ctypes, and a CPython extension built with
-march=sapphirerapids whose _Float16 loop compiles to AVX512-FP16 instructions. A CPU that
has AMX and AVX512-FP16 (Sapphire Rapids and later) would run them: those cases are then
Unavailable. Expected: no code in codes.yaml names a binary built for another CPU; the
proposed CPU_INSTRUCTION_UNSUPPORTED.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "illegal_instruction"
EXPECTED = ("CPU_INSTRUCTION_UNSUPPORTED",)
ENV = "SHOP_R1_FAULT_ISA_BUILD"
CASES = (
    FaultCase(
        FAMILY,
        "ctypes_amx_tiles_faulthandler",
        EXPECTED,
        "a shared library built with gcc -mamx-tile (_tile_loadconfig, _tile_zero) loaded by"
        " ctypes and called on a CPU without AMX, with PYTHONFAULTHANDLER=1",
        env={"PYTHONFAULTHANDLER": "1"},
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "extension_sapphirerapids_launch_script",
        EXPECTED,
        "a CPython extension built with gcc -march=sapphirerapids (a _Float16 loop: AVX512-FP16)"
        " imported and called on a CPU without AVX512-FP16, from a launch script's bash",
        shell_reports=True,
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "extension_init_sapphirerapids_faulthandler",
        EXPECTED,
        "a CPython extension built with gcc -march=sapphirerapids whose module init runs the"
        " AVX512-FP16 loop, imported on a CPU without it, with PYTHONFAULTHANDLER=1",
        env={"PYTHONFAULTHANDLER": "1"},
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "ctypes_misspelled_function",
        (),
        "the same kind of shared library built for this CPU (no -m flags): the user's code"
        " calls tile_sums, a name the library does not export",
        env={"PYTHONFAULTHANDLER": "1"},
        prepare="prepare",
        timeout=60,
    ),
)

TILES = r"""
#include <immintrin.h>
#include <string.h>
int tile_sum(void) {
    unsigned char cfg[64];
    memset(cfg, 0, sizeof cfg);
    cfg[0] = 1;   /* palette 1 */
    cfg[16] = 64; /* tile 0: 64 bytes a row */
    cfg[48] = 16; /* tile 0: 16 rows */
    _tile_loadconfig(cfg);
    _tile_zero(0);
    _tile_release();
    return 0;
}
"""

BASELINE = r"""
int tile_sum(void) { return 0; }
"""

FASTOPS = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static float acc[64];
static float fused(void) {
    _Float16 h[64];
    float r = 0;
    for (int i = 0; i < 64; i++) h[i] = (_Float16)(acc[i] + i);
    for (int i = 0; i < 64; i++) r += (float)(h[i] * h[i]);
    return r;
}
static PyObject *py_fused(PyObject *self, PyObject *args) {
    return PyFloat_FromDouble(fused());
}
static PyMethodDef methods[] = {{"fused", py_fused, METH_NOARGS, ""}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, MODNAME, 0, -1, methods};
PyMODINIT_FUNC INIT(void) {
#ifdef RUN_AT_IMPORT
    acc[0] = fused();
#endif
    return PyModule_Create(&def);
}
"""


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def prepare(cache: Path) -> dict[str, str]:
    """Build the four binaries once into `cache`; the driver's environment to find them."""
    flags = _cpu_flags() if Path("/proc/cpuinfo").exists() else set()
    if not flags or "amx_tile" in flags or "avx512_fp16" in flags:
        raise Unavailable(
            "this CPU has AMX or AVX512-FP16 (or no /proc/cpuinfo): it would run them"
        )
    cc = shutil.which("gcc")
    if cc is None:
        raise Unavailable("no gcc on PATH (AMX intrinsics need gcc >= 11)")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise Unavailable(f"no Python.h in {include} (the Python development headers)")
    out = cache / f"isa-py{sys.version_info.major}{sys.version_info.minor}"
    out.mkdir(parents=True, exist_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    (out / "tiles.c").write_text(TILES, encoding="utf-8")
    (out / "baseline.c").write_text(BASELINE, encoding="utf-8")
    (out / "fastops.c").write_text(FASTOPS, encoding="utf-8")
    builds = {
        "libtiles.so": ["-mamx-tile", "tiles.c"],
        "libbaseline.so": ["baseline.c"],
        f"fastops{suffix}": [
            "-march=sapphirerapids",
            f"-I{include}",
            '-DMODNAME="fastops"',
            "-DINIT=PyInit_fastops",
            "fastops.c",
        ],
        f"fastops_init{suffix}": [
            "-march=sapphirerapids",
            f"-I{include}",
            '-DMODNAME="fastops_init"',
            "-DINIT=PyInit_fastops_init",
            "-DRUN_AT_IMPORT",
            "fastops.c",
        ],
    }
    for name, args in builds.items():
        if (out / name).exists():
            continue
        argv = [cc, "-O2", "-shared", "-fPIC", *args, "-o", name]
        proc = subprocess.run(argv, cwd=out, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise Unavailable(f"gcc could not build {name}: {last}")
    return {ENV: str(out)}


def _built() -> Path:
    import os

    return Path(os.environ[ENV])


def ctypes_amx_tiles_faulthandler(work: Path) -> None:
    import ctypes

    lib = ctypes.CDLL(str(_built() / "libtiles.so"))
    print("tile_sum:", lib.tile_sum())


def extension_sapphirerapids_launch_script(work: Path) -> None:
    sys.path.insert(0, str(_built()))
    import fastops  # type: ignore[import-not-found]

    print("fused:", fastops.fused())


def extension_init_sapphirerapids_faulthandler(work: Path) -> None:
    sys.path.insert(0, str(_built()))
    import fastops_init  # type: ignore[import-not-found]

    print("fused:", fastops_init.fused())


def ctypes_misspelled_function(work: Path) -> None:
    import ctypes

    lib = ctypes.CDLL(str(_built() / "libbaseline.so"))
    print("tile_sum:", lib.tile_sums())


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
