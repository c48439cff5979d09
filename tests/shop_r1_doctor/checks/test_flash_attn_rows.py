"""Decision rows for the flash-attn checks (shop_r1_doctor/checks/flash_attn.py), each with
its exact findings.

Worked out by hand from knowledge/compat.yaml as it stands:
- features: flash_attention_2 cc >= 8.0 (dist flash-attn, module flash_attn);
  flash_attention_3 cc 9.0 only (flash-attn-3, flash_attn_interface); flash_attention_4
  cc 9.0-10.3 (flash-attn-4, flash_attn.cute);
- prebuilt wheels (released rows only): 2.8.3 for torch 2.4-2.9 on CUDA 12 (torch 2.9:
  Python 3.12 only), 2.8.2 for torch 2.4-2.7.1; none for torch 2.10+ or CUDA 13 yet;
- torch's C++ ABI when the torch probe did not say: cxx11abiTRUE from torch 2.7, FALSE before;
- sm_120 kernels from flash-attn 2.8.3.post1;
- a source build takes ~9 GB per parallel job: MAX_JOBS = max(1, RAM // 9 GiB), said when
  that is below the CPU count."""

from __future__ import annotations

from typing import Any

import pytest
from flash_attn_facts import (
    ERR_DRIVER,
    ERR_MISSING,
    ERR_SYMBOL,
    FA2,
    GIB,
    H200,
    REL,
    URL_26_FALSE,
    URL_28_TRUE,
    _all,
    _fix,
    _imports,
    _plan,
    machine,
)
from torch_build_facts import A100, B200, B300, H100, NO_CC, RTX5090, T4, V100

from shop_r1_doctor.checks.flash_attn import (
    requested,
    wheel_url,
)
from shop_r1_doctor.facts import Facts

URL_ROWS = [
    ("torch 2.8 cu128, Python 3.12, x86_64", machine(), URL_28_TRUE),
    ("aarch64", machine(arch="aarch64"), URL_28_TRUE.replace("x86_64", "aarch64")),
    ("ppc64le: no wheel", machine(arch="ppc64le"), None),
    ("arch unknown", machine(arch=None), None),
    # the ABI from the table when the torch probe did not say: < 2.7 is cxx11abiFALSE
    ("torch 2.6, ABI from the table", machine("2.6.0+cu124", "12.4", abi=None), URL_26_FALSE),
    (
        "torch 2.7, ABI from the table",
        machine("2.7.1+cu126", "12.6", abi=None),
        URL_28_TRUE.replace("torch2.8", "torch2.7"),
    ),
    (
        "the probe's ABI wins",
        machine("2.6.0+cu124", "12.4", abi=True),
        URL_26_FALSE.replace("FALSE", "TRUE"),
    ),
    (
        "torch 2.9 on Python 3.12",
        machine("2.9.0+cu128"),
        URL_28_TRUE.replace("torch2.8", "torch2.9"),
    ),
    ("torch 2.9 on Python 3.11: none", machine("2.9.0+cu128", py="3.11.9"), None),
    (
        "Python 3.11, torch 2.8",
        machine(py="3.11.9"),
        URL_28_TRUE.replace("cp312-cp312", "cp311-cp311"),
    ),
    ("Python '3.12' (no patch)", machine(py="3.12"), URL_28_TRUE),
    ("the H200 box: torch 2.11 has none", H200, None),
    ("CUDA 13: none", machine("2.9.0+cu130", "13.0"), None),
    ("the CUDA from the wheel tag", machine("2.8.0+cu128", cuda=None), URL_28_TRUE),
    ("CPU torch", machine("2.8.0+cpu", cuda=None), None),
    ("no torch", machine(None), None),
    (
        "torch from the package list",
        {**machine(None), "packages": {"torch": {"version": "2.8.0+cu128"}}},
        URL_28_TRUE,
    ),
    ("Windows", machine(os="windows"), None),
    ("OS unknown", machine(os=None), None),
    ("Python unknown", machine(py=None), None),
    ("Python '3'", machine(py="3"), None),
    ("Python '3.x'", machine(py="3.x"), None),
    ("Python 'x.12'", machine(py="x.12"), None),
    (
        "torch 2.3: the 2.7.4.post1 wheel",
        machine("2.3.1+cu121", "12.1", abi=None),
        f"{REL}/v2.7.4.post1/flash_attn-2.7.4.post1+cu12torch2.3cxx11abiFALSE-cp312-cp312-linux_x86_64.whl",
    ),
    ("torch 2.1.1: older than every wheel", machine("2.1.1+cu121", "12.1", abi=None), None),
]


