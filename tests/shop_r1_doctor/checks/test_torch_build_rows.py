"""Decision rows for torch's build against the machine's GPUs (shop_r1_doctor/checks/torch_build.py;
the CUDA toolkit's rows are in test_torch_build_rows_toolkit.py).

Expectations are worked out by hand from knowledge/compat.yaml as it stands:
- wheel index for a GPU: cc >= 10.0 -> cu130, cc < 7.5 -> cu126, else cu130; kept only when
  the installed release is on it (2.7.1: cu118/cu126/cu128, default cu126; 2.9.0: cu126..cu130).
- official arch lists: 2.9.0+cu128 sm_70..sm_120 (no PTX); 2.9.0+cu130 sm_75..sm_120 + PTX 12.0.
- an arch runs on a GPU of the same major with minor <= the GPU's; PTX runs on any cc >= it.
- vLLM minimum cc: 7.0 below 0.20, 7.5 from 0.20; CUDA 13 torch needs cc >= 7.5.
Unknown facts (no cc, no torch version, no arch list and an unknown variant) never fire."""

from __future__ import annotations

import pytest
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
from shop_r1_doctor.facts import Facts

# ----------------------------------------------------------------- CPU-only torch, GPU present
# (case, torch facts, gpus, expected [(title, fix)])
CPU_ROWS = [
    (
        "cpu wheel on an A100: cu130 has 2.9.0",
        torch_facts("2.9.0+cpu"),
        [A100],
        [
            (
                f"torch 2.9.0+cpu is a CPU-only build but {A100['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu130",
            )
        ],
    ),
    (
        "2.7.1 is not on cu130: its default index",
        torch_facts("2.7.1+cpu"),
        [A100],
        [
            (
                f"torch 2.7.1+cpu is a CPU-only build but {A100['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.7.1 --index-url {WHL}/cu126",
            )
        ],
    ),
    (
        "V100 (cc 7.0 < 7.5): cu126",
        torch_facts("2.9.0+cpu"),
        [V100],
        [
            (
                f"torch 2.9.0+cpu is a CPU-only build but {V100['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu126",
            )
        ],
    ),
    (
        "T4 at the 7.5 line: cu130",
        torch_facts("2.9.0+cpu"),
        [T4],
        [
            (
                f"torch 2.9.0+cpu is a CPU-only build but {T4['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu130",
            )
        ],
    ),
    (
        "Blackwell: cu130",
        torch_facts("2.9.0+cpu"),
        [RTX5090],
        [
            (
                f"torch 2.9.0+cpu is a CPU-only build but {RTX5090['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu130",
            )
        ],
    ),
    (
        "the oldest GPU picks the index, the first GPU is named",
        torch_facts("2.9.0+cpu"),
        [A100, V100],
        [
            (
                f"torch 2.9.0+cpu is a CPU-only build but {A100['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu126",
            )
        ],
    ),
    (
        "cc unknown: taken as 8.0",
        torch_facts("2.9.0+cpu"),
        [NO_CC],
        [
            (
                f"torch 2.9.0+cpu is a CPU-only build but {NO_CC['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu130",
            )
        ],
    ),
    (
        "a release on no index: no pin",
        torch_facts("1.3.1+cpu"),
        [A100],
        [
            (
                f"torch 1.3.1+cpu is a CPU-only build but {A100['name']} is present",
                f"python3 -m pip install --force-reinstall torch --index-url {WHL}/cu130",
            )
        ],
    ),
    (
        "no local tag, torch.version.cuda None",
        torch_facts("2.9.0", None),
        [A100],
        [
            (
                f"torch 2.9.0 is a CPU-only build but {A100['name']} is present",
                f"python3 -m pip install --force-reinstall torch==2.9.0 --index-url {WHL}/cu130",
            )
        ],
    ),
    ("no GPU", torch_facts("2.9.0+cpu"), [], []),
    ("ROCm build has no CUDA version", torch_facts("2.9.0+rocm6.3", None), [A100], []),
    ("XPU build has no CUDA version", torch_facts("2.9.0+xpu", None), [A100], []),
    ("cuda build", torch_facts("2.9.0+cu128", "12.8"), [A100], []),
    ("cuda unknown (key absent)", torch_facts("2.9.0"), [A100], []),
]


