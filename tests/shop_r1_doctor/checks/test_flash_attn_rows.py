"""Decision rows for the flash-attn checks (shop_r1_doctor/checks/flash_attn.py): each row's
codes, severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/flash_attn.txt.

Worked out by hand from knowledge/compat.yaml as it stands:
- features: flash_attention_2 cc >= 8.0 (dist flash-attn, module flash_attn);
  flash_attention_3 cc 9.0 only (flash-attn-3, flash_attn_interface); flash_attention_4
  cc 9.0-10.3 (flash-attn-4, flash_attn.cute);
- prebuilt wheels (released rows only): 2.8.3 for torch 2.4-2.9 on CUDA 12 (torch 2.9:
  Python 3.12 only), 2.8.2 for torch 2.4-2.7.1; none for torch 2.10+ or CUDA 13 yet;
- torch's C++ ABI when the torch probe did not say: cxx11abiTRUE from torch 2.7, FALSE before;
- sm_120 kernels from flash-attn 2.8.3.post1;
- a flash-attn wheel tagged cxx11abiX for this torch's version must match torch's ABI; an
  undefined C++ symbol otherwise means a build for another torch;
- a source build takes ~9 GB per parallel job: MAX_JOBS = max(1, RAM // 9 GiB), said when
  that is below the CPU count."""

from __future__ import annotations

from typing import Any

import pytest
from check_wording import assert_row
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
    _imports,
    _plan,
    machine,
)
from torch_build_facts import A100, B200, B300, GB10, H100, NO_CC, RTX5090, T4, V100

from shop_r1_doctor.checks.flash_attn import (
    blackwell_kernels,
    broken_build,
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
def _gpu_finding(code: str, title: str, *facts: str) -> tuple:
    return (code, "error", title, *facts)


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
                "issue #762",
                'attn_implementation="sdpa"',
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
                "issue #762",
                'attn_implementation="sdpa"',
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
                "hopper/ README",
                'attn_implementation="sdpa"',
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
                "hopper/ README",
                '"sdpa" (or "flash_attention_2")',
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
                "flash_attn/cute README",
                '"sdpa" (or "flash_attention_2")',
            )
        ],
    ),
    ("GPUs without a cc", "flash_attention_2", [NO_CC], []),
]


@pytest.mark.parametrize(("case", "impl", "gpus", "want"), GPU_ROWS, ids=[r[0] for r in GPU_ROWS])
def test_requested_gpu_row(case, impl, gpus, want):
    snap = {**machine(), "gpus": gpus, "packages": INSTALLED, "plan": _plan(impl)}
    assert_row(requested, snap, want)


@pytest.mark.parametrize("impl", ["sdpa", "eager", None, "flash_attention_5"])
def test_requested_needs_a_flash_attention_plan(impl):
    snap = {**machine(), "gpus": [T4], "packages": {"flash-attn": None}}
    if impl is not None:
        snap["plan"] = _plan(impl)
    assert_row(requested, snap, [])


# ----------------------------------------------------------------- requested: installed, importable
def _not_importable(impl: str, dist: str, version: str, err: str) -> tuple:
    return (
        "FA_REQUESTED_NOT_INSTALLED",
        "error",
        f"{impl} requested but {dist} {version}",
        err,
        f"--force-reinstall {dist}",
    )


def _missing(impl: str, dist: str, install: str) -> tuple:
    return (
        "FA_REQUESTED_NOT_INSTALLED",
        "error",
        f"attn_implementation={impl} but {dist}",
        install,
    )


def _no_wheel(what: str, os: str = "linux") -> tuple:
    return (
        "FA_NO_PREBUILT_WHEEL",
        "warning",
        f"no prebuilt flash-attn wheel for {what} on {os}",
    )


def _oom(cpus: int, gib: int, jobs: int) -> tuple:
    return (
        "FA_BUILD_OOM_NO_MAX_JOBS",
        "warning",
        f"{cpus} parallel jobs needs ~{cpus * 9} GB",
        f"has {gib} GiB",
        f"MAX_JOBS={jobs} /opt/torch/.venv/bin/python3 -m pip install flash-attn",
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
                "python3 -m pip install flash-attn-3 --no-build-isolation",
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
                "python3 -m pip install flash-attn --no-build-isolation",
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
                "python3 -m pip install flash-attn --no-build-isolation",
            ),
            _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)"),
        ],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), INSTALL_ROWS, ids=[r[0] for r in INSTALL_ROWS])
def test_requested_install_row(case, snap, want):
    assert_row(requested, snap, want)


