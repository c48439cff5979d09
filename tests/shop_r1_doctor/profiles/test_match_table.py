"""Profile match as a decision table: torch's CUDA variant counts as much as its version,
and each deviation row (driver floor, vLLM, flash-attn, library ranges, env) is decided
at its boundary."""

from __future__ import annotations

import pytest

from shop_r1_doctor.facts import Facts
from shop_r1_doctor.profiles import match_profile
from shop_r1_doctor.profiles.match import best_profile
from shop_r1_doctor.profiles.model import load_profiles
from shop_r1_doctor.target_python import pip_command

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
ALIGNED = {
    "torch": {"version": "2.11.0+cu130"},
    "vllm": {"version": "0.26.0"},
    "flash-attn": {"version": "2.8.3.post2"},
    "transformers": {"version": "5.23.0"},
    "trl": {"version": "1.16.0"},
}


def _titles(packages=None, torch=None, driver="580.159.04", env=None, gpus=(H100,), host=None):
    snap = {
        "schema": "shop-r1.snapshot/1",
        "host": host or {"os": "linux"},
        "gpus": list(gpus),
        "packages": {**ALIGNED, **(packages or {})},
        "driver": {"version": driver},
        "env": {"TORCH_CUDA_ARCH_LIST": "9.0", **(env or {})},
    }
    if torch is not None:
        snap["torch"] = torch
    match = match_profile(Facts(snap))
    assert match is not None
    return match.name, [f.title for f in match.deviations], match


TORCH_PROFILE = "where profile hopper says 2.11.0+cu130"

# (installed torch, torch facts, expected torch deviation title or None)
TORCH_ROWS = [
    ("2.11.0+cu130", None, None),
    ("2.11.0+cu128", None, f"torch 2.11.0+cu128 {TORCH_PROFILE}"),  # same version, other CUDA
    ("2.11.0+cu126", {"cuda": "12.6"}, f"torch 2.11.0+cu126 {TORCH_PROFILE}"),
    ("2.11.0+cpu", {"cuda": None}, f"torch 2.11.0+cpu {TORCH_PROFILE}"),
    ("2.10.0+cu130", None, f"torch 2.10.0+cu130 {TORCH_PROFILE}"),  # other version, same CUDA
    ("2.11.1+cu130", None, f"torch 2.11.1+cu130 {TORCH_PROFILE}"),
    # a PyPI wheel has no local tag: the variant comes from torch.version.cuda
    ("2.11.0", {"cuda": "13.0"}, None),
    ("2.11.0", {"cuda": "12.8"}, f"torch 2.11.0+cu128 {TORCH_PROFILE}"),
    ("2.11.0", {"cuda": None}, f"torch 2.11.0+cpu {TORCH_PROFILE}"),
    # nothing says which build: the version alone is compared, shown as installed
    ("2.11.0", None, "torch 2.11.0 where profile hopper says 2.11.0+cu130"),
]


@pytest.mark.parametrize(("version", "torch", "title"), TORCH_ROWS)
def test_torch_variant_is_part_of_the_match(version, torch, title):
    _, titles, match = _titles({"torch": {"version": version}}, torch=torch)
    torch_rows = [t for t in titles if t.startswith("torch ")]
    assert torch_rows == ([title] if title else [])
    if title:
        finding = next(f for f in match.deviations if f.title == title)
        assert finding.severity == "warning" and finding.code == "PROFILE_DEVIATION"
        assert finding.fix == (
            "python3 -m pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130"
        )


def test_torch_missing_and_the_cpu_profile():
    _, titles, _ = _titles({"torch": None})
    assert titles == ["torch not installed where profile hopper says 2.11.0+cu130"]
    snap = {
        "schema": "shop-r1.snapshot/1",
        "gpus": [],
        "packages": {"torch": {"version": "2.13.0+cu130"}},
    }
    cpu = match_profile(Facts(snap))
    assert cpu.name == "cpu" and cpu.reason == "no NVIDIA GPU"
    (f,) = cpu.deviations
    assert (
        f.severity == "info" and f.title == "torch 2.13.0+cu130 where profile cpu says 2.13.0+cpu"
    )
    same = match_profile(Facts({**snap, "packages": {"torch": {"version": "2.13.0+cpu"}}}))
    assert same.deviations == []


# (driver) -> deviation?  The hopper profile needs >= 580.65.06 (CUDA 13.0)
@pytest.mark.parametrize(
    ("driver", "flagged"),
    [
        ("580.65.06", False),
        ("580.65.05", True),
        ("575.57.08", True),
        ("590.0", False),
        (None, False),
    ],
)
def test_driver_floor_boundary(driver, flagged):
    _, titles, match = _titles(driver=driver)
    rows = [t for t in titles if t.startswith("NVIDIA driver")]
    assert bool(rows) is flagged
    if flagged:
        assert rows == [
            f"NVIDIA driver {driver} where profile hopper needs >= 580.65.06 (CUDA 13.0)"
        ]
        f = next(f for f in match.deviations if f.title == rows[0])
        assert f.severity == "warning" and "cuda-compat-13-0" in f.fix