@pytest.mark.parametrize(("case", "torch", "gpus", "want"), CPU_ROWS, ids=[r[0] for r in CPU_ROWS])
def test_torch_cpu_only_row(case, torch, gpus, want):
    found = list(torch_cpu_only(Facts({"torch": torch, "gpus": gpus})))
    assert [(f.title, f.fix) for f in found] == want
    assert all(f.code == "TORCH_CPU_ONLY_BUILD" and f.severity == "error" for f in found)
    assert all(f.detail for f in found)  # every finding explains itself


def test_cpu_only_from_the_package_table_alone():
    # no torch child facts: the version (and its +cpu tag) comes from the packages
    snap = {"packages": {"torch": {"version": "2.9.0+cpu"}}, "gpus": [A100]}
    assert [f.code for f in torch_cpu_only(Facts(snap))] == ["TORCH_CPU_ONLY_BUILD"]
    snap = {"packages": {"torch": {"version": "2.9.0"}}, "gpus": [A100]}
    assert list(torch_cpu_only(Facts(snap))) == []  # nothing says CPU


# ----------------------------------------------------------------- arch list vs the GPUs
CU128_LISTED = " ".join(f"sm_{a}" for a in (70, 75, 80, 86, 90, 100, 120))
CU130_LISTED = " ".join(f"sm_{a}" for a in (75, 80, 86, 90, 100, 120))


def _no_kernels(code: str, gpu: dict, sm: str, tv: str = "2.9.0+cu128") -> tuple[str, str]:
    return (code, f"torch {tv} has no kernels for {sm} ({gpu['name']})")


