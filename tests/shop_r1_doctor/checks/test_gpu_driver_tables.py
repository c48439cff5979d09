"""Decision tables for the driver-vs-CUDA check: driver (NVML's CUDA or the driver table),
torch's CUDA build and the image's CUDA_VERSION, by OS and container, with minor
versions compared (CUDA 12.9 on a 12.8 driver is not fine just because both are 12).

Hand-derived from knowledge/compat.yaml: CUDA 12.x minor-version compatibility needs a
Linux driver >= 525.60.13 (13.x: >= 580.0); full CUDA 12.8 needs 570.26, 12.9 575.51.03,
13.0 580.65.06 (Windows: 12.8 570.65, 12.9 576.02).
"""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.gpu_driver import driver_vs_cuda_build
from shop_r1_doctor.facts import Facts

ERR, WARN = "error", "warning"
BARE, DOCKER = "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "CONTAINER_CUDA_GT_HOST_DRIVER"


def facts(driver, driver_cuda, torch, *, os="linux", container=None, image_cuda=None):
    snap = {
        "host": {"os": os, "container": container},
        "driver": {"version": driver, "cuda_version": driver_cuda},
        "env": {} if image_cuda is None else {"CUDA_VERSION": image_cuda},
    }
    if torch is not None:
        snap["torch"] = {"version": torch}  # the CUDA build comes from the wheel's local tag
    return Facts(snap)


# (case, driver, NVML CUDA, torch, os, container, image CUDA, expected [(code, severity)])
ROWS = [
    ("same CUDA", "580.65.06", "13.0", "2.11.0+cu130", "linux", None, None, []),
    ("older torch CUDA", "580.65.06", "13.0", "2.11.0+cu126", "linux", None, None, []),
    ("cpu torch", "470.0", "11.4", "2.13.0+cpu", "linux", None, None, []),
    # one minor newer, same major, driver above the 12.x floor: runs, warned
    (
        "12.9 on a 12.8 driver",
        "570.86.10",
        "12.8",
        "2.8.0+cu129",
        "linux",
        None,
        None,
        [(BARE, WARN)],
    ),
    (
        "12.8 on a 12.4 driver",
        "550.54.14",
        "12.4",
        "2.7.0+cu128",
        "linux",
        None,
        None,
        [(BARE, WARN)],
    ),
    # same major but below the minor-compatibility floor: an error
    (
        "12.1 on a 12.0 driver below 525.60.13",
        "525.60.12",
        "12.0",
        "2.4.0+cu121",
        "linux",
        None,
        None,
        [(BARE, ERR)],
    ),
    (
        "12.1 at the floor 525.60.13",
        "525.60.13",
        "12.0",
        "2.4.0+cu121",
        "linux",
        None,
        None,
        [(BARE, WARN)],
    ),
    # a newer major: no minor compatibility across majors
    (
        "13.0 on a 12.8 driver",
        "570.86.10",
        "12.8",
        "2.11.0+cu130",
        "linux",
        None,
        None,
        [(BARE, ERR)],
    ),
    # Windows has no minor-version compatibility
    ("windows 12.9 on 12.8", "572.16", "12.8", "2.8.0+cu129", "windows", None, None, [(BARE, ERR)]),
    ("windows same", "572.16", "12.8", "2.8.0+cu128", "windows", None, None, []),
    # in a container: the container code; the image's CUDA_VERSION is checked too
    (
        "docker torch newer",
        "570.86.10",
        "12.8",
        "2.11.0+cu130",
        "linux",
        "docker",
        None,
        [(DOCKER, ERR)],
    ),
    (
        "docker image newer minor",
        "570.86.10",
        "12.8",
        "2.7.0+cu128",
        "linux",
        "docker",
        "12.9.1",
        [(DOCKER, WARN)],
    ),
    (
        "docker image and torch newer",
        "570.86.10",
        "12.8",
        "2.11.0+cu130",
        "linux",
        "podman",
        "13.0.0",
        [(DOCKER, ERR), (DOCKER, ERR)],
    ),
    ("docker image older", "580.65.06", "13.0", "2.11.0+cu130", "linux", "docker", "12.8.0", []),
    # CUDA_VERSION outside a container is some shell variable: ignored
    (
        "bare metal CUDA_VERSION ignored",
        "570.86.10",
        "12.8",
        "2.7.0+cu128",
        "linux",
        None,
        "13.0",
        [],
    ),
    # no NVML CUDA: from the driver table (575.51.03 -> 12.9; 570.86.10 -> 12.8)
    ("table 12.9 driver, 12.9 torch", "575.51.03", None, "2.8.0+cu129", "linux", None, None, []),
    (
        "table 12.8 driver, 12.9 torch",
        "570.86.10",
        None,
        "2.8.0+cu129",
        "linux",
        None,
        None,
        [(BARE, WARN)],
    ),
    ("table windows 576.02 -> 12.9", "576.02", None, "2.8.0+cu129", "windows", None, None, []),
    (
        "table windows 572.16 -> 12.8",
        "572.16",
        None,
        "2.8.0+cu129",
        "windows",
        None,
        None,
        [(BARE, ERR)],
    ),
    # nothing to compare
    ("no driver", None, None, "2.11.0+cu130", "linux", None, None, []),
    ("driver older than every table row", "400.1", None, "2.11.0+cu130", "linux", None, None, []),
    ("no torch", "570.86.10", "12.8", None, "linux", None, None, []),
]


@pytest.mark.parametrize(
    ("case", "driver", "dcuda", "torch", "os", "container", "image", "want"),
    ROWS,
    ids=[r[0] for r in ROWS],
)
def test_driver_vs_cuda_table(case, driver, dcuda, torch, os, container, image, want):
    found = list(
        driver_vs_cuda_build(
            facts(driver, dcuda, torch, os=os, container=container, image_cuda=image)
        )
    )
    assert [(f.code, f.severity) for f in found] == want, [f.title for f in found]


def test_driver_finding_texts():
    (warn,) = driver_vs_cuda_build(facts("570.86.10", "12.8", "2.8.0+cu129"))
    assert warn.title == "torch 2.8.0+cu129 needs CUDA 12.9; driver 570.86.10 supports CUDA 12.8"
    assert "minor-version compatibility (driver >= 525.60.13 for CUDA 12.x)" in warn.detail
    assert "CUDA 12.9 needs driver >= 575.51.03" in warn.detail
    assert warn.fix == "upgrade the driver to >= 575.51.03"
    (err,) = driver_vs_cuda_build(facts("570.86.10", "12.8", "2.11.0+cu130"))
    assert err.title == "torch 2.11.0+cu130 needs CUDA 13.0; driver 570.86.10 supports CUDA 12.8"
    assert (
        "driver version is insufficient" in err.detail and "needs driver >= 580.65.06" in err.detail
    )
    assert err.fix.endswith("pip install torch --index-url https://download.pytorch.org/whl/cu128)")
    assert "CUDA <= 12.8" in err.fix
    (win,) = driver_vs_cuda_build(facts("572.16", "12.8", "2.8.0+cu129", os="windows"))
    assert "CUDA 12.9 needs driver >= 576.02" in win.detail
    (image,) = driver_vs_cuda_build(
        facts("570.86.10", "12.8", "2.7.0+cu128", container="docker", image_cuda="12.9.1")
    )
    assert image.title.startswith("the image's CUDA_VERSION needs CUDA 12.9")