# (packages, expected titles with severities)
PACKAGE_ROWS = [
    ({"vllm": None}, [("info", "vLLM not installed where profile hopper says 0.26.0")]),
    (
        {"vllm": {"version": "0.25.1"}},
        [("warning", "vllm 0.25.1 where profile hopper says 0.26.0")],
    ),
    ({"vllm": {"version": "0.26.0+cu130"}}, []),
    (
        {"flash-attn": None},
        [("info", "flash-attn not installed where profile hopper says 2.8.3.post2 (source)")],
    ),
    (
        {"flash-attn": {"version": "2.8.3"}},
        [("info", "flash-attn 2.8.3 where profile hopper says 2.8.3.post2")],
    ),
    ({"transformers": {"version": "5.5.3"}}, []),  # the range's lower bound
    (
        {"transformers": {"version": "5.5.2"}},
        [("warning", "transformers 5.5.2 where profile hopper says <6,>=5.5.3")],
    ),
    (
        {"transformers": {"version": "6.0.0.dev0"}},
        [("warning", "transformers 6.0.0.dev0 where profile hopper says <6,>=5.5.3")],
    ),
    (
        {"trl": {"version": "1.0.0rc1"}},
        [("warning", "trl 1.0.0rc1 where profile hopper says <2,>=1.0")],
    ),
    ({"trl": None}, []),  # not installed: nothing to align (the doctor's checks cover it)
]


@pytest.mark.parametrize(("packages", "want"), PACKAGE_ROWS)
def test_package_rows(packages, want):
    _, _, match = _titles(packages)
    assert [(f.severity, f.title) for f in match.deviations] == want


# (env, deviation title or None)
ENV_ROWS = [
    ({"TORCH_CUDA_ARCH_LIST": "9.0"}, None),
    ({"TORCH_CUDA_ARCH_LIST": "9.0a"}, None),  # builds everything 9.0 does
    ({"TORCH_CUDA_ARCH_LIST": "8.0;9.0"}, None),
    ({"TORCH_CUDA_ARCH_LIST": "8.0"}, "TORCH_CUDA_ARCH_LIST='8.0' where profile hopper sets '9.0'"),
    ({"TORCH_CUDA_ARCH_LIST": ""}, "TORCH_CUDA_ARCH_LIST='' where profile hopper sets '9.0'"),
    (
        {"VLLM_WORKER_MULTIPROC_METHOD": "fork"},
        "VLLM_WORKER_MULTIPROC_METHOD='fork' where profile hopper sets 'spawn'",
    ),
    ({"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}, None),
]


@pytest.mark.parametrize(("env", "title"), ENV_ROWS)
def test_env_rows(env, title):
    _, titles, match = _titles(env=env)
    assert titles == ([title] if title else [])
    if title:
        (f,) = match.deviations
        name = title.split("=", 1)[0]
        assert (
            f.severity == "info" and f.fix == f"export {name}={load_profiles()['hopper'].env[name]}"
        )


def test_best_profile_counts_gpus_and_falls_back_to_names():
    profiles = load_profiles()
    a100 = {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
    l4 = {"name": "NVIDIA L4", "compute_capability": "8.9"}
    # 2 ampere vs 1 hopper: the majority wins
    prof, reason = best_profile(Facts({"gpus": [a100, H100, a100]}), profiles)
    assert prof.name == "ampere" and reason == "2 x sm_80 (NVIDIA A100-SXM4-80GB)"
    prof, reason = best_profile(Facts({"gpus": [{"name": "NVIDIA L4"}]}), profiles)
    assert prof.name == "ada" and reason == "1 x GPU (NVIDIA L4)"
    prof, _ = best_profile(Facts({"gpus": [l4, H100]}), profiles)
    assert prof.name == "ada"  # a tie: the first by name
    assert best_profile(Facts({"gpus": [{"name": "Mystery GPU"}]}), profiles) is None
    assert best_profile(Facts({}), profiles) is None
    assert best_profile(Facts({"gpus": []}), {}) is None


def test_pip_command_uses_the_probed_interpreter():
    assert pip_command(Facts({"host": {"python": {"executable": "/opt/my env/bin/python"}}})) == (
        "'/opt/my env/bin/python' -m pip"
    )
    assert pip_command(Facts({"host": {"python": {"executable": ""}}})) == "python3 -m pip"
    assert pip_command(Facts({"host": {"python": "x"}})) == "python3 -m pip"
    assert pip_command(Facts({})) == "python3 -m pip"
