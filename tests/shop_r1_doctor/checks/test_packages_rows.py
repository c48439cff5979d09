"""Decision rows for declared requirements, numpy 2 and Megatron (shop_r1_doctor/checks/packages.py).

Hand-worked from knowledge/compat.yaml's numpy2 table as it stands: torch built against
NumPy 2 from 2.3; megatron-core needs numpy<2 up to 0.15.x; opencv-python(-headless)
requires numpy>=2 from 4.12 (the last for NumPy 1 is 4.11.0.86). A requirement is checked
when its marker holds on the snapshot's machine (not the one re-running checks), extras
never apply, and pairs another rule names (vLLM's/xformers' torch pin, torch's NCCL pin,
numpy<2 pins) are left to that rule. Pre-releases satisfy a specifier (pip check does so).
"""

from __future__ import annotations

import json

import pytest
from check_wording import assert_row
from packages_facts import LINUX, pkg
from repo_paths import FIXTURES

from shop_r1_doctor.checks.packages import (
    marker_env,
    megatron_fusion,
    numpy2,
    requirement_conflicts,
)
from shop_r1_doctor.facts import Facts


# ----------------------------------------------------------------- marker variables
def test_marker_env_of_a_linux_snapshot() -> None:
    assert marker_env(Facts({"host": LINUX})) == {
        "extra": "",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "python_version": "3.12",
        "python_full_version": "3.12.3",
        "implementation_version": "3.12.3",
    }


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (
            {"os": "windows", "arch": "AMD64", "python": {"version": "3.11.9"}},
            ("win32", "Windows", "AMD64", "nt", "3.11"),
        ),
        (
            {"os": "darwin", "arch": "arm64", "python": {"version": "3.13.0"}},
            ("darwin", "Darwin", "arm64", "posix", "3.13"),
        ),
        ({"os": "linux", "python": {"version": "3.12"}}, ("linux", "Linux", "", "posix", "3.12")),
        ({"os": "plan9"}, ("", "", "", "posix", None)),
        ({"os": "linux", "python": {"version": "3"}}, ("linux", "Linux", "", "posix", None)),
        ({"os": "linux", "python": "3.12.3"}, ("linux", "Linux", "", "posix", None)),
        ({"os": "linux", "python": {"version": 3.12}}, ("linux", "Linux", "", "posix", None)),
    ],
    ids=[
        "windows",
        "macos",
        "a two-part version",
        "unknown os",
        "a version without a dot",
        "python not a mapping",
        "a version that is not text",
    ],
)
def test_marker_env_rows(host: dict, expected: tuple) -> None:
    env = marker_env(Facts({"host": host}))
    got = (
        env["sys_platform"],
        env["platform_system"],
        env["platform_machine"],
        env["os_name"],
        env.get("python_version"),
    )
    assert got == expected
    if expected[-1] is None:
        assert "python_full_version" not in env and "implementation_version" not in env


# ----------------------------------------------------------------- requirement conflicts
HUB_SPEC = "huggingface_hub<1.0,>=0.34.0"


def _hub(installed: str) -> tuple:
    return (f"transformers 4.57.1 requires {HUB_SPEC}", f"huggingface-hub {installed}", HUB_SPEC)