@pytest.mark.parametrize(("case", "snap", "url"), URL_ROWS, ids=[r[0] for r in URL_ROWS])
def test_wheel_url_row(case, snap, url):
    assert wheel_url(Facts(snap)) == url


# ----------------------------------------------------------------- requested: the GPU
def _gpu_finding(code: str, title: str, detail: str, fix: str) -> tuple:
    return (code, "error", title, detail, fix)


FA2_SRC = "flash-attention README (Ampere, Ada, Hopper); issue #762"
FA3_SRC = (
    "flash-attention hopper/ README (FA3 Hopper only); transformers FA3 dispatch needs cc >= 9.0"
)
FA4_SRC = "flash-attention flash_attn/cute README (Hopper and Blackwell)"
AMPERE = "'FlashAttention only supports Ampere GPUs or newer.'"
SDPA = 'attn_implementation="sdpa"'
SDPA2 = 'attn_implementation="sdpa" (or "flash_attention_2")'
INSTALLED = {
    "flash-attn": {"version": "2.8.3"},
    "flash-attn-3": {"version": "3.0.0"},
    "flash-attn-4": {"version": "4.0.0b1"},
}

GPU_ROWS = [
    (
        "FA2 on a T4",
        "flash_attention_2",
        [T4],
        [
            _gpu_finding(
                "FA_PRE_AMPERE_GPU",
                "flash_attention_2 needs cc >= 8.0; Tesla T4 is cc 7.5",
                f"{AMPERE} ({FA2_SRC})",
                SDPA,
            )
        ],
    ),
    ("FA2 on an A100: at the line", "flash_attention_2", [A100], []),
    ("FA2 on a B300", "flash_attention_2", [B300], []),
    (
        "FA2: the first old GPU is named, once",
        "flash_attention_2",
        [NO_CC, A100, V100, T4],
        [
            _gpu_finding(
                "FA_PRE_AMPERE_GPU",
                "flash_attention_2 needs cc >= 8.0; Tesla V100-SXM2-32GB is cc 7.0",
                f"{AMPERE} ({FA2_SRC})",
                SDPA,
            )
        ],
    ),
    (
        "FA3 on an A100",
        "flash_attention_3",
        [A100],
        [
            _gpu_finding(
                "FA3_UNSUPPORTED_GPU",
                "flash_attention_3 needs cc >= 9.0; NVIDIA A100-SXM4-80GB is cc 8.0",
                f"{AMPERE} ({FA3_SRC})",
                SDPA,
            )
        ],
    ),
    ("FA3 on an H100", "flash_attention_3", [H100], []),
    (
        "FA3 on a B200",
        "flash_attention_3",
        [H100, B200],
        [
            _gpu_finding(
                "FA3_UNSUPPORTED_GPU",
                "flash_attention_3 runs on cc 9.0-9.0 only; NVIDIA B200 is cc 10.0",
                FA3_SRC,
                SDPA2,
            )
        ],
    ),
    ("FA4 on a B300: at the top", "flash_attention_4", [B300], []),
    (
        "FA4 on an RTX 5090",
        "flash_attention_4",
        [RTX5090],
        [
            _gpu_finding(
                "FA3_UNSUPPORTED_GPU",
                "flash_attention_4 runs on cc 9.0-10.3 only; NVIDIA GeForce RTX 5090 is cc 12.0",
                FA4_SRC,
                SDPA2,
            )
        ],
    ),
    ("GPUs without a cc", "flash_attention_2", [NO_CC], []),
]


@pytest.mark.parametrize(("case", "impl", "gpus", "want"), GPU_ROWS, ids=[r[0] for r in GPU_ROWS])
def test_requested_gpu_row(case, impl, gpus, want):
    snap = {**machine(), "gpus": gpus, "packages": INSTALLED, "plan": _plan(impl)}
    assert _all(requested, snap) == want


@pytest.mark.parametrize("impl", ["sdpa", "eager", None, "flash_attention_5"])
def test_requested_needs_a_flash_attention_plan(impl):
    snap = {**machine(), "gpus": [T4], "packages": {"flash-attn": None}}
    if impl is not None:
        snap["plan"] = _plan(impl)
    assert _all(requested, snap) == []


# ----------------------------------------------------------------- requested: installed, importable
NOT_INSTALLED_DETAIL = (
    "transformers raises 'FlashAttention2 has been toggled on, but it cannot be used ... the "
    "package flash_attn seems to be not installed.' at model load."
)
NO_WHEEL_DETAIL = (
    "pip prints 'Precompiled wheel not found. Building from source...' and compiles for an "
    "hour or more (needs nvcc matching torch's CUDA major)."
)
NO_WHEEL_FIX = (
    'attn_implementation="sdpa", or a torch covered by flash-attn wheels (2.4-2.8 on CUDA 12)'
)


