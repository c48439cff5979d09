"""Decision rows for torch's build against the machine's GPUs and the CUDA toolkit
(shop_r1_doctor/checks/torch_build.py): each row's codes, severities and the facts its
findings must name; the wording is in tests/fixtures/golden/checks/torch_build.txt.

Expectations are worked out by hand from knowledge/compat.yaml as it stands:
- wheel index for a GPU: cc >= 10.0 -> cu130, cc < 7.5 -> cu126, else cu130; kept only when
  the installed release is on it (2.7.1: cu118/cu126/cu128, default cu126; 2.9.0: cu126..cu130).
- official arch lists: 2.9.0+cu128 sm_70..sm_120 (no PTX); 2.9.0+cu130 sm_75..sm_120 + PTX 12.0.
- an arch runs on a GPU of the same major with minor <= the GPU's; PTX runs on any cc >= it.
- vLLM minimum cc: 7.0 below 0.20, 7.5 from 0.20; CUDA 13 torch needs cc >= 7.5.
- nvcc needed for the GPU's arch: cc >= 9.0 -> 11.8, cc >= 10.0 -> 12.8; a major mismatch
  with torch's CUDA matters (warning) only when something will compile CUDA code
  (deepspeed, apex, a flash-attn build), else info.
Unknown facts (no cc, no torch version, no arch list and an unknown variant) never fire."""

from __future__ import annotations

from typing import Any

import pytest
from check_wording import assert_row
from torch_build_facts import (
    A100,
    A6000,
    B200,
    B300,
    CU128,
    CU130,
    DS,
    FUTURE,
    GB10,
    H100,
    NO_CC,
    P100,
    RTX5090,
    T4,
    THOR,
    V100,
    WHL,
    arch_listed,
    torch_facts,
)

from shop_r1_doctor.checks.torch_build import (
    cuda_toolkit,
    ext_arch_list,
    gpu_too_old,
    torch_arch_covers_gpus,
    torch_cpu_only,
    torch_cuda_unavailable,
)


# ----------------------------------------------------------------- CPU-only torch, GPU present
def _cpu_only(tv: str, gpu: dict, pin: str, index: str) -> list[tuple]:
    fix = f"torch{pin} --index-url {WHL}/{index}"  # the release kept where the index has it
    return [("TORCH_CPU_ONLY_BUILD", "error", f"torch {tv}", gpu["name"], fix)]


def _cpu_snap(torch: dict, gpus: list) -> dict:
    return {"torch": torch, "gpus": gpus}


# (case, torch facts, gpus, and when it fires: the pin and the wheel index its fix names)
CPU_ROWS: list[tuple[Any, ...]] = [
    ("cpu wheel on an A100: cu130 has 2.9.0", torch_facts("2.9.0+cpu"), [A100], "==2.9.0", "cu130"),
    (
        "2.7.1 is not on cu130: its default index",
        torch_facts("2.7.1+cpu"),
        [A100],
        "==2.7.1",
        "cu126",
    ),
    ("V100 (cc 7.0 < 7.5): cu126", torch_facts("2.9.0+cpu"), [V100], "==2.9.0", "cu126"),
    ("T4 at the 7.5 line: cu130", torch_facts("2.9.0+cpu"), [T4], "==2.9.0", "cu130"),
    ("Blackwell: cu130", torch_facts("2.9.0+cpu"), [RTX5090], "==2.9.0", "cu130"),
    (
        "the oldest GPU picks the index, the first GPU is named",
        torch_facts("2.9.0+cpu"),
        [A100, V100],
        "==2.9.0",
        "cu126",
    ),
    ("cc unknown: taken as 8.0", torch_facts("2.9.0+cpu"), [NO_CC], "==2.9.0", "cu130"),
    ("a release on no index: no pin", torch_facts("1.3.1+cpu"), [A100], "", "cu130"),
    (
        "no local tag, torch.version.cuda None",
        torch_facts("2.9.0", None),
        [A100],
        "==2.9.0",
        "cu130",
    ),
    ("no GPU", torch_facts("2.9.0+cpu"), [], None, None),
    ("ROCm build has no CUDA version", torch_facts("2.9.0+rocm6.3", None), [A100], None, None),
    ("XPU build has no CUDA version", torch_facts("2.9.0+xpu", None), [A100], None, None),
    ("cuda build", torch_facts("2.9.0+cu128", "12.8"), [A100], None, None),
    ("cuda unknown (key absent)", torch_facts("2.9.0"), [A100], None, None),
]