# ----------------------------------------------------------------- a source build
def _build(ram: Any, cpus: Any, env: dict | None = None, **host: Any) -> dict:
    snap = machine("2.11.0+cu130", "13.0", packages={"flash-attn": None}, plan=FA2, env=env or {})
    snap["host"] = {**snap["host"], "ram_bytes": ram, "cpu_count": cpus, **host}
    return snap


BUILD = _missing(
    "flash_attention_2",
    "flash-attn",
    "python3 -m pip install flash-attn --no-build-isolation",
)
NO_WHEEL_211 = _no_wheel("torch 2.11.0+cu130 (CUDA 13.0)")
LONG_PATH = ("FA_WINDOWS_LONG_PATH", "warning", "long paths disabled", "260 characters")
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
    assert_row(requested, snap, want)


# ----------------------------------------------------------------- a broken build
def _fa(
    version: str,
    torch: Any = "2.8.0+cu128",
    abi: Any = True,
    plan: dict | None = None,
    **imports: Any,
) -> dict:
    snap = machine(torch, "12.8" if torch and "cu128" in torch else None, abi=abi)
    snap["packages"] = {"flash-attn": {"version": version}}
    if imports:
        snap["imports"] = _imports(**imports)
    if plan is not None:
        snap["plan"] = plan
    return snap


def _abi(
    raw: str,
    tag: str,
    torch: str,
    want: str,
    severity: str = "warning",
    *facts: str,
    url: str = URL_28_TRUE,
) -> tuple:
    return (
        "FA_CXX11_ABI_WHEEL_MISMATCH",
        severity,
        f"flash-attn {raw} is a cxx11abi{tag} build",
        f"torch {torch} uses cxx11abi{want}",
        *facts,
        f"wheel named cxx11abi{want} ({url})",
    )


def _symbol(fv: str, built: str, torch: str, *fix: str, severity: str = "warning") -> tuple:
    return (
        "FA_TORCH_ABI_UNDEFINED_SYMBOL",
        severity,
        f"flash-attn {fv}{built} does not load with torch {torch}",
        ERR_SYMBOL,
        *fix,
    )


FALSE_WHEEL = "2.8.3+cu12torch2.8cxx11abiFALSE"
REINSTALL = "--force-reinstall --no-deps flash-attn==2.8.3"
BROKEN_ROWS = [
    (
        "a cxx11abiFALSE wheel on a TRUE torch",
        _fa(FALSE_WHEEL),
        [_abi(FALSE_WHEEL, "FALSE", "2.8.0+cu128", "TRUE")],
    ),
    (
        "the plan asks for FA2: an error, with the import error",
        _fa(FALSE_WHEEL, plan=FA2, flash_attn_2_cuda=ERR_SYMBOL),
        [_abi(FALSE_WHEEL, "FALSE", "2.8.0+cu128", "TRUE", "error", ERR_SYMBOL)],
    ),
    (
        "the plan asks for sdpa",
        _fa(FALSE_WHEEL, plan=_plan("sdpa")),
        [_abi(FALSE_WHEEL, "FALSE", "2.8.0+cu128", "TRUE")],
    ),
    ("the tag matches torch's ABI", _fa("2.8.3+cu12torch2.8cxx11abiTRUE"), []),
    (
        "a TRUE wheel on a FALSE torch (2.6, from the table)",
        _fa("2.8.3+cu12torch2.6cxx11abiTRUE", "2.6.0+cu124", abi=None),
        [_abi("2.8.3+cu12torch2.6cxx11abiTRUE", "TRUE", "2.6.0+cu124", "FALSE", url=URL_26_FALSE)],
    ),
    (
        "no wheel to name for torch 2.11",
        _fa("2.8.3+cu12torch2.11cxx11abiFALSE", "2.11.0+cu130"),
        [
            _abi(
                "2.8.3+cu12torch2.11cxx11abiFALSE",
                "FALSE",
                "2.11.0+cu130",
                "TRUE",
                url="see the release page",
            )
        ],
    ),
    # built for another torch: the ABI flag says nothing about this one
    ("a tag for torch 2.7 on torch 2.8", _fa("2.8.3+cu12torch2.7cxx11abiFALSE"), []),
    ("torch unknown: the tag alone", _fa(FALSE_WHEEL, None, abi=None), []),
    ("no tag", _fa("2.8.3"), []),
    ("ABI unknown", _fa(FALSE_WHEEL, "2.11.0", abi=None), []),
    # undefined symbol without an ABI mismatch: another torch
    (
        "undefined symbol, plain version",
        _fa("2.8.3", flash_attn_2_cuda=ERR_SYMBOL),
        [
            _symbol(
                "2.8.3",
                "",
                "2.8.0+cu128",
                REINSTALL,
                f"# or: /opt/torch/.venv/bin/python3 -m pip install {URL_28_TRUE}",
            )
        ],
    ),
    (
        "undefined symbol, a tag for torch 2.7",
        _fa("2.8.3+cu12torch2.7cxx11abiTRUE", plan=FA2, flash_attn=ERR_SYMBOL),
        [
            _symbol(
                "2.8.3+cu12torch2.7cxx11abitrue",
                " (built for torch 2.7)",
                "2.8.0+cu128",
                REINSTALL,
                f"# or: /opt/torch/.venv/bin/python3 -m pip install {URL_28_TRUE}",
                severity="error",
            )
        ],
    ),
    (
        "undefined symbol, no wheel for this torch",
        _fa("2.8.3", "2.11.0+cu130", flash_attn_2_cuda=ERR_SYMBOL),
        [_symbol("2.8.3", "", "2.11.0+cu130", REINSTALL)],
    ),
    ("another import error", _fa("2.8.3", flash_attn_2_cuda=ERR_DRIVER), []),
    # no version to name: nothing to say (and nothing raised)
    ("version unparseable", _fa("a.b", flash_attn_2_cuda=ERR_SYMBOL), []),
    (
        "version missing",
        {**_fa("2.8.3", flash_attn_2_cuda=ERR_SYMBOL), "packages": {"flash-attn": {}}},
        [],
    ),
    (
        "not installed",
        {
            **machine(),
            "packages": {"flash-attn": None},
            "imports": _imports(flash_attn_2_cuda=ERR_SYMBOL),
        },
        [],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), BROKEN_ROWS, ids=[r[0] for r in BROKEN_ROWS])
