"""A compiled module built on a newer Linux, loaded on an older one: the old dynamic loader
refuses a symbol version its glibc or libstdc++ does not have, as a wheel or extension
built on a current distribution does in an older container or on an older cluster node.

The old system is a Debian 11 (bullseye) root file system from `mmdebstrap --variant=apt`
with python3 (3.9, glibc 2.31, libstdc++ up to GLIBCXX_3.4.28); Debian 10 (buster) is no
longer on deb.debian.org. It is built once into the persistent fault cache (`default_cache()`,
the recorder's: about 15 s and 165 MB where deb.debian.org answers); a test session's own
cache never builds it, so the live cases skip with one line until the recorder has made it.
The builds are made here (gcc/g++ 12, glibc 2.36, GLIBCXX_3.4.30) as CPython stable-ABI
extensions (`.abi3.so`, Py_LIMITED_API 3.9) so the old python3 can import them, copied
into the root file system with the user's script, and run there: `chroot <rootfs> python3
/opt/shop-r1-fault/<script>.py` (the driver prints the command before it runs it).

These recordings validate readings written from public reports (GLIBC_TOO_OLD,
LIBSTDCXX_TOO_OLD), not a first-sight score: the family is in FAMILIES directly.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from .case import FaultCase, Unavailable, default_cache, drive

FAMILY = "old_os_libs"
SUITE = "bullseye"
MIRROR = os.environ.get("SHOP_R1_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
ENV = "SHOP_R1_FAULT_OLD_ROOTFS"
INSIDE = "/opt/shop-r1-fault"  # where the builds and scripts lie in the old system
CASES = (
    FaultCase(
        FAMILY,
        "extension_needs_newer_glibc",
        ("GLIBC_TOO_OLD",),
        "a C extension (abi3) built here with gcc 12 against glibc 2.36 (pthread_create:"
        " GLIBC_2.34) imported by python3 3.9 in a chroot of Debian 11 (glibc 2.31)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "extension_needs_newer_libstdcxx",
        ("LIBSTDCXX_TOO_OLD",),
        "a C++ extension (abi3) built here with g++ 12 (std::allocator<T>::allocate:"
        " GLIBCXX_3.4.29) imported by python3 3.9 in a chroot of Debian 11 (libstdc++ up to"
        " GLIBCXX_3.4.28)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "extension_loads_user_keyerror",
        (),
        "a C extension (abi3) built here that needs only GLIBC_2.2.5 loads in the same Debian"
        " 11 chroot; the user's script then reads a key its batch does not have",
        prepare="prepare",
        timeout=60,
    ),
)

FASTIO = r"""
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
static void *work(void *arg) { *(long *)arg *= 2; return NULL; }
static PyObject *prefetch(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    pthread_t t;
    if (pthread_create(&t, NULL, work, &n) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    pthread_join(t, NULL);
    return PyLong_FromLong(n);
}
static PyMethodDef methods[] = {{"prefetch", prefetch, METH_O, ""}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fastio", 0, -1, methods};
PyMODINIT_FUNC PyInit_fastio(void) { return PyModule_Create(&def); }
"""

FASTTOK = r"""
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <memory>
static PyObject *pack(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n < 0) return PyErr_Occurred() ? nullptr : PyLong_FromLong(0);
    std::allocator<long> alloc;
    long *ids = alloc.allocate(n);
    long total = 0;
    for (long i = 0; i < n; ++i) total += (ids[i] = i);
    alloc.deallocate(ids, n);
    return PyLong_FromLong(total);
}
static PyMethodDef methods[] = {{"pack", pack, METH_O, ""}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fasttok", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_fasttok(void) { return PyModule_Create(&def); }
"""

FASTSUM = r"""
#define Py_LIMITED_API 0x03090000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *total(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg), s = 0;
    for (long i = 0; i < n; i++) s += i;
    return PyLong_FromLong(s);
}
static PyMethodDef methods[] = {{"total", total, METH_O, ""}, {0}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fastsum", 0, -1, methods};
PyMODINIT_FUNC PyInit_fastsum(void) { return PyModule_Create(&def); }
"""

# The user's scripts, run by the old system's python3.
SCRIPTS = {
    "train_io.py": f"""import sys
sys.path.insert(0, "{INSIDE}")
import fastio

print("prefetched:", fastio.prefetch(21))
""",
    "train_tok.py": f"""import sys
sys.path.insert(0, "{INSIDE}")
import fasttok

print("packed:", fasttok.pack(1000))
""",
    "train_sum.py": f"""import sys
sys.path.insert(0, "{INSIDE}")
import fastsum

print("fastsum loaded:", fastsum.total(10))
batch = {{"input_ids": [1, 2, 3], "attention_mask": [1, 1, 1]}}
print("labels:", batch["labels"])
""",
}

# module name -> (compiler, source name, source)
BUILDS = {
    "fastio": ("gcc", "fastio.c", FASTIO),
    "fasttok": ("g++", "fasttok.cpp", FASTTOK),
    "fastsum": ("gcc", "fastsum.c", FASTSUM),
}


def rootfs_path() -> Path:
    """The old system, in the persistent fault cache (a test session's cache is thrown away)."""
    return default_cache() / f"old-rootfs-{SUITE}"


def build_rootfs() -> float:
    """Make the old system with mmdebstrap (Unavailable where it cannot); seconds taken."""
    if shutil.which("mmdebstrap") is None:
        raise Unavailable("no mmdebstrap to make the old root file system (apt-get install it)")
    target = rootfs_path()
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    argv = ["mmdebstrap", "--variant=apt", "--include=python3", SUITE, str(partial), MIRROR]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=900)
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        raise Unavailable(f"mmdebstrap {SUITE} took over 900 s") from None
    if proc.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        last = [ln for ln in proc.stderr.splitlines() if ln.startswith("E:")][:1] or ["failed"]
        raise Unavailable(f"mmdebstrap {SUITE} from {MIRROR}: {last[0]}")
    os.replace(partial, target)
    return time.monotonic() - started


def prepare(cache: Path) -> dict[str, str]:
    """Build the three extensions into `cache` and copy them, with the scripts, into the old
    system; build the old system itself only when `cache` is the persistent one (the
    recorder's). The driver's environment names the old system."""
    if sys.platform != "linux" or os.geteuid() != 0:
        raise Unavailable("chroot into the old root file system needs root on Linux")
    rootfs = rootfs_path()
    if not (rootfs / "usr/bin/python3").exists():
        if cache.resolve() != default_cache().resolve():
            raise Unavailable(
                f"no {SUITE} root file system at {rootfs}"
                " (python -m tests.faults.record old_os_libs builds it)"
            )
        took = build_rootfs()
        print(f"built {rootfs} in {took:.1f} s", file=sys.stderr)
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise Unavailable(f"no Python.h in {include} (the Python development headers)")
    out = cache / "old-os-libs"
    out.mkdir(parents=True, exist_ok=True)
    inside = rootfs / INSIDE.lstrip("/")
    inside.mkdir(parents=True, exist_ok=True)
    for module, (compiler, source, text) in BUILDS.items():
        cc = shutil.which(compiler)
        if cc is None:
            raise Unavailable(f"no {compiler} on PATH")
        built = out / f"{module}.abi3.so"
        if not built.exists():
            (out / source).write_text(text, encoding="utf-8")
            argv = [cc, "-O2", "-shared", "-fPIC", f"-I{include}", source, "-o", built.name]
            proc = subprocess.run(argv, cwd=out, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise Unavailable(f"{compiler} could not build {built.name}: {last}")
        shutil.copy2(built, inside / built.name)
    for name, text in SCRIPTS.items():
        (inside / name).write_text(text, encoding="utf-8")
    return {ENV: str(rootfs)}


def _run_old(script: str) -> None:
    """Run the user's script with the old system's python3, as its shell would."""
    argv = ["chroot", os.environ[ENV], "/usr/bin/env", "-i", "PATH=/usr/bin:/bin"]
    argv += ["python3", f"{INSIDE}/{script}"]
    print("+", shlex.join(argv), flush=True)
    sys.exit(subprocess.run(argv, check=False).returncode)


def extension_needs_newer_glibc(work: Path) -> None:
    _run_old("train_io.py")


def extension_needs_newer_libstdcxx(work: Path) -> None:
    _run_old("train_tok.py")


def extension_loads_user_keyerror(work: Path) -> None:
    _run_old("train_sum.py")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
