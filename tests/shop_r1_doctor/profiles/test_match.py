"""match_profile: best profile for a machine's GPUs, deviations with the aligning command."""

from __future__ import annotations

from snapshots import gpu, pkg, snapshot
from snapshots import torch as torch_facts

from shop_r1_doctor.facts import Facts
from shop_r1_doctor.profiles import match_profile

PY = "/opt/venv/bin/python3"
HOST = {"os": "linux", "python": {"executable": PY}}
H100 = gpu("NVIDIA H100 80GB HBM3", "9.0")


def test_profiles_match_h100_with_old_torch_names_versions_and_fix():
    snap = snapshot(
        host=HOST,
        gpus=[H100, H100],
        packages={"torch": pkg("2.6.0+cu124"), "vllm": None, "flash-attn": None},
        torch=torch_facts("2.6.0+cu124", cuda="12.4"),
        driver=pkg("550.54.15"),
    )
    match = match_profile(Facts(snap))
    assert match is not None and match.name == "hopper"
    assert match.reason == "2 x sm_90 (NVIDIA H100 80GB HBM3)"
    by_title = {f.title: f for f in match.deviations}
    torch = by_title["torch 2.6.0+cu124 where profile hopper says 2.11.0+cu130"]
    assert torch.code == "PROFILE_DEVIATION" and torch.severity == "warning"
    assert (
        torch.fix
        == f"{PY} -m pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130"
    )
    vllm = by_title["vLLM not installed where profile hopper says 0.26.0"]
    assert vllm.severity == "info" and "vllm==0.26.0 torch==2.11.0" in vllm.fix
    fa = by_title["flash-attn not installed where profile hopper says 2.8.3.post2 (source)"]
    assert fa.fix.startswith("MAX_JOBS=4 NVCC_THREADS=2 FLASH_ATTN_CUDA_ARCHS=90 ")
    driver = next(f for f in match.deviations if f.title.startswith("NVIDIA driver 550.54.15"))
    assert ">= 580.65.06" in driver.title


def test_profiles_match_aligned_machine_has_no_deviations():
    snap = snapshot(
        host=HOST,
        gpus=[H100],
        packages={
            "torch": pkg("2.11.0+cu130"),
            "vllm": pkg("0.26.0"),
            "flash-attn": pkg("2.8.3.post2"),
            "transformers": pkg("5.23.0"),
            "trl": pkg("1.16.0"),
        },
        driver=pkg("580.159.04"),
        env={"TORCH_CUDA_ARCH_LIST": "9.0"},
    )
    match = match_profile(Facts(snap))
    assert match is not None and match.deviations == []


def test_profiles_match_pypi_torch_without_local_tag_reads_cuda_from_torch_facts():
    snap = snapshot(
        host=HOST,
        gpus=[H100],
        packages={"torch": pkg("2.11.0")},
        torch=torch_facts(None, cuda="13.0"),
    )
    match = match_profile(Facts(snap))
    assert match is not None
    assert not [f for f in match.deviations if f.title.startswith("torch ")]


def test_profiles_match_out_of_range_library_and_env():
    snap = snapshot(
        host=HOST,
        gpus=[gpu("NVIDIA GeForce RTX 5090", "12.0")],
        packages={"transformers": pkg("4.57.1")},
        env={"TORCH_CUDA_ARCH_LIST": "8.0"},
    )
    match = match_profile(Facts(snap))
    assert match is not None and match.name == "blackwell-rtx"
    titles = [f.title for f in match.deviations]
    assert "transformers 4.57.1 where profile blackwell-rtx says <6,>=5.5.3" in titles
    env = next(f for f in match.deviations if f.title.startswith("TORCH_CUDA_ARCH_LIST"))
    assert env.fix == "export TORCH_CUDA_ARCH_LIST=12.0+PTX"


def test_profiles_match_no_gpu_is_cpu_and_unknown_is_none():
    assert match_profile(Facts(snapshot(host=HOST, gpus=[]))).name == "cpu"
    assert match_profile(Facts(snapshot(host=HOST))) is None


def test_profiles_match_unsupported_gpu_is_none():
    assert (
        match_profile(Facts(snapshot(host=HOST, gpus=[gpu("Tesla P100-PCIE-16GB", "6.0")]))) is None
    )


def test_profiles_match_by_name_when_cc_unknown_and_majority_wins():
    t4 = gpu("Tesla T4", cc=None)
    assert match_profile(Facts(snapshot(host=HOST, gpus=[t4]))).name == "turing"
    mixed = [gpu("NVIDIA A100-SXM4-80GB", "8.0"), gpu("NVIDIA A10", "8.6"), H100]
    assert match_profile(Facts(snapshot(host=HOST, gpus=mixed))).name == "ampere"
