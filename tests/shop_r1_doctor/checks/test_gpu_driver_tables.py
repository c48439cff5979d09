"""Decision tables for the driver-vs-CUDA check: driver (NVML's CUDA or the driver table),
torch's CUDA build and the image's CUDA_VERSION, by OS and container, with minor
versions compared (CUDA 12.9 on a 12.8 driver is not fine just because both are 12).
Rows assert codes, severities and the facts the findings must name (the versions, the
minimum driver written as NVIDIA writes it: 576.02, not packaging's normalised 576.2); the
wording is in tests/fixtures/golden/checks/gpu_driver.txt.

Hand-derived from knowledge/compat.yaml: CUDA 12.x minor-version compatibility needs a
Linux driver >= 525.60.13 (13.x: >= 580.0); full CUDA 12.8 needs 570.26, 12.9 575.51.03,
13.0 580.65.06 (Windows: 12.8 570.65, 12.9 576.02).
"""

from __future__ import annotations

from typing import Any

import pytest
from check_wording import assert_row, text

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
ROWS: list[tuple[Any, ...]] = [
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


def _table_facts(driver, dcuda, torch, os, container, image) -> Facts:
    return facts(driver, dcuda, torch, os=os, container=container, image_cuda=image)


@pytest.mark.parametrize(
    ("case", "driver", "dcuda", "torch", "os", "container", "image", "want"),
    ROWS,
    ids=[r[0] for r in ROWS],
)
def test_driver_vs_cuda_table(case, driver, dcuda, torch, os, container, image, want):
    assert_row(driver_vs_cuda_build, _table_facts(driver, dcuda, torch, os, container, image), want)


# ----------------------------------------------------------------- what the findings name
# (case, facts, expected [(code, severity, *facts)])
NAMED_ROWS: list[tuple[Any, ...]] = [
    (
        "one minor newer: minor-version compatibility, the floor and the minimum",
        facts("570.86.10", "12.8", "2.8.0+cu129"),
        [
            (
                BARE,
                WARN,
                "torch 2.8.0+cu129",
                "CUDA 12.9",
                "570.86.10",
                "CUDA 12.8",
                "525.60.13",
                "CUDA 12.x",
                "575.51.03",
            )
        ],
    ),
    (
        "a newer major: the minimum, and a torch the driver runs",
        facts("570.86.10", "12.8", "2.11.0+cu130"),
        [
            (
                BARE,
                ERR,
                "torch 2.11.0+cu130",
                "CUDA 13.0",
                "570.86.10",
                "580.65.06",
                "CUDA <= 12.8",
                "--index-url https://download.pytorch.org/whl/cu128",
            )
        ],
    ),
    (
        "windows: its own minimum",
        facts("572.16", "12.8", "2.8.0+cu129", os="windows"),
        [(BARE, ERR, "576.02")],
    ),
    (
        "the image's CUDA_VERSION",
        facts("570.86.10", "12.8", "2.7.0+cu128", container="docker", image_cuda="12.9.1"),
        [(DOCKER, WARN, "CUDA_VERSION", "CUDA 12.9", "570.86.10", "CUDA 12.8")],
    ),
    # Windows needs 576.02 for CUDA 12.9 (Linux: 575.51.03): the driver's CUDA by OS
    (
        "windows 575.60 and a cu129 torch",
        Facts(
            {
                "host": {"os": "windows"},
                "driver": {"version": "575.60"},
                "torch": {"version": "2.8.0+cu129"},
            }
        ),
        [
            (
                BARE,
                ERR,
                "torch 2.8.0+cu129",
                "CUDA 12.9",
                "575.60",
                "CUDA 12.8",
                "576.02",
            )
        ],
    ),
    (
        "linux 575.60 and a cu129 torch",
        Facts(
            {
                "host": {"os": "linux"},
                "driver": {"version": "575.60"},
                "torch": {"version": "2.8.0+cu129"},
            }
        ),
        [],
    ),
    # OS unknown: read as Linux, so minor-version compatibility applies
    (
        "no OS, one minor newer",
        Facts(
            {
                "driver": {"version": "570.86.10", "cuda_version": "12.8"},
                "torch": {"version": "2.8.0+cu129"},
            }
        ),
        [(BARE, WARN, "torch 2.8.0+cu129", "570.86.10", "575.51.03")],
    ),
    # NVML names the CUDA without the driver's version
    (
        "driver version unknown",
        Facts(
            {
                "host": {"os": "linux"},
                "driver": {"cuda_version": "12.4"},
                "torch": {"version": "2.8.0+cu128"},
            }
        ),
        [(BARE, WARN, "torch 2.8.0+cu128", "CUDA 12.8", "the driver", "CUDA 12.4", "570.26")],
    ),
    # the torch build and the image's CUDA_VERSION are both checked
    (
        "container: torch and the image both newer",
        Facts(
            {
                "host": {"os": "linux", "container": "docker"},
                "driver": {"version": "570.86.10", "cuda_version": "12.8"},
                "torch": {"version": "2.8.0+cu129"},
                "env": {"CUDA_VERSION": "12.9.1"},
            }
        ),
        [
            (DOCKER, WARN, "torch 2.8.0+cu129", "CUDA 12.9", "CUDA 12.8", "575.51.03"),
            (DOCKER, WARN, "CUDA_VERSION", "CUDA 12.9", "CUDA 12.8", "575.51.03"),
        ],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), NAMED_ROWS, ids=[r[0] for r in NAMED_ROWS])
def test_driver_vs_cuda_names(case, snap, want):
    assert_row(driver_vs_cuda_build, snap, want)


NO_WINDOWS_MINIMUM = Facts(
    {
        "host": {"os": "windows"},
        "driver": {"version": "576.02"},
        "torch": {"version": "2.9.0+cu130"},
    }
)


def test_no_windows_minimum_listed_says_none_rather_than_a_placeholder():
    # compat.yaml lists no Windows driver for CUDA 13.0: no minimum named, no "?" for one
    want = [(BARE, ERR, "torch 2.9.0+cu130", "CUDA 13.0", "576.02", "CUDA 12.9")]
    assert_row(driver_vs_cuda_build, NO_WINDOWS_MINIMUM, want)
    (f,) = driver_vs_cuda_build(NO_WINDOWS_MINIMUM)
    assert ">=" not in f.detail and "?" not in text(f)


SNAPSHOTS = [
    *[(r[0], _table_facts(*r[1:7])) for r in ROWS],
    *[(r[0], r[1]) for r in NAMED_ROWS],
    ("no Windows minimum for CUDA 13.0", NO_WINDOWS_MINIMUM),
]