# (case, host, packages, expected [facts of each finding])
CONFLICT_ROWS = [
    (
        "huggingface-hub 1.1.0 above transformers' <1.0",
        LINUX,
        {"transformers": pkg("4.57.1", HUB_SPEC), "huggingface-hub": pkg("1.1.0")},
        [_hub("1.1.0")],
    ),
    (
        "exactly at the excluded bound 1.0",
        LINUX,
        {"transformers": pkg("4.57.1", HUB_SPEC), "huggingface-hub": pkg("1.0")},
        [_hub("1.0")],
    ),
    (
        "exactly at the included bound 0.34.0",
        LINUX,
        {"transformers": pkg("4.57.1", HUB_SPEC), "huggingface-hub": pkg("0.34.0")},
        [],
    ),
    (
        "a pre-release inside the range satisfies it",
        LINUX,
        {"accelerate": pkg("1.10.0", "torch>=2.0.0"), "torch": pkg("2.10.0rc1")},
        [],
    ),
    (
        "a required dist looked for and absent",
        LINUX,
        {"trl": pkg("0.19.0", "accelerate>=1.4.0"), "accelerate": None},
        [("trl 0.19.0 requires accelerate>=1.4.0", "not installed", '"accelerate>=1.4.0"')],
    ),
    (
        "a required dist that was not looked for: unknown",
        LINUX,
        {"trl": pkg("0.19.0", "accelerate>=1.4.0")},
        [],
    ),
    (
        "no specifier: any version",
        LINUX,
        {"trl": pkg("0.19.0", "accelerate"), "accelerate": pkg("0.1.0")},
        [],
    ),
    (
        "installed without a version: unknown",
        LINUX,
        {"trl": pkg("0.19.0", "accelerate>=1.4.0"), "accelerate": pkg(None)},
        [],
    ),
    (
        "a Windows-only requirement on Linux",
        LINUX,
        {"jupyter-core": pkg("5.8.1", 'pywin32>=300; sys_platform == "win32"'), "pywin32": None},
        [],
    ),
    (
        "the same on Windows",
        {"os": "windows", "python": {"version": "3.12.3"}},
        {"jupyter-core": pkg("5.8.1", 'pywin32>=300; sys_platform == "win32"'), "pywin32": None},
        [
            (
                'jupyter-core 5.8.1 requires pywin32>=300; sys_platform == "win32"',
                "not installed",
                '"pywin32>=300"',
            )
        ],
    ),
    (
        "a python_version marker that holds",
        LINUX,
        {"datasets": pkg("4.0.0", 'tomli>=2; python_version >= "3.11"'), "tomli": pkg("1.2.0")},
        [("datasets 4.0.0 requires tomli>=2", "tomli 1.2.0", '"tomli>=2"')],
    ),
    # was evaluated against the Python re-running the checks (packaging's default)
    (
        "a python_version marker on an unknown Python: cannot evaluate, skipped",
        {"os": "linux"},
        {"datasets": pkg("4.0.0", 'tomli>=2; python_version >= "3.11"'), "tomli": pkg("1.2.0")},
        [],
    ),
    (
        "a marker on a variable no snapshot records (the kernel release): skipped",
        LINUX,
        {"odd": pkg("1.0", 'accelerate>=1; platform_release >= "0"'), "accelerate": None},
        [],
    ),
    (
        "a marker on the machine's arch",
        LINUX,
        {"odd": pkg("1.0", 'accelerate>=1; platform_machine == "x86_64"'), "accelerate": None},
        [
            (
                'odd 1.0 requires accelerate>=1; platform_machine == "x86_64"',
                "not installed",
                '"accelerate>=1"',
            )
        ],
    ),
    (
        "a marker packaging cannot compare (~= on a name): skipped",
        LINUX,
        {"odd": pkg("1.0", 'accelerate>=1; platform_machine ~= "x86_64"'), "accelerate": None},
        [],
    ),
    (
        "extras never apply to a plain install",
        LINUX,
        {
            "trl": pkg(
                "0.19.0", 'deepspeed>=0.14.4; extra == "deepspeed"', 'vllm>=0.10; extra=="vllm"'
            ),
            "deepspeed": None,
            "vllm": None,
        },
        [],
    ),
    (
        "an extra or a condition that holds: applies",
        LINUX,
        {
            "odd": pkg("1.0", 'accelerate>=1; extra == "x" or python_version >= "3.8"'),
            "accelerate": None,
        },
        [
            (
                'odd 1.0 requires accelerate>=1; extra == "x" or python_version >= "3.8"',
                "not installed",
                '"accelerate>=1"',
            )
        ],
    ),
    (
        "unparseable and non-text requirements are skipped",
        LINUX,
        {"odd": pkg("1.0", "not a requirement !!", 7), "accelerate": None},  # type: ignore[arg-type]
        [],
    ),
    (
        "a dist without a version is not checked",
        LINUX,
        {"trl": pkg(None, "accelerate>=1.4.0"), "accelerate": None},
        [],
    ),
    (
        "requires not a list",
        LINUX,
        {"trl": {"version": "0.19.0", "requires": "accelerate>=1.4.0"}, "accelerate": None},
        [],
    ),
    (
        "vLLM's torch pin is vllm.py's",
        LINUX,
        {"vllm": pkg("0.11.0", "torch==2.8.0"), "torch": pkg("2.9.0")},
        [],
    ),
    (
        "xformers' torch pin is vllm.py's",
        LINUX,
        {"xformers": pkg("0.0.32", "torch==2.8.0"), "torch": pkg("2.9.0")},
        [],
    ),
    (
        "torch's NCCL pin is nccl.py's",
        LINUX,
        {"torch": pkg("2.9.0", "nvidia-nccl-cu12==2.27.5"), "nvidia-nccl-cu12": pkg("2.26.2")},
        [],
    ),
    (
        "another dist's NCCL pin is a plain conflict",
        LINUX,
        {
            "cupy-cuda12x": pkg("13.4.0", "nvidia-nccl-cu12>=2.27"),
            "nvidia-nccl-cu12": pkg("2.26.2"),
        },
        [
            (
                "cupy-cuda12x 13.4.0 requires nvidia-nccl-cu12>=2.27",
                "nvidia-nccl-cu12 2.26.2",
                '"nvidia-nccl-cu12>=2.27"',
            )
        ],
    ),
    (
        "a numpy<2 pin is numpy2's",
        LINUX,
        {"gensim": pkg("4.3.3", "numpy<2.0,>=1.18.5"), "numpy": pkg("2.1.0")},
        [],
    ),
    (
        "a numpy<=2.0 pin is numpy2's",
        LINUX,
        {"gensim": pkg("4.3.3", "numpy<=2.0"), "numpy": pkg("2.1.0")},
        [],
    ),
    (
        "an upper numpy bound below 2 is a plain conflict",
        LINUX,
        {"old": pkg("1.0", "numpy<1.27"), "numpy": pkg("2.1.0")},
        [("old 1.0 requires numpy<1.27", "numpy 2.1.0", '"numpy<1.27"')],
    ),
    (
        "a lower numpy bound is a plain conflict",
        LINUX,
        {"opencv-python-headless": pkg("4.12.0.88", "numpy>=2"), "numpy": pkg("1.26.4")},
        [("opencv-python-headless 4.12.0.88 requires numpy>=2", "numpy 1.26.4", '"numpy>=2"')],
    ),
    (
        "two dists, reported in name order",
        LINUX,
        {
            "trl": pkg("0.19.0", "accelerate>=1.4.0"),
            "accelerate": None,
            "peft": pkg("0.17.0", "accelerate>=0.21.0"),
        },
        [
            ("peft 0.17.0 requires accelerate>=0.21.0", "not installed", '"accelerate>=0.21.0"'),
            ("trl 0.19.0 requires accelerate>=1.4.0", "not installed", '"accelerate>=1.4.0"'),
        ],
    ),
]