def test_broken_build_row(case, snap, want):
    assert_row(broken_build, snap, want)


# ----------------------------------------------------------------- sm_120 kernels
def _sm120(fv: str, name: str, severity: str = "warning") -> list[tuple]:
    return [
        (
            "FA_BLACKWELL_SM120_KERNELS",
            severity,
            f"flash-attn {fv}",
            name,
            '"flash-attn>=2.8.3.post1"',
        )
    ]


def _sm120_snap(fv: str, gpus: list, plan: dict | None) -> dict:
    snap: dict = {"gpus": gpus, "packages": {"flash-attn": {"version": fv}}}
    if plan is not None:
        snap["plan"] = plan
    return snap


SM120_ROWS = [
    ("2.8.3 on an RTX 5090", "2.8.3", [RTX5090], None, _sm120("2.8.3", RTX5090["name"])),
    ("2.8.3.post1: at the line", "2.8.3.post1", [RTX5090], None, []),
    ("2.8.4", "2.8.4", [RTX5090], None, []),
    (
        "2.7.4.post1 on a GB10 (cc 12.1)",
        "2.7.4.post1",
        [GB10],
        None,
        _sm120("2.7.4.post1", GB10["name"]),
    ),
    ("the plan asks for FA2", "2.8.3", [RTX5090], FA2, _sm120("2.8.3", RTX5090["name"], "error")),
    ("the plan asks for sdpa", "2.8.3", [RTX5090], _plan("sdpa"), _sm120("2.8.3", RTX5090["name"])),
    ("B200 (cc 10.0)", "2.8.3", [B200], None, []),
    ("a cc 13 GPU", "2.8.3", [{"name": "NVIDIA Next", "compute_capability": "13.0"}], None, []),
    ("no cc", "2.8.3", [NO_CC], None, []),
    ("named once for two", "2.8.3", [H100, GB10, RTX5090], None, _sm120("2.8.3", GB10["name"])),
]


@pytest.mark.parametrize(
    ("case", "fv", "gpus", "plan", "want"), SM120_ROWS, ids=[r[0] for r in SM120_ROWS]
)
def test_blackwell_kernels_row(case, fv, gpus, plan, want):
    assert_row(blackwell_kernels, _sm120_snap(fv, gpus, plan), want)


def test_blackwell_kernels_needs_flash_attn():
    assert_row(blackwell_kernels, {"gpus": [RTX5090], "packages": {"flash-attn": None}}, [])
    assert_row(blackwell_kernels, {"gpus": [RTX5090]}, [])


SNAPSHOTS = [
    *[(r[0], r[1]) for r in URL_ROWS + INSTALL_ROWS + BUILD_ROWS + BROKEN_ROWS],
    *[
        (c, {**machine(), "gpus": gpus, "packages": INSTALLED, "plan": _plan(impl)})
        for c, impl, gpus, _ in GPU_ROWS
    ],
    *[(c, _sm120_snap(fv, gpus, plan)) for c, fv, gpus, plan, _ in SM120_ROWS],
]