def _not_importable(impl: str, dist: str, version: str, err: str) -> tuple:
    return (
        "FA_REQUESTED_NOT_INSTALLED",
        "error",
        f"{impl} requested but {dist} {version} does not import",
        err,
        f'/opt/torch/.venv/bin/python3 -m pip install --no-build-isolation --force-reinstall {dist}, or attn_implementation="sdpa"',
    )


def _missing(impl: str, dist: str, install: str) -> tuple:
    return (
        "FA_REQUESTED_NOT_INSTALLED",
        "error",
        f"attn_implementation={impl} but {dist} is not installed",
        NOT_INSTALLED_DETAIL,
        f'{install}   # or attn_implementation="sdpa"',
    )


def _no_wheel(what: str, os: str = "linux") -> tuple:
    return (
        "FA_NO_PREBUILT_WHEEL",
        "warning",
        f"no prebuilt flash-attn wheel for {what} on {os}",
        NO_WHEEL_DETAIL,
        NO_WHEEL_FIX,
    )


def _oom(cpus: int, gib: int, jobs: int) -> tuple:
    return (
        "FA_BUILD_OOM_NO_MAX_JOBS",
        "warning",
        f"building flash-attn with {cpus} parallel jobs needs ~{cpus * 9} GB; this machine has {gib} GiB",
        "ninja starts one nvcc per core, several GB each: the build is Killed or the machine freezes.",
        f"MAX_JOBS={jobs} /opt/torch/.venv/bin/python3 -m pip install flash-attn --no-build-isolation",
    )


INSTALL_ROWS = [
    (
        "installed, imports",
        machine(
            packages={"flash-attn": {"version": "2.8.3"}},
            imports=_imports(flash_attn=True, flash_attn_2_cuda=True),
            plan=FA2,
        ),
        [],
    ),
    (
        "installed, imports not probed",
        machine(packages={"flash-attn": {"version": "2.8.3"}}, plan=FA2),
        [],
    ),
    (
        "installed, the package does not import",
        machine(
            packages={"flash-attn": {"version": "2.8.3"}},
            imports=_imports(flash_attn=ERR_DRIVER),
            plan=FA2,
        ),
        [_not_importable("flash_attention_2", "flash-attn", "2.8.3", ERR_DRIVER)],
    ),
    (
        "installed, its extension does not import",
        machine(
            packages={"flash-attn": {"version": "2.8.3"}},
            imports=_imports(flash_attn=True, flash_attn_2_cuda=ERR_DRIVER),
            plan=FA2,
        ),
        [_not_importable("flash_attention_2", "flash-attn", "2.8.3", ERR_DRIVER)],
    ),
    (
        "the import failed without a message",
        machine(
            packages={"flash-attn": {"version": "2.8.3"}},
            imports={"flash_attn_2_cuda": {"ok": False}},
            plan=FA2,
        ),
        [
            _not_importable(
                "flash_attention_2", "flash-attn", "2.8.3", "import flash_attn_2_cuda failed"
            )
        ],
    ),
    # an undefined symbol is broken_build's finding
    (
        "undefined symbol",
        machine(
            packages={"flash-attn": {"version": "2.8.3"}},
            imports=_imports(flash_attn_2_cuda=ERR_SYMBOL),
            plan=FA2,
        ),
        [],
    ),
    # the package list was not read: whether it is installed is unknown, so nothing is said
    (
        "package list unknown, import failed",
        {**machine(imports=_imports(flash_attn=ERR_MISSING), plan=FA2), "packages": None},
        [],
    ),
    (
        "FA3 installed, its module does not import",
        machine(
            gpus=[H100],
            packages={"flash-attn-3": {"version": "3.0.0"}},
            imports=_imports(flash_attn_interface=ERR_DRIVER, flash_attn_2_cuda=ERR_DRIVER),
            plan=_plan("flash_attention_3"),
        ),
        [_not_importable("flash_attention_3", "flash-attn-3", "3.0.0", ERR_DRIVER)],
    ),
    # FA3 does not load flash_attn_2_cuda: its failure is not FA3's
    (
        "FA3 installed, only flash_attn_2_cuda fails",
        machine(
            packages={"flash-attn-3": {"version": "3.0.0"}},
            imports=_imports(flash_attn_interface=True, flash_attn_2_cuda=ERR_DRIVER),
            plan=_plan("flash_attention_3"),
        ),
        [],
    ),
    (
        "FA4: its package is flash_attn",
        machine(
            packages={"flash-attn-4": {"version": "4.0.0b1"}},
            imports=_imports(flash_attn=ERR_DRIVER),
            plan=_plan("flash_attention_4"),
        ),
        [_not_importable("flash_attention_4", "flash-attn-4", "4.0.0b1", ERR_DRIVER)],
    ),
    # not installed: the wheel for this torch when one exists
    (
        "missing, torch 2.8 cu128: the wheel",
        machine(packages={"flash-attn": None}, plan=FA2),
        [
            _missing(
                "flash_attention_2",
                "flash-attn",
                f"/opt/torch/.venv/bin/python3 -m pip install {URL_28_TRUE}",
            )
        ],
    ),
    (
        "FA3 missing: no wheel URL, no build advice",
        machine(packages={"flash-attn-3": None}, plan=_plan("flash_attention_3")),
        [
            _missing(
                "flash_attention_3",
                "flash-attn-3",
                "/opt/torch/.venv/bin/python3 -m pip install flash-attn-3 --no-build-isolation",
            )
        ],
    ),
    (
        "missing on the H200 box: a source build, 27 jobs",
        {**H200, "packages": {**H200["packages"], "flash-attn": None}, "plan": FA2},
        [
            _missing(
                "flash_attention_2",
                "flash-attn",
                "/opt/torch/.venv/bin/python3 -m pip install flash-attn --no-build-isolation",
            ),
            _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)"),
            # 270334464000 // (9 x 2**30) = 27 < 32 CPUs
            _oom(32, 251, 27),
        ],
    ),
    (
        "missing, MAX_JOBS set",
        {**H200, "packages": {"flash-attn": None}, "plan": FA2, "env": {"MAX_JOBS": "4"}},
        [
            _missing(
                "flash_attention_2",
                "flash-attn",
                "/opt/torch/.venv/bin/python3 -m pip install flash-attn --no-build-isolation",
            ),
            _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)"),
        ],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), INSTALL_ROWS, ids=[r[0] for r in INSTALL_ROWS])
