"""`doctor --from`: each dump parser on the shapes it reads, and what it must leave unknown."""

from __future__ import annotations

import pytest
from repo_paths import FIXTURES

from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.ingest import DumpError, parse_dump, read_dump, snapshot_from_dump

GPU = FIXTURES / "machines"

TRL_ENV = """\
Copy-paste the following information when reporting an issue:

- Platform: Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35
- Python version: 3.11.9
- PyTorch version: 2.4.1
- CUDA device(s): NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 4090
- Transformers version: 4.46.0
- TRL version: 0.12.0.dev0+acb4d70
- vLLM version: not installed
"""

TRANSFORMERS_ENV = """\
- `transformers` version: 4.46.0
- Platform: Windows-10-10.0.22631-SP0
- Python version: 3.10.12
- PyTorch version (GPU?): 2.5.0+cu124 (True)
- Tensorflow version (GPU?): not installed (NA)
- Using GPU in script?: <fill in>
- GPU type: NVIDIA A100-SXM4-80GB
"""

SMI_Q = """\
==============NVSMI LOG==============

Timestamp                                 : Mon Jan  1 00:00:00 2024
Driver Version                            : 470.82.01
CUDA Version                              : 11.4

Attached GPUs                             : 1
GPU 00000000:00:04.0
    Product Name                          : Tesla T4
    FB Memory Usage
        Total                             : 15109 MiB
        Used                              : 3 MiB
        Free                              : 15106 MiB
"""


def test_project_h100_recording_parses_into_the_probe_s_facts():
    text = (GPU / "h100" / "collect_env.txt").read_text() + (
        GPU / "h100" / "nvidia-smi.txt"
    ).read_text()
    snap = snapshot_from_dump(text, "h100.txt")
    assert snap["torch"] == {"version": "2.11.0+cu130", "cuda": "13.0", "cuda_available": True}
    assert snap["packages"]["torch"] == {"version": "2.11.0+cu130"}  # not [pip3]'s bare 2.11.0
    assert snap["driver"] == {
        "version": "580.159.04",
        "cuda_version": "13.0",
        "source": "nvidia-smi",
    }
    [gpu] = snap["gpus"]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["compute_capability"] == "9.0"
    assert gpu["memory_total_bytes"] == 81559 * 1024 * 1024 and gpu["processes"] == []
    assert snap["cuda_toolkit"] == {"nvcc_version": "13.0"}
    assert snap["host"]["wsl"] is None and snap["host"]["os"] == "linux"
    # Never said by these dumps: left out, not guessed.
    for section in ("env", "imports", "ray", "plan", "probes"):
        assert section not in snap
    assert run_checks(snap) == []


def test_busy_table_records_compute_processes_only():
    snap = snapshot_from_dump((GPU / "h100" / "nvidia-smi-busy.txt").read_text())
    procs = snap["gpus"][0]["processes"]
    assert procs and all(isinstance(p["pid"], int) for p in procs)


def test_trl_env_keeps_absence_it_states_and_names_gpus_without_indices():
    snap = snapshot_from_dump(TRL_ENV)
    assert snap["packages"]["vllm"] is None
    assert snap["packages"]["trl"] == {"version": "0.12.0.dev0+acb4d70"}
    assert snap["gpus"] == [
        {"name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"},
        {"name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"},
    ]
    assert snap["host"]["wsl"] == 2
    assert "driver" not in snap and "flash-attn" not in snap["packages"]


def test_transformers_env_reads_torch_cuda_availability():
    snap = snapshot_from_dump(TRANSFORMERS_ENV)
    assert snap["torch"] == {"version": "2.5.0+cu124", "cuda_available": True}
    assert snap["packages"]["tensorflow"] is None
    assert snap["host"]["os"] == "windows"


def test_nvidia_smi_q():
    snap = snapshot_from_dump(SMI_Q)
    assert snap["driver"]["version"] == "470.82.01" and snap["driver"]["cuda_version"] == "11.4"
    assert snap["gpus"] == [
        {
            "index": 0,
            "name": "Tesla T4",
            "memory_total_bytes": 15109 * 2**20,
            "memory_used_bytes": 3 * 2**20,
            "compute_capability": "7.5",
        }
    ]


def test_pip_list_freeze_and_conda_listings():
    text = (
        "Package    Version\n---------- -------\ntorch      2.1.0+cu118\nflash-attn 2.5.0\n\n"
        "Some prose after it 1.2\n"
        "vllm==0.4.0\n"
        "# Name   Version   Build  Channel\npytorch   2.0.1   py3.10_cuda11.8_cudnn8.7.0_0  pytorch\n"
    )
    packages = snapshot_from_dump(text)["packages"]
    assert packages == {
        "torch": {"version": "2.1.0+cu118"},
        "flash-attn": {"version": "2.5.0"},
        "vllm": {"version": "0.4.0"},
    }