@pytest.mark.parametrize(
    ("case", "torch", "gpus", "pin", "index"), CPU_ROWS, ids=[r[0] for r in CPU_ROWS]
)
def test_torch_cpu_only_row(case, torch, gpus, pin, index):
    want = [] if index is None else _cpu_only(torch["version"], gpus[0], pin, index)
    assert_row(torch_cpu_only, _cpu_snap(torch, gpus), want)


# no torch child facts: the version (and its +cpu tag) comes from the packages
CPU_FROM_PACKAGES = {"packages": {"torch": {"version": "2.9.0+cpu"}}, "gpus": [A100]}
NOTHING_SAYS_CPU = {"packages": {"torch": {"version": "2.9.0"}}, "gpus": [A100]}


def test_cpu_only_from_the_package_table_alone():
    want = _cpu_only("2.9.0+cpu", A100, "==2.9.0", "cu130")
    assert_row(torch_cpu_only, CPU_FROM_PACKAGES, want)
    assert_row(torch_cpu_only, NOTHING_SAYS_CPU, [])


# ----------------------------------------------------------------- arch list vs the GPUs
CU128_LISTED = " ".join(f"sm_{a}" for a in (70, 75, 80, 86, 90, 100, 120))
CU130_LISTED = " ".join(f"sm_{a}" for a in (75, 80, 86, 90, 100, 120))


def _no_kernels(code: str, gpu: dict, sm: str, tv: str = "2.9.0+cu128") -> tuple:
    return (code, "error", f"torch {tv}", f"{sm} (", gpu["name"])


def _arch_snap(torch: dict, gpus: list, pkgs: dict | None = None) -> dict:
    return {"torch": torch, "gpus": gpus, "packages": pkgs or {}}