def test_requested_install_row(case, snap, want):
    assert _all(requested, snap) == want


# ----------------------------------------------------------------- a source build
def _build(ram: Any, cpus: Any, env: dict | None = None, **host: Any) -> dict:
    snap = machine("2.11.0+cu130", "13.0", packages={"flash-attn": None}, plan=FA2, env=env or {})
    snap["host"] = {**snap["host"], "ram_bytes": ram, "cpu_count": cpus, **host}
    return snap


BUILD = _missing(
    "flash_attention_2",
    "flash-attn",
    "/opt/torch/.venv/bin/python3 -m pip install flash-attn --no-build-isolation",
)
NO_WHEEL_211 = _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)")
LONG_PATH = (
    "FA_WINDOWS_LONG_PATH",
    "warning",
    "building flash-attn on Windows with long paths disabled fails ('Filename too long')",
    "The source tree (composable_kernel) has paths over 260 characters.",
    _fix("FA_WINDOWS_LONG_PATH"),
)
BUILD_ROWS = [
    ("RAM for exactly 32 jobs", _build(32 * 9 * GIB, 32), [BUILD, NO_WHEEL_211]),
    ("one byte less", _build(32 * 9 * GIB - 1, 32), [BUILD, NO_WHEEL_211, _oom(32, 287, 31)]),
    ("under 9 GiB: still one job", _build(8 * GIB, 2), [BUILD, NO_WHEEL_211, _oom(2, 8, 1)]),
    ("one CPU", _build(4 * GIB, 1), [BUILD, NO_WHEEL_211]),
    ("RAM unknown", _build(None, 32), [BUILD, NO_WHEEL_211]),
    ("CPUs unknown", _build(8 * GIB, None), [BUILD, NO_WHEEL_211]),
    (
        "Windows, long paths off",
        _build(None, None, os="windows", windows_long_paths=False),
        [BUILD, _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)", "windows"), LONG_PATH],
    ),
    (
        "Windows, long paths unknown",
        _build(None, None, os="windows", windows_long_paths=None),
        [BUILD, _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)", "windows"), LONG_PATH],
    ),
    (
        "Windows, long paths on",
        _build(None, None, os="windows", windows_long_paths=True),
        [BUILD, _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)", "windows")],
    ),
    (
        "OS unknown",
        _build(None, None, os=None),
        [BUILD, _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)", "this OS")],
    ),
    (
        "CPU torch: no CUDA to name",
        {**_build(None, None), "torch": {"version": "2.8.0+cpu", "cuda": None}},
        [BUILD, _no_wheel("torch 2.8.0+cpu")],
    ),
    ("no torch", {**_build(None, None), "torch": None}, [BUILD, _no_wheel("this torch")]),
]


@pytest.mark.parametrize(("case", "snap", "want"), BUILD_ROWS, ids=[r[0] for r in BUILD_ROWS])
def test_source_build_row(case, snap, want):
    assert _all(requested, snap) == want
