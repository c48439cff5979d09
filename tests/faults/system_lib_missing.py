"""A package whose native library needs an OS library this machine does not have: OpenCV's
wheel (opencv-python) links libGL.so.1 and libgthread-2.0.so.0, which a slim container
image (python:3.11-slim, a CUDA runtime image) does not ship.

`prepare` installs opencv-python's wheel (pip download once, then pip install --no-deps
--target) into the cache, on the driver's path. The OS library is hidden in a private
mount namespace: an overlay over /usr/lib/x86_64-linux-gnu whose upper layer holds a
whiteout for it, so the loader finds neither its ld.so.cache entry nor the file, as on a
system where the package was never installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "system_lib_missing"
EXPECTED = ("SYSTEM_LIB_MISSING",)
WHEEL = "opencv-python==5.0.0.93"
ENV = "SHOP_R1_FAULT_OPENCV_SITE"
LIBDIR = "/usr/lib/x86_64-linux-gnu"


def _hide(*names: str) -> tuple[str, ...]:
    """Wrapper lines: an overlay over LIBDIR with a whiteout (char device 0/0) per name."""
    ovl = "{work}/ovl"
    lines = [f"mkdir -p {ovl} && mount -t tmpfs tmpfs {ovl} && mkdir {ovl}/u {ovl}/w"]
    lines += [f"mknod {ovl}/u/{name} c 0 0" for name in names]
    lines.append(
        f"mount -t overlay overlay -o lowerdir={LIBDIR},upperdir={ovl}/u,workdir={ovl}/w {LIBDIR}"
    )
    return tuple(lines)


CASES = (
    FaultCase(
        FAMILY,
        "opencv_import_no_libgl",
        EXPECTED,
        f"{WHEEL} installed (--target), libGL.so.1 hidden (an overlay over {LIBDIR} with a"
        " whiteout for it, private mount namespace), as in a slim image without libgl1: a"
        " data-loading script's `import cv2`",
        namespace_setup=_hide("libGL.so.1"),
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "opencv_import_no_gthread",
        EXPECTED,
        "the same with libGL present and libgthread-2.0.so.0 hidden (an image without"
        " libglib2.0-0's libgthread): `import cv2`",
        namespace_setup=_hide("libgthread-2.0.so.0"),
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "ctypes_cdll_no_libgl",
        EXPECTED,
        "libGL.so.1 hidden the same way: a renderer's `ctypes.CDLL('libGL.so.1')` (as"
        " PyOpenGL and headless rendering for vision datasets load it)",
        namespace_setup=_hide("libGL.so.1"),
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "opencv_imread_missing_file",
        (),
        "the user's own bug, every library present: cv2.imread of an image path that does not"
        " exist returns None, then `.shape` (AttributeError)",
        prepare="prepare",
        timeout=60,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    site = cache / "opencv-site"
    if not (site / "cv2").exists():
        wheels = cache / "opencv-wheel"
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        argv += ["-q", WHEEL, "-d", str(wheels)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
        found = sorted(wheels.glob("opencv_python-*.whl"))
        if proc.returncode != 0 or not found:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise Unavailable(f"pip could not download {WHEEL}: {last}")
        partial = site.with_name(site.name + ".partial")
        argv = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q"]
        argv += ["--target", str(partial), str(found[0])]
        subprocess.run(["rm", "-rf", str(partial)], check=True)
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
        if proc.returncode != 0:
            raise Unavailable(f"pip could not install {found[0].name}: {proc.stderr[-200:]}")
        os.replace(partial, site)
    return {ENV: str(site)}


def _with_opencv() -> None:
    sys.path.insert(0, os.environ[ENV])


def opencv_import_no_libgl(work: Path) -> None:
    _with_opencv()
    import cv2  # type: ignore[import-not-found]

    print(cv2.__version__)


def opencv_import_no_gthread(work: Path) -> None:
    opencv_import_no_libgl(work)


def ctypes_cdll_no_libgl(work: Path) -> None:
    import ctypes

    gl = ctypes.CDLL("libGL.so.1")
    print(gl)


def opencv_imread_missing_file(work: Path) -> None:
    _with_opencv()
    import cv2

    image = cv2.imread(str(work / "images" / "0001.jpg"))
    print(image.shape)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