# (case, torch facts, gpus, packages, expected [(code, severity, *facts)])
ARCH_ROWS: list[tuple[Any, ...]] = [
    ("sm_80 covers 8.6 (same major)", arch_listed("sm_80", "sm_90"), [A6000], {}, []),
    ("sm_90a counts as sm_90", arch_listed("sm_90a"), [H100], {}, []),
    (
        "sm_86 does not cover 8.0",
        arch_listed("sm_86"),
        [A100],
        {},
        [_no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", A100, "sm_80")],
    ),
    (
        "sm_80 does not cover 9.0",
        arch_listed("sm_80"),
        [H100],
        {},
        [_no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", H100, "sm_90")],
    ),
    (
        "no sm_100 for a B200",
        arch_listed("sm_80", "sm_90"),
        [B200],
        {},
        [_no_kernels("TORCH_NO_BLACKWELL_ARCH", B200, "sm_100")],
    ),
    ("PTX 9.0 JITs on a B200", arch_listed("sm_80", "sm_90", "compute_90"), [B200], {}, []),
    (
        "PTX 9.0 does not run on an older GPU",
        arch_listed("compute_90"),
        [A100],
        {},
        [_no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", A100, "sm_80")],
    ),
    ("sm_100 covers 10.3", arch_listed("sm_100"), [B300], {}, []),
    (
        "sm_120 with vLLM installed: vLLM's wheel is the cause",
        arch_listed("sm_90"),
        [RTX5090],
        {"vllm": {"version": "0.10.0"}},
        [
            (
                "VLLM_WHEEL_NO_SM120",
                "error",
                "vLLM 0.10.0",
                "torch 2.9.0+cu128",
                "sm_120",
                RTX5090["name"],
            )
        ],
    ),
    (
        "sm_120 without vLLM",
        arch_listed("sm_90"),
        [RTX5090],
        {"vllm": None},
        [_no_kernels("TORCH_NO_BLACKWELL_ARCH", RTX5090, "sm_120")],
    ),
    (
        "sm_100 with vLLM installed: torch's problem",
        arch_listed("sm_90"),
        [B200],
        {"vllm": {"version": "0.10.0"}},
        [_no_kernels("TORCH_NO_BLACKWELL_ARCH", B200, "sm_100")],
    ),
    (
        "cc 13.0 with vLLM installed: only 12.x blames vLLM",
        arch_listed("sm_90"),
        [FUTURE],
        {"vllm": {"version": "0.10.0"}},
        [_no_kernels("TORCH_NO_BLACKWELL_ARCH", FUTURE, "sm_130")],
    ),
    (
        "sm_120 covers 12.1, vLLM or not",
        arch_listed("sm_120"),
        [GB10],
        {"vllm": {"version": "0.10.0"}},
        [],
    ),
    (
        "one finding per cc, GPUs in order",
        arch_listed("sm_86"),
        [A100, A100, H100, NO_CC, A6000],
        {},
        [
            _no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", A100, "sm_80"),
            _no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", H100, "sm_90"),
        ],
    ),
    # no arch list from torch: the official wheel's row
    ("official cu128 has sm_70", CU128, [V100], {}, []),
    (
        "official cu128 has no Pascal",
        CU128,
        [P100],
        {},
        [_no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", P100, "sm_60")],
    ),
    (
        "official cu130 dropped Volta",
        CU130,
        [V100],
        {},
        [_no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", V100, "sm_70", "2.9.0+cu130")],
    ),
    ("official cu130 sm_120 covers 12.1", CU130, [GB10], {}, []),
    ("official cu130 PTX 12.0 covers 13.0", CU130, [FUTURE], {}, []),
    (
        "official cu130 PTX 12.0 does not cover 11.0",
        CU130,
        [THOR],
        {},
        [_no_kernels("TORCH_NO_BLACKWELL_ARCH", THOR, "sm_110", "2.9.0+cu130")],
    ),
    (
        "empty arch list counts as unknown",
        torch_facts("2.9.0+cu130", "13.0", arch_list=[]),
        [V100],
        {},
        [_no_kernels("TORCH_ARCH_UNSUPPORTED_GPU", V100, "sm_70", "2.9.0+cu130")],
    ),
    # unknown never fires
    ("a variant with no row", torch_facts("2.9.0+cu111", "11.1"), [P100], {}, []),
    ("no CUDA version at all", torch_facts("2.9.0"), [P100], {}, []),
    ("CPU build", torch_facts("2.9.0+cpu", arch_list=["sm_50"]), [A100], {}, []),
    ("cc unknown", arch_listed("sm_50"), [NO_CC], {}, []),
    ("no GPU", arch_listed("sm_50"), [], {}, []),
]


@pytest.mark.parametrize(
    ("case", "torch", "gpus", "pkgs", "want"), ARCH_ROWS, ids=[r[0] for r in ARCH_ROWS]
)
def test_torch_arch_row(case, torch, gpus, pkgs, want):
    assert_row(torch_arch_covers_gpus, _arch_snap(torch, gpus, pkgs), want)


# (case, torch facts, gpu, what the detail names: the arch list's source and the list)
ARCH_SOURCE_ROWS: list[tuple[Any, ...]] = [
    (
        "torch's own list",
        arch_listed("sm_86", "sm_90"),
        A100,
        ("get_arch_list()", ": sm_86 sm_90."),
    ),
    ("only PTX: no sm listed", arch_listed("compute_90"), A100, ("get_arch_list()", ": none.")),
    (
        "the official cu128 wheel's",
        CU128,
        P100,
        ("official cu128 wheel", "pytorch .ci/manywheel/build_cuda.sh", f": {CU128_LISTED}."),
    ),
    ("the official cu130 wheel's", CU130, V100, ("official cu130 wheel", f": {CU130_LISTED}.")),
]


@pytest.mark.parametrize(
    ("case", "torch", "gpu", "named"), ARCH_SOURCE_ROWS, ids=[r[0] for r in ARCH_SOURCE_ROWS]
)
def test_arch_detail_names_the_source_and_the_list(case, torch, gpu, named):
    assert_row(
        torch_arch_covers_gpus,
        _arch_snap(torch, [gpu]),
        [("TORCH_ARCH_UNSUPPORTED_GPU", "error", *named)],
    )


# (gpu, code, the wheel index the fix names)
ARCH, BLACKWELL = "TORCH_ARCH_UNSUPPORTED_GPU", "TORCH_NO_BLACKWELL_ARCH"
ARCH_FIX_ROWS = [
    (P100, ARCH, "cu126"),
    (V100, ARCH, "cu126"),
    (A100, ARCH, "cu130"),
    (B200, BLACKWELL, "cu130"),
    (RTX5090, BLACKWELL, "cu130"),
]


@pytest.mark.parametrize(
    ("gpu", "code", "index"), ARCH_FIX_ROWS, ids=[r[0]["name"] for r in ARCH_FIX_ROWS]
)
def test_arch_fix_index(gpu, code, index):
    want = [(code, "error", f"install --force-reinstall torch --index-url {WHL}/{index}")]
    assert_row(torch_arch_covers_gpus, _arch_snap(arch_listed("sm_90a"), [gpu]), want)


VERSION_UNKNOWN = {"torch": {"cuda": "12.8", "arch_list": ["sm_50"]}, "gpus": [A100]}


def test_torch_version_unknown_never_fires():
    assert_row(torch_arch_covers_gpus, VERSION_UNKNOWN, [])


# ----------------------------------------------------------------- GPU too old for the stack
TOO_OLD = "GPU_TOO_OLD_FOR_STACK"


def _vllm_below(gpu: dict, cc: str, who: str, min_cc: str) -> tuple:
    return (TOO_OLD, "error", gpu["name"], f"(cc {cc})", f"{who}'s", f"cc {min_cc}")


def _cu13_below(gpu: dict, cc: str) -> tuple:
    return (TOO_OLD, "error", "torch 2.9.0+cu130", "CUDA 13.0", gpu["name"], f"(cc {cc})")


def _old_snap(torch: dict, pkgs: dict, plan: dict, gpus: list) -> dict:
    return {"torch": torch, "packages": pkgs, "plan": plan, "gpus": gpus}


# (case, torch facts, packages, plan, gpus, expected [(code, severity, *facts)])
OLD_ROWS: list[tuple[Any, ...]] = [
    ("vLLM 0.10 on V100: at 7.0", CU128, {"vllm": {"version": "0.10.0"}}, {}, [V100], []),
    (
        "vLLM 0.10 on P100",
        CU128,
        {"vllm": {"version": "0.10.0"}},
        {},
        [P100],
        [_vllm_below(P100, "6.0", "vLLM 0.10.0", "7.0")],
    ),
    ("vLLM 0.19.1 on V100: old rule", CU128, {"vllm": {"version": "0.19.1"}}, {}, [V100], []),
    (
        "vLLM 0.20 on V100: needs 7.5",
        CU128,
        {"vllm": {"version": "0.20.0"}},
        {},
        [V100],
        [_vllm_below(V100, "7.0", "vLLM 0.20.0", "7.5")],
    ),
    ("vLLM 0.20 on T4: at 7.5", CU128, {"vllm": {"version": "0.20.0"}}, {}, [T4], []),
    (
        "vLLM planned, not installed",
        CU128,
        {"vllm": None},
        {"use_vllm": True},
        [P100],
        [_vllm_below(P100, "6.0", "vLLM", "7.0")],
    ),
    ("vLLM planned, V100", CU128, {"vllm": None}, {"use_vllm": True}, [V100], []),
    ("no vLLM, CUDA 12.8, P100", CU128, {"vllm": None}, {"use_vllm": False}, [P100], []),
    (
        "vLLM's finding stands for CUDA 13's too",
        CU130,
        {"vllm": {"version": "0.20.0"}},
        {},
        [V100],
        [_vllm_below(V100, "7.0", "vLLM 0.20.0", "7.5")],
    ),
    (
        "vLLM fine, CUDA 13 is not",
        CU130,
        {"vllm": {"version": "0.10.0"}},
        {},
        [V100],
        [_cu13_below(V100, "7.0")],
    ),
    ("CUDA 13 on T4: at 7.5", CU130, {}, {}, [T4], []),
    (
        "CUDA 13, each GPU",
        CU130,
        {},
        {},
        [V100, A100, P100, NO_CC],
        [_cu13_below(V100, "7.0"), _cu13_below(P100, "6.0")],
    ),
    ("CUDA 12.8 on V100", CU128, {}, {}, [V100], []),
    ("a GPU of unknown cc first", CU130, {}, {}, [NO_CC, V100], [_cu13_below(V100, "7.0")]),
    (
        "vLLM, every old GPU",
        CU128,
        {"vllm": {"version": "0.20.0"}},
        {},
        [P100, V100],
        [
            _vllm_below(P100, "6.0", "vLLM 0.20.0", "7.5"),
            _vllm_below(V100, "7.0", "vLLM 0.20.0", "7.5"),
        ],
    ),
    ("CUDA unknown", torch_facts("2.9.0"), {}, {}, [P100], []),
    (
        "CUDA 13 read from the local tag",
        torch_facts("2.9.0+cu130"),
        {},
        {},
        [V100],
        [_cu13_below(V100, "7.0")],
    ),
]


@pytest.mark.parametrize(
    ("case", "torch", "pkgs", "plan", "gpus", "want"), OLD_ROWS, ids=[r[0] for r in OLD_ROWS]
)
def test_gpu_too_old_row(case, torch, pkgs, plan, gpus, want):
    assert_row(gpu_too_old, _old_snap(torch, pkgs, plan, gpus), want)


# (case, snapshot, what the finding names: the rule quoted, its source, the remedy)
OLD_NAMED_ROWS: list[tuple[Any, ...]] = [
    (
        "vLLM 0.20's rule, from its PR",
        _old_snap(CU128, {"vllm": {"version": "0.20.0"}}, {}, [V100]),
        ("below 7.5 are not supported", "(vllm PR", "use_vllm=false"),
    ),
    (
        "vLLM planned, not installed: the docs' rule",
        _old_snap(CU128, {"vllm": None}, {"use_vllm": True}, [P100]),
        ("below 7.0 are not supported", "(vLLM docs)", "use_vllm=false"),
    ),
    (
        "CUDA 13: the cu130 source, a cu126 torch",
        _old_snap(CU130, {}, {}, [V100]),
        ("cc >= 7.5", "(pytorch cu130", f"--index-url {WHL}/cu126"),
    ),
]


@pytest.mark.parametrize(
    ("case", "snap", "named"), OLD_NAMED_ROWS, ids=[r[0] for r in OLD_NAMED_ROWS]
)
def test_too_old_names_the_rule_and_source(case, snap, named):
    assert_row(gpu_too_old, snap, [(TOO_OLD, "error", *named)])


# ----------------------------------------------------------------- torch sees no CUDA
def _unavailable_snap(torch: dict, gpus: list, env: dict) -> dict:
    return {"torch": torch, "gpus": gpus, "env": env}


# (case, torch facts, gpus, env, what the detail names or None)
UNAVAILABLE_ROWS: list[tuple[Any, ...]] = [
    (
        "is_available False",
        {**CU128, "cuda_available": False},
        [A100],
        {},
        "torch.cuda.is_available()",
    ),
    (
        "the error is the detail",
        {**CU128, "cuda_available": False, "error": "CUDA driver version is insufficient"},
        [A100],
        {},
        "CUDA driver version is insufficient",
    ),
    (
        "a non-text error is ignored",
        {**CU128, "cuda_available": False, "error": 3},
        [A100],
        {},
        "torch.cuda.is_available()",
    ),
    ("available", {**CU128, "cuda_available": True}, [A100], {}, None),
    ("not probed", CU128, [A100], {}, None),
    ("no GPU", {**CU128, "cuda_available": False}, [], {}, None),
    ("CPU build", {**torch_facts("2.9.0+cpu", None), "cuda_available": False}, [A100], {}, None),
    (
        "CUDA_VISIBLE_DEVICES explains it",
        {**CU128, "cuda_available": False},
        [A100],
        {"CUDA_VISIBLE_DEVICES": "0"},
        None,
    ),
]


@pytest.mark.parametrize(
    ("case", "torch", "gpus", "env", "detail"),
    UNAVAILABLE_ROWS,
    ids=[r[0] for r in UNAVAILABLE_ROWS],
)
def test_torch_cuda_unavailable_row(case, torch, gpus, env, detail):
    named = ("torch 2.9.0+cu128", A100["name"], detail)
    want = [] if detail is None else [("TORCH_CUDA_UNAVAILABLE", "error", *named)]
    assert_row(torch_cuda_unavailable, _unavailable_snap(torch, gpus, env), want)


def test_unavailable_without_torch_facts():
    assert_row(torch_cuda_unavailable, {"gpus": [A100]}, [])


# ----------------------------------------------------------------- TORCH_CUDA_ARCH_LIST
def _ext_snap(value: str | None, gpus: list) -> dict:
    return {"env": {} if value is None else {"TORCH_CUDA_ARCH_LIST": value}, "gpus": gpus}


# (case, value or None, gpus, expected uncovered ccs)
EXT_ROWS: list[tuple[Any, ...]] = [
    ("covers the H100", "8.0;9.0", [H100], []),
    ("8.0 covers 8.6", "8.0", [A6000], []),
    ("8.6 does not cover 8.0", "8.6", [A100], ["8.0"]),
    ("no 10.0", "8.0;9.0", [A100, B200], ["10.0"]),
    ("+PTX covers newer", "9.0+PTX", [B200], []),
    ("commas and spaces", "7.5, 8.0 9.0", [T4, A100, H100], []),
    ("sorted by cc, once each", "8.0", [B200, T4, B200, NO_CC], ["7.5", "10.0"]),
    ("unset", None, [P100], []),
    ("empty", "", [P100], []),
    ("no GPU", "8.0", [], []),
]


@pytest.mark.parametrize(("case", "value", "gpus", "want"), EXT_ROWS, ids=[r[0] for r in EXT_ROWS])
def test_ext_arch_list_row(case, value, gpus, want):
    named = [(f"TORCH_CUDA_ARCH_LIST={value!r}", f"cc {cc}", f'"{cc}+PTX"') for cc in want]
    expected = [("EXT_BUILD_ARCH_LIST_MISSES_GPU", "warning", *n) for n in named]
    assert_row(ext_arch_list, _ext_snap(value, gpus), expected)


# ----------------------------------------------------------------- nvcc vs torch and the GPUs
NVCC = "/usr/local/cuda/bin/nvcc"
TK_124 = {"nvcc_version": "12.4", "nvcc": NVCC, "cuda_home": "/usr/local/cuda"}


def _mismatch(sev: str, nvcc: str = NVCC) -> tuple:
    named = ("nvcc 12.4", f"({nvcc})", "torch 2.9.0+cu130", "CUDA 13.0")
    return ("CUDA_TOOLKIT_TORCH_MISMATCH_BUILD", sev, *named, "toolkit 13.x")


def _nvcc_too_old(nvcc: str, cc: str, need: str) -> tuple:
    return ("NVCC_TOO_OLD_FOR_ARCH", "warning", f"nvcc {nvcc}", f"cc {cc}", f"CUDA >= {need}")


def _toolkit_snap(tk: dict, torch: dict | None, pkgs: dict, plan: dict, gpus: list) -> dict:
    snap = {"cuda_toolkit": tk, "packages": pkgs, "plan": plan, "gpus": gpus}
    return snap if torch is None else {**snap, "torch": torch}


# (case, cuda_toolkit, torch, packages, plan, gpus, expected [(code, severity, *facts)])


NVCC = "/usr/local/cuda/bin/nvcc"
TK_124 = {"nvcc_version": "12.4", "nvcc": NVCC, "cuda_home": "/usr/local/cuda"}
TOOLKIT_ROWS: list[tuple[Any, ...]] = [
    (
        "nvcc 12.4, torch cu130, nothing to build",
        TK_124,
        CU130,
        {},
        {},
        [A100],
        [_mismatch("info")],
    ),
    ("same major", TK_124, CU128, {}, {}, [A100], []),
    ("deepspeed builds ops", TK_124, CU130, DS, {}, [A100], [_mismatch("warning")]),
    (
        "apex builds",
        TK_124,
        CU130,
        {"apex": {"version": "0.1"}},
        {},
        [A100],
        [_mismatch("warning")],
    ),
    ("deepspeed absent", TK_124, CU130, {"deepspeed": None}, {}, [A100], [_mismatch("info")]),
    (
        "flash-attn wanted, not installed: a build",
        TK_124,
        CU130,
        {"flash-attn": None},
        {"attn_implementation": "flash_attention_2"},
        [A100],
        [_mismatch("warning")],
    ),
    (
        "flash-attn wanted and installed",
        TK_124,
        CU130,
        {"flash-attn": {"version": "2.8.3"}},
        {"attn_implementation": "flash_attention_2"},
        [A100],
        [_mismatch("info")],
    ),
    (
        "flash-attn not looked for",
        TK_124,
        CU130,
        {},
        {"attn_implementation": "flash_attention_2"},
        [A100],
        [_mismatch("info")],
    ),
    (
        "sdpa needs no build",
        TK_124,
        CU130,
        {"flash-attn": None},
        {"attn_implementation": "sdpa"},
        [A100],
        [_mismatch("info")],
    ),
    (
        "nvcc path unknown",
        {"nvcc_version": "12.4"},
        CU130,
        {},
        {},
        [A100],
        [_mismatch("info", "on PATH")],
    ),
    ("torch CUDA unknown", TK_124, torch_facts("2.9.0"), {}, {}, [A100], []),
    # nvcc too old for the newest GPU (only when something builds)
    (
        "nvcc 12.6 for a B200",
        {"nvcc_version": "12.6"},
        CU128,
        DS,
        {},
        [A100, B200],
        [_nvcc_too_old("12.6", "10.0", "12.8")],
    ),
    ("nvcc 12.8 for a B200: at the line", {"nvcc_version": "12.8"}, CU128, DS, {}, [B200], []),
    ("nvcc 12.6 for a B200, no build", {"nvcc_version": "12.6"}, CU128, {}, {}, [B200], []),
    (
        "nvcc 11.7 for an H100",
        {"nvcc_version": "11.7"},
        torch_facts("2.0.0+cu117", "11.7"),
        DS,
        {},
        [H100],
        [_nvcc_too_old("11.7", "9.0", "11.8")],
    ),
    (
        "nvcc 11.8 for an H100",
        {"nvcc_version": "11.8"},
        torch_facts("2.0.0+cu118", "11.8"),
        DS,
        {},
        [H100],
        [],
    ),
    (
        "no row below Hopper",
        {"nvcc_version": "11.0"},
        torch_facts("2.0.0+cu110", "11.0"),
        DS,
        {},
        [A100],
        [],
    ),
    (
        "cc unknown",
        {"nvcc_version": "11.0"},
        torch_facts("2.0.0+cu110", "11.0"),
        DS,
        {},
        [NO_CC],
        [],
    ),
    # several nvcc on PATH
    (
        "two nvcc in two dirs",
        {"nvcc_on_path": ["/usr/local/cuda-12.8/bin/nvcc", 5, "/usr/bin/nvcc"]},
        None,
        {},
        {},
        [],
        [("NVCC_MULTIPLE_ON_PATH", "info", "2 nvcc", "/usr/local/cuda-12.8/bin/nvcc")],
    ),
    (
        "the same dir twice",
        {"nvcc_on_path": ["/usr/bin/nvcc", "/usr/bin/nvcc"]},
        None,
        {},
        {},
        [],
        [],
    ),
    # deepspeed without any toolkit
    (
        "deepspeed, no toolkit",
        {"cuda_home": None, "nvcc": None, "nvcc_on_path": []},
        None,
        DS,
        {},
        [],
        [("CUDA_HOME_MISSING_DEEPSPEED", "error", "deepspeed 0.17.0", "CUDA_HOME")],
    ),
    (
        "no toolkit, no deepspeed",
        {"cuda_home": None, "nvcc": None},
        None,
        {"deepspeed": None},
        {},
        [],
        [],
    ),
    ("CUDA_HOME not looked at", {"nvcc": None}, None, DS, {}, [], []),
    ("nvcc not looked at", {"cuda_home": None}, None, DS, {}, [], []),
    ("CUDA_HOME set", {"cuda_home": "/usr/local/cuda", "nvcc": None}, None, DS, {}, [], []),
    ("nvcc found", {"cuda_home": None, "nvcc": NVCC}, None, DS, {}, [], []),
    (
        "nvcc on PATH",
        {"cuda_home": None, "nvcc": None, "nvcc_on_path": [NVCC]},
        None,
        DS,
        {},
        [],
        [],
    ),
    (
        "a version alone",
        {"cuda_home": None, "nvcc": None, "nvcc_version": "12.8"},
        None,
        DS,
        {},
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    ("case", "tk", "torch", "pkgs", "plan", "gpus", "want"),
    TOOLKIT_ROWS,
    ids=[r[0] for r in TOOLKIT_ROWS],
)
def test_cuda_toolkit_row(case, tk, torch, pkgs, plan, gpus, want):
    assert_row(cuda_toolkit, _toolkit_snap(tk, torch, pkgs, plan, gpus), want)


# (case, snapshot, expected [(code, severity, *facts)])
TOOLKIT_NAMED_ROWS: list[tuple[Any, ...]] = [
    (
        "the toolkit to install, and the source of the 12.8 line",
        {"cuda_toolkit": TK_124, "torch": CU130, "packages": DS, "gpus": [B200]},
        [
            (*_mismatch("warning"), "CUDA_HOME=/usr/local/cuda-13.0"),
            (*_nvcc_too_old("12.4", "10.0", "12.8"), "Blackwell"),
        ],
    ),
    (
        "each nvcc on its own line",
        {"cuda_toolkit": {"nvcc_on_path": ["/a/bin/nvcc", "/b/bin/nvcc"]}},
        [("NVCC_MULTIPLE_ON_PATH", "info", "/a/bin/nvcc\n/b/bin/nvcc")],
    ),
    # each check writes its own fix: the code's generic fix (codes.yaml) would lose the
    # fact that matters
    (
        "nvcc 11.7: the CUDA to install",
        {"cuda_toolkit": {"nvcc_version": "11.7"}, "packages": DS, "gpus": [H100]},
        [_nvcc_too_old("11.7", "9.0", "11.8")],
    ),
    ("no toolkit section is not a missing toolkit", {"packages": DS}, []),
]


@pytest.mark.parametrize(
    ("case", "snap", "want"), TOOLKIT_NAMED_ROWS, ids=[r[0] for r in TOOLKIT_NAMED_ROWS]
)
def test_toolkit_names_the_versions(case, snap, want):
    assert_row(cuda_toolkit, snap, want)


VLLM_ON_SM120 = _arch_snap(arch_listed("sm_90"), [RTX5090], {"vllm": {"version": "0.10.0"}})


def test_vllm_wheel_fix_upgrades_vllm_not_torch():
    assert_row(
        torch_arch_covers_gpus,
        VLLM_ON_SM120,
        [("VLLM_WHEEL_NO_SM120", "error", "pip install -U vllm")],
    )


SNAPSHOTS = [
    *[(r[0], _cpu_snap(*r[1:3])) for r in CPU_ROWS],
    ("CPU build from the packages", CPU_FROM_PACKAGES),
    ("nothing says CPU", NOTHING_SAYS_CPU),
    *[(r[0], _arch_snap(*r[1:4])) for r in ARCH_ROWS],
    *[(r[0], _arch_snap(r[1], [r[2]])) for r in ARCH_SOURCE_ROWS],
    *[
        (f"arch fix {r[0]['name']}", _arch_snap(arch_listed("sm_90a"), [r[0]]))
        for r in ARCH_FIX_ROWS
    ],
    ("torch version unknown", VERSION_UNKNOWN),
    *[(r[0], _old_snap(*r[1:5])) for r in OLD_ROWS],
    *[(r[0], r[1]) for r in OLD_NAMED_ROWS],
    *[(r[0], _unavailable_snap(*r[1:4])) for r in UNAVAILABLE_ROWS],
    *[(r[0], _ext_snap(*r[1:3])) for r in EXT_ROWS],
    *[(r[0], _toolkit_snap(*r[1:6])) for r in TOOLKIT_ROWS],
    *[(r[0], r[1]) for r in TOOLKIT_NAMED_ROWS],
]