@pytest.mark.parametrize(
    ("host", "packages", "expected"),
    [r[1:] for r in CONFLICT_ROWS],
    ids=[r[0] for r in CONFLICT_ROWS],
)
def test_requirement_conflict_rows(host: dict, packages: dict, expected) -> None:
    want = [("REQUIREMENT_CONFLICT", "warning", *e) for e in expected]
    assert_row(requirement_conflicts, {"host": host, "packages": packages}, want)


@pytest.mark.parametrize("machine", ["h100", "h200x2", "h100-fa-vllm"])
def test_recorded_machines_have_no_conflicts(machine: str) -> None:
    snap = json.loads((FIXTURES / "machines" / machine / "snapshot.json").read_text())
    assert_row(requirement_conflicts, snap, [])


# ----------------------------------------------------------------- numpy 2
PIN = '"numpy<2" "opencv-python-headless==4.11.0.86"'


def _megatron(mc: str, numpy: str) -> tuple:
    return (
        "NUMPY2_MEGATRON_VS_OPENCV",
        f"megatron-core {mc} needs numpy<2",
        f"numpy {numpy} is installed",
        PIN,
        '"megatron-core>=0.16"',
    )


def _opencv(name: str, ov: str, numpy: str) -> tuple:
    return (
        "NUMPY2_MEGATRON_VS_OPENCV",
        f"{name} {ov} requires numpy>=2",
        f"numpy {numpy} is installed",
        PIN,
    )