def test_several_dumps_in_markdown_with_prose_and_quotes():
    text = (
        "I get an error, here is my env:\n\n```\n"
        + TRL_ENV
        + "```\n\nand nvidia-smi:\n\n"
        + "".join(
            "> " + line + "\n"
            for line in (GPU / "h100" / "nvidia-smi.txt").read_text().splitlines()
        )
    )
    parts = [p.parser for p in parse_dump(text)]
    assert parts == ["nvidia_smi", "hf_env"]
    snap = snapshot_from_dump(text)
    assert snap["gpus"][0]["index"] == 0  # the table's GPUs win over trl's unindexed names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\nworld\n", "<dump>: no environment dump recognised"),
        (
            "PyTorch version: 2.x.banana\nIs debug build: False\n",
            "<dump>:1: PyTorch version '2.x.banana' is not a version",
        ),
        (
            "Is debug build: False\nNvidia driver version: five\n",
            "<dump>:2: Nvidia driver version 'five' is not a version",
        ),
        (
            "- TRL version: latest\n- Platform: Linux-5.4.0-x86_64-with-glibc2.31\n",
            "<dump>:1: trl version 'latest' is not a version",
        ),
    ],
)
def test_malformed_input_is_one_line_naming_the_line(text, message):
    with pytest.raises(DumpError) as err:
        snapshot_from_dump(text)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_read_dump_rejects_binary_and_bad_utf8(tmp_path):
    (tmp_path / "b.bin").write_bytes(b"\x00\x01PyTorch")
    (tmp_path / "l.txt").write_bytes(b"PyTorch version: 2.1.0\n\xff\xfe\n")
    with pytest.raises(DumpError, match="not text"):
        read_dump(str(tmp_path / "b.bin"))
    with pytest.raises(DumpError, match=r"l\.txt:2: not UTF-8"):
        read_dump(str(tmp_path / "l.txt"))
    with pytest.raises(DumpError, match="no such file"):
        read_dump(str(tmp_path / "missing.txt"))


FOUR_4090 = "Is debug build: False\nGPU models and configuration:\n" + "".join(
    f"GPU {i}: NVIDIA GeForce RTX 4090\n" for i in range(4)
)


def test_an_unlisted_variable_is_unknown_not_unset():
    # NCCL_P2P_HANG_CONSUMER_GPUS needs NCCL_P2P_DISABLE *unset*: a dump with no env block,
    # or with vLLM's block that lists only some variables, does not say that.
    for text in (FOUR_4090, FOUR_4090 + "\nEnvironment Variables:\nCUDA_VISIBLE_DEVICES=0,1,2,3\n"):
        snap = snapshot_from_dump(text)
        assert "NCCL_P2P_HANG_CONSUMER_GPUS" not in {f.code for f in run_checks(snap)}
    # The same machine probed (the env section lists every variable of interest): it fires.
    probed = dict(snapshot_from_dump(FOUR_4090), env={})
    del probed["source"]
    assert "NCCL_P2P_HANG_CONSUMER_GPUS" in {f.code for f in run_checks(probed)}


def test_gpus_named_without_indices_do_not_meet_cuda_visible_devices():
    text = "- TRL version: 0.19.0\n- CUDA device(s): NVIDIA H100 80GB HBM3\n"
    snap = snapshot_from_dump(text)
    snap["env"] = {"CUDA_VISIBLE_DEVICES": "3"}  # index 3 of an unknown numbering
    assert "CUDA_VISIBLE_DEVICES_HIDES_GPUS" not in {f.code for f in run_checks(snap)}


def test_nvcc_version_alone_does_not_mean_no_toolkit():
    text = (GPU / "h100" / "collect_env.txt").read_text()
    snap = snapshot_from_dump(text)
    snap["packages"]["deepspeed"] = {"version": "0.15.1"}
    assert "CUDA_HOME_MISSING_DEEPSPEED" not in {f.code for f in run_checks(snap)}


def test_smi_q_of_one_gpu_among_several_gives_no_index():
    text = (FIXTURES / "real_dumps" / "gputil-38-nvidia-smi-q-windows.txt").read_text()
    [gpu] = snapshot_from_dump(text)["gpus"]  # `nvidia-smi -q -i 0` on a 4-GPU machine
    assert gpu == {"name": "GeForce GTX 1080 Ti", "compute_capability": "6.1"}


