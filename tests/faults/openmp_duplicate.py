"""Two copies of the OpenMP runtime in one process: Intel's libiomp5 (which MKL, conda's
torch and numpy builds, and many wheels bundle under their own folders) refuses to start
when another copy of itself is already initialized, and aborts the process (OMP: Error #15),
as users meet it on macOS (libomp.dylib beside libiomp5) and Windows (libiomp5md.dll twice).

`prepare` unpacks the intel-openmp wheel once and places its libiomp5.so in two package
folders, as two installed packages each bundling it. The driver's script loads the first
package's runtime and runs a parallel region, then imports the second package, whose copy
starts: the abort. The negative loads one copy and fails on the user's own KeyError.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from .case import FaultCase, Unavailable, default_cache, download_wheel, drive

FAMILY = "openmp_duplicate"
ENV = "SHOP_R1_FAULT_LIBIOMP5_DIRS"
WHEEL = "intel_openmp==2026.2.0"  # the name as the wheel file spells it
EXPECTED = ("OPENMP_RUNTIME_DUPLICATE",)
CASES = (
    FaultCase(
        FAMILY,
        "two_packages_bundle_libiomp5",
        EXPECTED,
        "a script loads pkg_a's bundled libiomp5.so (intel-openmp 2026.2.0) and runs"
        " omp_get_max_threads, then pkg_b's own copy of libiomp5.so (ctypes.CDLL each, as"
        " their extension modules load them)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "one_runtime_user_keyerror",
        (),
        "the same script with pkg_a's runtime only; the user's own code reads a config key it"
        " never set (KeyError)",
        prepare="prepare",
        timeout=60,
    ),
)

SCRIPTS = {
    "two_packages_bundle_libiomp5": """\
import ctypes, os, sys

a_dir, b_dir = sys.argv[1], sys.argv[2]
pkg_a = ctypes.CDLL(os.path.join(a_dir, "libiomp5.so"))
print("pkg_a threads:", pkg_a.omp_get_max_threads(), flush=True)
pkg_b = ctypes.CDLL(os.path.join(b_dir, "libiomp5.so"))
print("pkg_b threads:", pkg_b.omp_get_max_threads(), flush=True)
""",
    "one_runtime_user_keyerror": """\
import ctypes, os, sys

pkg_a = ctypes.CDLL(os.path.join(sys.argv[1], "libiomp5.so"))
config = {"num_workers": pkg_a.omp_get_max_threads()}
print("pkg_a threads:", config["num_workers"], flush=True)
shards = config["num_shards"]
""",
}


def prepare(cache: Path) -> dict[str, str]:
    """Two package folders, each holding its own copy of intel-openmp's libiomp5.so."""
    root = cache / "libiomp5-twice"
    dirs = [root / "pkg_a" / ".libs", root / "pkg_b" / ".libs"]
    if not all((d / "libiomp5.so").exists() for d in dirs):
        wheel = download_wheel(WHEEL, default_cache() / "intel-openmp-wheel")
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if n.endswith("/lib/libiomp5.so")]
            if not names:
                raise Unavailable(f"{wheel.name} holds no lib/libiomp5.so")
            for d in dirs:
                d.mkdir(parents=True, exist_ok=True)
                with zf.open(names[0]) as src, (d / "libiomp5.so").open("wb") as dst:
                    shutil.copyfileobj(src, dst)
    return {ENV: os.pathsep.join(str(d) for d in dirs)}


def _run(work: Path, name: str) -> None:
    (work / "train.py").write_text(SCRIPTS[name], encoding="utf-8")
    dirs = os.environ[ENV].split(os.pathsep)
    argv = [sys.executable, "train.py", *dirs]
    print("+", shlex.join([Path(sys.executable).name, "train.py", "pkg_a/.libs", "pkg_b/.libs"]))
    sys.stdout.flush()
    env = {k: v for k, v in os.environ.items() if k != "KMP_DUPLICATE_LIB_OK"}
    sys.exit(subprocess.run(argv, cwd=work, env=env, check=False).returncode)


def two_packages_bundle_libiomp5(work: Path) -> None:
    _run(work, "two_packages_bundle_libiomp5")


def one_runtime_user_keyerror(work: Path) -> None:
    _run(work, "one_runtime_user_keyerror")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
