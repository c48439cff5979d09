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
from packages_facts import LINUX, _found, pkg
from repo_paths import FIXTURES

from shop_r1_doctor.checks.packages import (
    marker_env,
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
HUB_TITLE = f"transformers 4.57.1 requires {HUB_SPEC}; huggingface-hub {{}} is installed"
HUB_FIX = f'python3 -m pip install "{HUB_SPEC}"  (or a transformers release that accepts huggingface-hub {{}})'
PIP_CHECK = "pip check reports this; the dist may fail at import or at its first call."

# (case, host, packages, expected [(title, detail, fix)])
CONFLICT_ROWS = [
    (
        "huggingface-hub 1.1.0 above transformers' <1.0",
        LINUX,
        {"transformers": pkg("4.57.1", HUB_SPEC), "huggingface-hub": pkg("1.1.0")},
        [(HUB_TITLE.format("1.1.0"), PIP_CHECK, HUB_FIX.format("1.1.0"))],
    ),
    (
        "exactly at the excluded bound 1.0",
        LINUX,
        {"transformers": pkg("4.57.1", HUB_SPEC), "huggingface-hub": pkg("1.0")},
        [(HUB_TITLE.format("1.0"), PIP_CHECK, HUB_FIX.format("1.0"))],
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
        [
            (
                "trl 0.19.0 requires accelerate>=1.4.0, which is not installed",
                "",
                'python3 -m pip install "accelerate>=1.4.0"',
            )
        ],
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
                'jupyter-core 5.8.1 requires pywin32>=300; sys_platform == "win32", which is not installed',
                "",
                'python3 -m pip install "pywin32>=300"',
            )
        ],
    ),
    (
        "a python_version marker that holds",
        LINUX,
        {"datasets": pkg("4.0.0", 'tomli>=2; python_version >= "3.11"'), "tomli": pkg("1.2.0")},
        [
            (
                "datasets 4.0.0 requires tomli>=2; tomli 1.2.0 is installed",
                PIP_CHECK,
                'python3 -m pip install "tomli>=2"  (or a datasets release that accepts tomli 1.2.0)',
            )
        ],
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
                'odd 1.0 requires accelerate>=1; platform_machine == "x86_64", which is not installed',
                "",
                'python3 -m pip install "accelerate>=1"',
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
                'odd 1.0 requires accelerate>=1; extra == "x" or python_version >= "3.8", which is not installed',
                "",
                'python3 -m pip install "accelerate>=1"',
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
                "cupy-cuda12x 13.4.0 requires nvidia-nccl-cu12>=2.27; nvidia-nccl-cu12 2.26.2 is installed",
                PIP_CHECK,
                'python3 -m pip install "nvidia-nccl-cu12>=2.27"  (or a cupy-cuda12x release that accepts nvidia-nccl-cu12 2.26.2)',
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
        [
            (
                "old 1.0 requires numpy<1.27; numpy 2.1.0 is installed",
                PIP_CHECK,
                'python3 -m pip install "numpy<1.27"  (or a old release that accepts numpy 2.1.0)',
            )
        ],
    ),
    (
        "a lower numpy bound is a plain conflict",
        LINUX,
        {"opencv-python-headless": pkg("4.12.0.88", "numpy>=2"), "numpy": pkg("1.26.4")},
        [
            (
                "opencv-python-headless 4.12.0.88 requires numpy>=2; numpy 1.26.4 is installed",
                PIP_CHECK,
                'python3 -m pip install "numpy>=2"  (or a opencv-python-headless release that accepts numpy 1.26.4)',
            )
        ],
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
            (
                "peft 0.17.0 requires accelerate>=0.21.0, which is not installed",
                "",
                'python3 -m pip install "accelerate>=0.21.0"',
            ),
            (
                "trl 0.19.0 requires accelerate>=1.4.0, which is not installed",
                "",
                'python3 -m pip install "accelerate>=1.4.0"',
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("host", "packages", "expected"),
    [r[1:] for r in CONFLICT_ROWS],
    ids=[r[0] for r in CONFLICT_ROWS],
)
def test_requirement_conflict_rows(host: dict, packages: dict, expected) -> None:
    rows = _found(requirement_conflicts, {"host": host, "packages": packages})
    assert rows == [("REQUIREMENT_CONFLICT", "warning", *e) for e in expected]


@pytest.mark.parametrize("machine", ["h100", "h200x2", "h100-fa-vllm"])
def test_recorded_machines_have_no_conflicts(machine: str) -> None:
    snap = json.loads((FIXTURES / "machines" / machine / "snapshot.json").read_text())
    assert _found(requirement_conflicts, snap) == []