@pytest.mark.parametrize(
    ("dump", "fix"),
    [
        # torch 1.3.1 is on no current index: no pin.
        (
            "pytorch-44303-rtx2080ti-cpu-build.txt",
            "python3 -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130",
        ),
        # torch 2.2.2 predates the table (2.4+): no pin either.
        (
            "pytorch-122924-windows-cpu-wheel.txt",
            "python3 -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130",
        ),
    ],
)
def test_cpu_build_fix_never_pins_a_version_the_index_lacks(dump, fix):
    text = (FIXTURES / "real_dumps" / dump).read_text()
    [found] = [f for f in run_checks(snapshot_from_dump(text)) if f.code == "TORCH_CPU_ONLY_BUILD"]
    assert found.fix == fix


def test_cpu_build_fix_pins_a_release_on_an_index_that_has_it():
    snap = snapshot_from_dump(
        "PyTorch version: 2.5.1+cpu\nIs debug build: False\nGPU 0: NVIDIA GeForce RTX 4090\n"
    )
    [found] = [f for f in run_checks(snap) if f.code == "TORCH_CPU_ONLY_BUILD"]
    # 2.5 ships cu118/cu121/cu124 (knowledge/compat.yaml): its default, not cu130.
    assert (
        found.fix
        == "python3 -m pip install --force-reinstall torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124"
    )


def _rocm_dump(version: str, cuda: str, rocm: str, available: str) -> str:
    """collect_env's lines as torch 2.x prints them on a ROCm (or CPU) build."""
    return (
        f"PyTorch version: {version}\nIs debug build: False\n"
        f"CUDA used to build PyTorch: {cuda}\nROCM used to build PyTorch: {rocm}\n\n"
        "OS: Ubuntu 22.04.4 LTS (x86_64)\n"
        f"Is CUDA available: {available}\nCUDA runtime version: Could not collect\n"
        "GPU models and configuration: AMD Instinct MI300X (gfx942:sramecc+:xnack-)\n"
        "Nvidia driver version: Could not collect\nHIP runtime version: 6.2.41133\n"
    )


HIP = "6.2.41133-dd7f95766"


@pytest.mark.parametrize(
    ("version", "cuda", "rocm", "available", "torch", "cpu_build"),
    [
        # ROCm: torch.version.cuda is None there too, yet it is no CPU build: the HIP
        # version says so (CUDA unknown, never None)
        ("2.5.1+rocm6.2", "N/A", HIP, "True", {"hip": HIP}, False),
        ("2.4.0a0+git1d1e6d5", "N/A", HIP, "True", {"hip": HIP}, False),
        ("2.4.0a0+git1d1e6d5", "None", HIP, "True", {"hip": HIP}, False),
        ("2.4.0a0+git1d1e6d5", "Could not collect", HIP, "True", {"hip": HIP}, False),
        # the other side of the same decision: no ROCm either, a CPU-only wheel
        ("2.4.0a0+git1d1e6d5", "N/A", "N/A", "False", {"cuda": None}, True),
        ("2.5.1", "None", "None", "False", {"cuda": None}, True),
        ("2.5.1+cu124", "12.4", "N/A", "True", {"cuda": "12.4"}, False),
    ],
)
def test_rocm_collect_env_is_not_read_as_a_cpu_build(
    version, cuda, rocm, available, torch, cpu_build
):
    from shop_r1_doctor.checks._base import torch_is_cpu_build
    from shop_r1_doctor.facts import Facts

    snap = snapshot_from_dump(_rocm_dump(version, cuda, rocm, available), "rocm.txt")
    assert snap["torch"] == {"version": version, "cuda_available": available == "True", **torch}
    assert torch_is_cpu_build(Facts(snap)) is cpu_build


NVCC_VERSION = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2023 NVIDIA Corporation
Built on Fri_Jan__6_16:45:21_PST_2023
Cuda compilation tools, release 12.0, V12.0.140
Build cuda_12.0.r12.0/compiler.32267302_0
"""


def test_nvcc_version_output_alone_gives_the_toolkit_release():
    snap = snapshot_from_dump(NVCC_VERSION, "t")
    assert snap["cuda_toolkit"] == {"nvcc_version": "12.0"}
    assert [p["parser"] for p in snap["source"]["parts"]] == ["nvcc"]
    assert "driver" not in snap and "torch" not in snap  # nvcc says nothing of either


def test_nvcc_banner_without_its_release_line_is_not_a_toolkit():
    banner = "\n".join(ln for ln in NVCC_VERSION.splitlines() if "release" not in ln)
    with pytest.raises(DumpError):
        snapshot_from_dump(banner, "t")


def test_collect_env_s_toolkit_wins_over_a_later_nvcc_paste():
    text = "Is debug build: False\nCUDA runtime version: 12.4.131\n" + NVCC_VERSION
    assert snapshot_from_dump(text, "t")["cuda_toolkit"]["nvcc_version"] == "12.4"
