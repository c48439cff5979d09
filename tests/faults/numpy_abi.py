"""An extension compiled against NumPy 1.x headers, imported under the installed NumPy 2.

`prepare` builds it for real: NumPy 1.26.4's wheel for this Python (pip download), its
C headers, the system C compiler; the built module is cached in the directory given, so
a test session builds it once. Without a compiler or the wheel the case cannot be caused
(`Unavailable`, one line); its recording stays.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from .case import FaultCase, Unavailable, download_wheel, drive

FAMILY = "numpy_abi"
NUMPY1 = "1.26.4"
MODULE = "np1_ext"
ENV = "SHOP_R1_FAULT_NUMPY1_EXT"  # the directory holding the built module
CASES = (
    FaultCase(
        FAMILY,
        "numpy1_extension",
        ("NUMPY2_BINARY_INCOMPAT",),
        f"import a C extension built with the system compiler against NumPy {NUMPY1}'s headers"
        " (import_array()) under the installed NumPy 2",
        prepare="prepare",
    ),
)

SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static PyObject *nbytes(PyObject *self, PyObject *arg) {
    if (!PyArray_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "expected an ndarray");
        return NULL;
    }
    return PyLong_FromSsize_t(PyArray_NBYTES((PyArrayObject *)arg));
}

static PyMethodDef methods[] = {{"nbytes", nbytes, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "np1_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_np1_ext(void) {
    import_array();
    return PyModule_Create(&module);
}
"""


def compiler() -> str | None:
    return next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)


def prepare(cache: Path) -> dict[str, str]:
    """Build the extension once into `cache`; the driver's environment to find it."""
    out = cache / f"numpy-{NUMPY1}-py{sys.version_info.major}{sys.version_info.minor}"
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    built = out / f"{MODULE}{suffix}"
    if built.exists():
        return {ENV: str(out)}
    cc = compiler()
    if cc is None:
        raise Unavailable("no C compiler (cc, gcc or clang) on PATH")
    include_py = sysconfig.get_paths()["include"]
    if not (Path(include_py) / "Python.h").exists():
        raise Unavailable(f"no Python.h in {include_py} (the Python development headers)")
    out.mkdir(parents=True, exist_ok=True)
    wheel = download_wheel(f"numpy=={NUMPY1}", out)
    headers = out / "numpy1-include"
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("numpy/core/include/"):
                zf.extract(name, headers)
    src = out / f"{MODULE}.c"
    src.write_text(SOURCE, encoding="utf-8")
    argv = [cc, "-shared", "-fPIC", "-O1", f"-I{include_py}"]
    argv += [f"-I{headers / 'numpy/core/include'}", str(src), "-o", str(built)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"{cc} could not build the NumPy 1 extension: {last}")
    return {ENV: str(out)}


def numpy1_extension(work: Path) -> None:
    import importlib
    import os

    import numpy as np

    print(f"numpy {np.__version__}", flush=True)
    sys.path.insert(0, os.environ[ENV])
    ext = importlib.import_module(MODULE)
    print(ext.nbytes(np.zeros(4)))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