def _numpy_snap(torch: dict | None, packages: dict) -> dict:
    snap: dict = {"host": LINUX, "packages": packages}
    if torch is not None:
        snap["torch"] = torch
    return snap


# (case, torch facts or None, packages, expected [(code, *facts)])
NUMPY_ROWS = [
    ("numpy unknown", None, {"megatron-core": pkg("0.12.0")}, []),
    (
        "megatron-core 0.15.3 under numpy 2.1",
        None,
        {"numpy": pkg("2.1.0"), "megatron-core": pkg("0.15.3", "numpy<2")},
        [_megatron("0.15.3", "2.1.0")],
    ),
    (
        "megatron-core 0.16.0 (fixed) under numpy 2.1",
        None,
        {"numpy": pkg("2.1.0"), "megatron-core": pkg("0.16.0")},
        [],
    ),
    (
        "megatron-core 0.12 under numpy 2.0.0",
        None,
        {"numpy": pkg("2.0.0"), "megatron-core": pkg("0.12.0")},
        [_megatron("0.12.0", "2.0.0")],
    ),
    (
        "megatron-core 0.15 under numpy 1.26.4",
        None,
        {"numpy": pkg("1.26.4"), "megatron-core": pkg("0.15.0")},
        [],
    ),
    (
        "opencv-python-headless 4.12.0.88 under numpy 1.26.4",
        None,
        {"numpy": pkg("1.26.4"), "opencv-python-headless": pkg("4.12.0.88", "numpy>=2")},
        [_opencv("opencv-python-headless", "4.12.0.88", "1.26.4")],
    ),
    (
        "opencv at exactly 4.12 under numpy 1",
        None,
        {"numpy": pkg("1.26.4"), "opencv-python": pkg("4.12")},
        [_opencv("opencv-python", "4.12", "1.26.4")],
    ),
    (
        "both opencv dists under numpy 1, and an old torch (numpy 1 is fine for it)",
        {"version": "2.2.2"},
        {
            "numpy": pkg("1.26.4"),
            "opencv-python": pkg("4.12.0.88"),
            "opencv-python-headless": pkg("4.13.0.90"),
        },
        [
            _opencv("opencv-python", "4.12.0.88", "1.26.4"),
            _opencv("opencv-python-headless", "4.13.0.90", "1.26.4"),
        ],
    ),
    (
        "opencv 4.11.0.86 (the last for numpy 1) under numpy 1",
        None,
        {"numpy": pkg("1.26.4"), "opencv-python-headless": pkg("4.11.0.86")},
        [],
    ),
    (
        "opencv 4.12 under numpy 2: fine",
        None,
        {"numpy": pkg("2.2.6"), "opencv-python-headless": pkg("4.12.0.88", "numpy<2.3.0,>=2")},
        [],
    ),
    (
        "torch 2.2.2 under numpy 2.1",
        {"version": "2.2.2"},
        {"numpy": pkg("2.1.0")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "torch 2.2.2 was built against NumPy 1",
                "numpy 2.1.0 is installed",
                '"numpy<2"',
            )
        ],
    ),
    ("torch 2.3.0 under numpy 2.1", {"version": "2.3.0"}, {"numpy": pkg("2.1.0")}, []),
    (
        "torch's version from the dist when the child did not answer",
        None,
        {"numpy": pkg("2.0.2"), "torch": pkg("2.1.2+cu121")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "torch 2.1.2+cu121 was built against NumPy 1",
                "numpy 2.0.2 is installed",
                '"numpy<2"',
            )
        ],
    ),
    (
        "opencv-headless 4.12.0.88 caps numpy below 2.3",
        None,
        {"numpy": pkg("2.3.1"), "opencv-python-headless": pkg("4.12.0.88", "numpy<2.3.0,>=2")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "opencv-python-headless 4.12.0.88 requires numpy<2.3.0,>=2",
                "numpy 2.3.1 is installed",
                '"numpy<2.3.0,>=2"',
            )
        ],
    ),
    (
        "a numpy<2 pin under numpy 2, spelled NumPy",
        None,
        {"numpy": pkg("2.1.0"), "gensim": pkg("4.3.3", "NumPy<2.0,>=1.18.5")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "gensim 4.3.3 requires numpy<2.0,>=1.18.5",
                "numpy 2.1.0 is installed",
                '"numpy<2.0,>=1.18.5"',
            )
        ],
    ),
    (
        "a pre-release numpy inside the range",
        None,
        {"numpy": pkg("2.3.0rc1"), "scipy": pkg("1.16.0", "numpy<2.6,>=1.25.2")},
        [],
    ),
    (
        "megatron-core's own numpy pin is the megatron rule's",
        None,
        {"numpy": pkg("2.1.0"), "megatron-core": pkg("0.16.0", "numpy<2")},
        [],
    ),
    (
        "an unbounded numpy requirement",
        None,
        {"numpy": pkg("2.1.0"), "torchvision": pkg("0.24.0", "numpy")},
        [],
    ),
    (
        "another dist's requirement is not numpy's",
        None,
        {"numpy": pkg("2.1.0"), "pandas": pkg("2.3.0", "tzdata>=2022.7")},
        [],
    ),
]