# (case, torch facts, gpus, packages, expected [(code, title)])
ARCH_ROWS = [
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
                f"vLLM 0.10.0 runs on torch 2.9.0+cu128, which has no sm_120 kernels "
                f"({RTX5090['name']})",
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
    found = list(torch_arch_covers_gpus(Facts({"torch": torch, "gpus": gpus, "packages": pkgs})))
    assert [(f.code, f.title) for f in found] == want
    assert all(f.severity == "error" and f.detail and f.fix for f in found)


def test_arch_detail_names_the_source_and_the_list():
    found = list(
        torch_arch_covers_gpus(Facts({"torch": arch_listed("sm_86", "sm_90"), "gpus": [A100]}))
    )
    assert found[0].detail.startswith("Arch list from torch.cuda.get_arch_list(): sm_86 sm_90.")
    found = list(
        torch_arch_covers_gpus(Facts({"torch": arch_listed("compute_90"), "gpus": [A100]}))
    )
    assert found[0].detail.startswith("Arch list from torch.cuda.get_arch_list(): none.")
    found = list(torch_arch_covers_gpus(Facts({"torch": CU128, "gpus": [P100]})))
    assert found[0].detail.startswith(
        f"Arch list from the official cu128 wheel's arch list (pytorch .ci/manywheel/"
        f"build_cuda.sh): {CU128_LISTED}."
    )
    found = list(torch_arch_covers_gpus(Facts({"torch": CU130, "gpus": [V100]})))
    assert "the official cu130 wheel's arch list (" in found[0].detail
    assert f"): {CU130_LISTED}." in found[0].detail


@pytest.mark.parametrize(
    ("gpu", "index"),
    [(P100, "cu126"), (V100, "cu126"), (A100, "cu130"), (B200, "cu130"), (RTX5090, "cu130")],
)
def test_arch_fix_index(gpu, index):
    found = list(torch_arch_covers_gpus(Facts({"torch": arch_listed("sm_90a"), "gpus": [gpu]})))
    assert [f.fix for f in found] == [
        f"python3 -m pip install --force-reinstall torch --index-url {WHL}/{index}"
    ]


def test_torch_version_unknown_never_fires():
    snap = {"torch": {"cuda": "12.8", "arch_list": ["sm_50"]}, "gpus": [A100]}
    assert list(torch_arch_covers_gpus(Facts(snap))) == []


# ----------------------------------------------------------------- GPU too old for the stack
# (case, torch facts, packages, plan, gpus, expected titles)
def _vllm_below(gpu: dict, cc: str, who: str, min_cc: str) -> str:
    return f"{gpu['name']} (cc {cc}) is below {who}'s minimum cc {min_cc}"


def _cu13_below(gpu: dict, cc: str) -> str:
    return f"torch 2.9.0+cu130 (CUDA 13.0) does not support {gpu['name']} (cc {cc})"


OLD_ROWS = [
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
    snap = {"torch": torch, "packages": pkgs, "plan": plan, "gpus": gpus}
    found = list(gpu_too_old(Facts(snap)))
    assert [f.title for f in found] == want
    assert all(f.code == "GPU_TOO_OLD_FOR_STACK" and f.severity == "error" for f in found)
    assert all(f.detail and f.fix for f in found)


def test_too_old_detail_names_the_rule_and_source():
    snap = {"torch": CU128, "packages": {"vllm": {"version": "0.20.0"}}, "gpus": [V100]}
    (f,) = gpu_too_old(Facts(snap))
    assert f.detail.startswith(
        "'GPUs with compute capability below 7.5 are not supported.' (vllm PR"
    )
    snap = {"torch": CU128, "packages": {"vllm": None}, "plan": {"use_vllm": True}, "gpus": [P100]}
    (f,) = gpu_too_old(Facts(snap))
    assert f.detail == "'GPUs with compute capability below 7.0 are not supported.' (vLLM docs)"
    (f,) = gpu_too_old(Facts({"torch": CU130, "gpus": [V100]}))
    assert f.detail.startswith("CUDA 13 builds need cc >= 7.5 (pytorch cu130")
    assert f.fix.endswith(f"{WHL}/cu126")


# ----------------------------------------------------------------- torch sees no CUDA
UNAVAILABLE = f"torch 2.9.0+cu128 sees no CUDA device although {A100['name']} is present"

# (case, torch facts, gpus, env, expected detail or None)
UNAVAILABLE_ROWS = [
    (
        "is_available False",
        {**CU128, "cuda_available": False},
        [A100],
        {},
        "torch.cuda.is_available() returned False.",
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
        "torch.cuda.is_available() returned False.",
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
    found = list(torch_cuda_unavailable(Facts({"torch": torch, "gpus": gpus, "env": env})))
    want = [] if detail is None else [("TORCH_CUDA_UNAVAILABLE", "error", UNAVAILABLE, detail)]
    assert [(f.code, f.severity, f.title, f.detail) for f in found] == want


def test_unavailable_without_torch_facts():
    assert list(torch_cuda_unavailable(Facts({"gpus": [A100]}))) == []


# ----------------------------------------------------------------- TORCH_CUDA_ARCH_LIST
# (case, value or None, gpus, expected uncovered ccs)
EXT_ROWS = [
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
    env = {} if value is None else {"TORCH_CUDA_ARCH_LIST": value}
    found = list(ext_arch_list(Facts({"env": env, "gpus": gpus})))
    assert [(f.code, f.severity, f.title, f.fix) for f in found] == [
        (
            "EXT_BUILD_ARCH_LIST_MISSES_GPU",
            "warning",
            f"TORCH_CUDA_ARCH_LIST={value!r} does not cover cc {cc}",
            f'export TORCH_CUDA_ARCH_LIST="{cc}+PTX"',
        )
        for cc in want
    ]
    assert all(f.detail for f in found)


def test_fixes_carry_the_remedy_not_the_generic_one():
    # each of these checks writes its own fix; the code's generic fix (codes.yaml) would
    # lose the fact that matters
    snap = {"cuda_toolkit": {"nvcc_version": "11.7"}, "packages": DS, "gpus": [H100]}
    (f,) = cuda_toolkit(Facts(snap))
    assert f.fix.startswith("install CUDA >= 11.8 ")
    snap = {"torch": CU128, "packages": {"vllm": {"version": "0.10.0"}}, "gpus": [P100]}
    (f,) = gpu_too_old(Facts(snap))
    assert f.fix.startswith("use_vllm=false (HF generation)")
    snap = {
        "torch": arch_listed("sm_90"),
        "packages": {"vllm": {"version": "0.10.0"}},
        "gpus": [RTX5090],
    }
    (f,) = torch_arch_covers_gpus(Facts(snap))
    assert "(python3 -m pip install -U vllm)" in f.fix
