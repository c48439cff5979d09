"""A C extension built by a Python whose development headers are not installed: the
interpreter and its stdlib are there, its include/ directory is not (a distribution's
python3 without python3.X-dev / python3-devel), so the compiler cannot find Python.h.

The Python is this environment's: its install's include directory (sysconfig's INCLUDEPY,
which setuptools passes as -I) is hidden under an empty read-only tmpfs in a private mount
namespace. pip builds offline with this environment's setuptools (--no-index
--no-build-isolation), gcc on PATH: the sdist (bitarray, a C extension, downloaded once)
and a local project with one C file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

from . import build_no_compiler
from .case import FaultCase, drive

FAMILY = "build_headers_missing"
EXPECTED = ("PYTHON_DEV_HEADERS_MISSING",)
# /root/.pyenv/versions/3.11.7/include here: the directory of python3.11/Python.h.
INCLUDE = str(Path(sysconfig.get_config_var("INCLUDEPY") or "/usr/include/python3").parent)
CASES = (
    FaultCase(
        FAMILY,
        "pip_sdist_without_include",
        EXPECTED,
        f"`pip install --no-index --no-build-isolation --target <dir> <{build_no_compiler.SDIST}"
        " sdist>` (gcc on PATH) with the CPython install's include/ dir hidden under an empty"
        " read-only tmpfs (a private mount namespace), as a python3 without python3.11-dev",
        readonly=(INCLUDE,),
        prepare="prepare",
        timeout=180,
    ),
    FaultCase(
        FAMILY,
        "pip_local_extension_without_include",
        EXPECTED,
        "the include/ dir hidden the same way: `pip install --no-index --no-build-isolation"
        " --target <dir> .` of a local project whose setup.py declares one C extension"
        " (fastsum.c, `#include <Python.h>`)",
        readonly=(INCLUDE,),
        timeout=180,
    ),
    FaultCase(
        FAMILY,
        "user_header_missing",
        (),
        "the user's own bug: the local project's fastsum.c includes its own fastsum_impl.h,"
        " which the project does not ship; built by this environment's Python (headers"
        " present): pip install --no-build-isolation --target <dir> .",
        timeout=180,
    ),
)

SETUP = """from setuptools import Extension, setup

setup(name="fastsum", version="0.1", ext_modules=[Extension("fastsum", ["fastsum.c"])])
"""

FASTSUM = r"""#define PY_SSIZE_T_CLEAN
#include <Python.h>
%s
static PyObject *total(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return PyLong_FromLong(s);
}
static PyMethodDef methods[] = {{"total", total, METH_O, ""}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fastsum", 0, -1, methods};
PyMODINIT_FUNC PyInit_fastsum(void) { return PyModule_Create(&def); }
"""


def prepare(cache: Path) -> dict[str, str]:
    return build_no_compiler.prepare_sdist(cache)


def _project(work: Path, extra_include: str = "") -> Path:
    project = work / "fastsum"
    project.mkdir()
    (project / "setup.py").write_text(SETUP, encoding="utf-8")
    (project / "fastsum.c").write_text(FASTSUM % extra_include, encoding="utf-8")
    return project


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    print("$", shlex.join(argv), flush=True)
    sys.exit(subprocess.run(argv, env=env, cwd=cwd, check=False).returncode)


def _pip(work: Path, target: str) -> None:
    argv = [sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation"]
    argv += ["--target", str(work / "site"), target]
    _run(argv, dict(os.environ), work)


def pip_sdist_without_include(work: Path) -> None:
    _pip(work, str(sorted(Path(os.environ[build_no_compiler.ENV]).glob("*.tar.gz"))[0]))


def pip_local_extension_without_include(work: Path) -> None:
    _pip(work, str(_project(work)))


def user_header_missing(work: Path) -> None:
    _pip(work, str(_project(work, '#include "fastsum_impl.h"')))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