@pytest.mark.parametrize(
    ("torch", "packages", "expected"), [r[1:] for r in NUMPY_ROWS], ids=[r[0] for r in NUMPY_ROWS]
)
def test_numpy2_rows(torch: dict | None, packages: dict, expected) -> None:
    assert_row(numpy2, _numpy_snap(torch, packages), [(c, "error", *f) for c, *f in expected])


# ----------------------------------------------------------------- Megatron's fusion without apex
FUSION_TITLE = "megatron-core 0.13.0: gradient_accumulation_fusion needs apex's {}"
ABSENT = object()
NO_APEX = FUSION_TITLE.format("fused_weight_gradient_mlp_cuda, apex is not installed")
NO_IMPORT = FUSION_TITLE.format("fused_weight_gradient_mlp_cuda, which does not import")


def _fusion_snap(fusion: bool | None, apex: object, fused: bool | None) -> dict:
    packages: dict = {"megatron-core": pkg("0.13.0")}
    if apex is not ABSENT:
        packages["apex"] = apex
    snap: dict = {"packages": packages, "plan": {"gradient_accumulation_fusion": fusion}}
    if fused is not None:
        snap["imports"] = {"fused_weight_gradient_mlp_cuda": {"ok": fused}}
    return snap


# (case, fusion in the plan, apex record (ABSENT = not looked), fused import ok, expected)
FUSION_ROWS = [
    ("apex absent, fusion by default", None, None, None, ("warning", NO_APEX)),
    ("apex absent, fusion asked for", True, None, None, ("error", NO_APEX)),
    ("apex absent, fusion off", False, None, None, None),
    # the module imports (apex built in-tree, without a dist record): Megatron finds it
    ("apex absent, the module imports", None, None, True, None),
    ("apex installed, fused imports", True, {"version": "0.1"}, True, None),
    ("apex installed, import unknown", True, {"version": "0.1"}, None, None),
    (
        "apex installed, fused does not import",
        True,
        {"version": "0.1"},
        False,
        ("error", NO_IMPORT),
    ),
    ("apex unknown, fused does not import", None, ABSENT, False, ("warning", NO_IMPORT)),
    ("apex unknown, import unknown", None, ABSENT, None, None),
    # was "which does not import" while the import worked
    ("apex unknown, fused imports", None, ABSENT, True, None),
]


@pytest.mark.parametrize(
    ("fusion", "apex", "fused", "expected"),
    [r[1:] for r in FUSION_ROWS],
    ids=[r[0] for r in FUSION_ROWS],
)
def test_megatron_fusion_rows(fusion, apex, fused, expected) -> None:
    want = [("MEGATRON_GRAD_ACCUM_FUSION_NO_APEX", *expected, "--cuda_ext")] if expected else []
    assert_row(megatron_fusion, _fusion_snap(fusion, apex, fused), want)


def test_megatron_fusion_needs_megatron() -> None:
    snap = {"packages": {"megatron-core": None, "apex": None}, "plan": {}}
    assert_row(megatron_fusion, snap, [])


SNAPSHOTS = [
    *[(r[0], {"host": r[1], "packages": r[2]}) for r in CONFLICT_ROWS],
    *[(r[0], _numpy_snap(r[1], r[2])) for r in NUMPY_ROWS],
    *[(r[0], _fusion_snap(*r[1:4])) for r in FUSION_ROWS],
]
