"""Readings for machines under the stack and the launchers around it: the HIP runtime finding
no code object for an AMD GPU's gfx target, Podman taking a CDI device name for a path,
text-generation-inference's launcher naming a child's signal (7 SIGBUS, 4 SIGILL), torch's
own old-GPU warning (the lowest arch of its build), flash-attn 1.x's bare compute-capability
check, evaluate's metric script neither local nor fetched, an extension build failing in
torch's headers, and a submodule or CLI subcommand the installed release lacks. Each on the
framework's own wording and on a pasted shape, with a near miss that must not be read.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

# --- HIP: no code object for the GPU's gfx target -----------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # ROCm clr 6.x's log line with its device table (AMD_LOG_LEVEL)
        ":1:hip_code_object.cpp      :571 : 1885938529 us: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n"
        ":1:hip_code_object.cpp      :572 : 1885938540 us:   Devices:\n"
        ":1:hip_code_object.cpp      :574 : 1885938542 us:     amdgcn-amd-amdhsa--gfx1032 - [Not Found]",
        # ROCm 5.x printed it quoted, then aborted
        '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\nAborted (core dumped)',
    ],
)
def test_hip_no_binary_for_gpu_is_gfx_arch_unsupported(log):
    assert lead(log) == ("ROCM_GFX_ARCH_UNSUPPORTED", "error")


def test_hip_error_name_alone_is_not_the_gfx_reading():
    log = "RuntimeError: HIP error: hipErrorNoDevice\nno ROCm-capable device is detected"
    assert "ROCM_GFX_ARCH_UNSUPPORTED" not in codes(log)


# --- Podman: a CDI name read as a device path -----------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "Error: stat nvidia.com/gpu=all: no such file or directory",
        "$ podman run --rm --device nvidia.com/gpu=0 ubuntu nvidia-smi -L\n"
        "Error: stat nvidia.com/gpu=0: no such file or directory",
    ],
)
def test_podman_stat_of_cdi_name_is_podman_too_old(log):
    assert lead(log) == ("PODMAN_TOO_OLD_FOR_CDI", "error")


def test_stat_of_a_real_device_path_is_not_cdi():
    log = "Error: stat /dev/nvidia-uvm: no such file or directory"
    assert "PODMAN_TOO_OLD_FOR_CDI" not in codes(log)


# --- text-generation-inference's launcher: a child's signal number --------------------


@pytest.mark.parametrize(
    "log",
    [
        "Error: Download process was signaled to shutdown with signal 7",
        "2024-01-02T10:00:00.000000Z ERROR text_generation_launcher: Shard process was signaled to shutdown with signal 7 rank=0\n"
        "Error: ShardCannotStart",
    ],
)
def test_tgi_child_sigbus_is_shm_too_small_as_a_warning(log):
    assert lead(log) == ("CONTAINER_SHM_TOO_SMALL", "warning")


@pytest.mark.parametrize(
    "log",
    [
        "Shard process was signaled to shutdown with signal 4 rank=0 Error: ShardCannotStart",
        "ERROR text_generation_launcher: Download process was signaled to shutdown with signal 4",
    ],
)
def test_tgi_child_sigill_is_cpu_instruction_warning(log):
    assert lead(log) == ("CPU_INSTRUCTION_UNSUPPORTED", "warning")


@pytest.mark.parametrize("signal", ["9", "15", "70", "11"])
def test_tgi_other_signals_are_neither_reading(signal):
    found = codes(f"Shard process was signaled to shutdown with signal {signal} rank=0")
    assert "CONTAINER_SHM_TOO_SMALL" not in found
    assert "CPU_INSTRUCTION_UNSUPPORTED" not in found


# --- torch's old-GPU warning: below the lowest arch of its build ----------------------


@pytest.mark.parametrize(
    "log",
    [
        # torch 2.7's _check_capability, as warnings.warn prints it
        "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:262: UserWarning:\n"
        "    Found GPU0 Tesla P100-PCIE-16GB which is of cuda capability 6.0.\n"
        "    PyTorch no longer supports this GPU because it is too old.\n"
        "    The minimum cuda capability supported by this library is 7.5.\n",
        # newer torch's per-build wording
        "UserWarning: Found GPU0 Tesla V100-SXM2-16GB which is of compute capability (CC) 7.0.\n"
        "Your installed torch==2.13.0+cu130 does not include kernels for this GPU. "
        "Reinstall the same version against a CUDA build that does, e.g.:",
    ],
)
def test_torch_old_gpu_warning_is_arch_unsupported(log):
    assert lead(log) == ("TORCH_ARCH_UNSUPPORTED_GPU", "error")
    assert "GPU_TOO_OLD_FOR_STACK" not in codes(log)


def test_torch_arch_list_naming_sm120_is_no_blackwell_gpu():
    # the build's own list ends in `sm_120 compute_120`: the GPU is a GTX 1080 Ti
    log = (
        "NVIDIA GeForce GTX 1080 Ti with CUDA capability sm_61 is not compatible with the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 compute_120.\n"
    )
    assert lead(log) == ("TORCH_ARCH_UNSUPPORTED_GPU", "error")
    assert "TORCH_NO_BLACKWELL_ARCH" not in codes(log)


def test_vllm_minimum_capability_stays_gpu_too_old_for_stack():
    log = "RuntimeError: GPUs with compute capability below 7.0 are not supported."
    assert lead(log) == ("GPU_TOO_OLD_FOR_STACK", "error")


# --- flash-attn 1.x's bare capability check -------------------------------------------


@pytest.mark.parametrize(
    "cond",
    ["is_sm90 || is_sm8x || is_sm75", "is_sm8x || is_sm75", "is_sm8x || is_sm90"],
)
def test_flash_attn_bare_sm_check_is_pre_ampere(cond):
    log = (
        "flash_attn/flash_attn_interface.py:21 in _flash_attn_forward\n\n"
        f"RuntimeError: Expected {cond} to be true, but got false.  (Could this error message "
        "be improved?  If so, please report an enhancement request to PyTorch.)"
    )
    assert lead(log) == ("FA_PRE_AMPERE_GPU", "error")


def test_flash_attn_a100_only_check_is_not_pre_ampere():
    log = "RuntimeError: Expected is_sm80 || is_sm90 to be true, but got false."
    assert "FA_PRE_AMPERE_GPU" not in codes(log)


# --- evaluate: a metric script neither local nor fetched from the Hub -----------------


def test_evaluate_module_not_found_anywhere_is_hub_unreachable_warning():
    log = (
        "FileNotFoundError: Couldn't find a module script at /models/lm-evaluation-harness/exact_match/exact_match.py. "
        "Module 'exact_match' doesn't exist on the Hugging Face Hub either."
    )
    assert lead(log) == ("HF_HUB_UNREACHABLE", "warning")


def test_evaluate_local_path_missing_is_not_hub():
    # a path-like name is never fetched: evaluate says only that the script is not there
    log = "FileNotFoundError: Couldn't find a module script at /home/user/metrics/my_metric.py."
    assert "HF_HUB_UNREACHABLE" not in codes(log)


# --- an ahead-of-time extension build failing in torch's headers ----------------------


def test_setuptools_build_failing_in_torch_headers_is_ext_build_failed():
    log = (
        "      /env/lib/python3.10/site-packages/torch/include/c10/util/string_view.h: In instantiation of 'X':\n"
        "      /env/lib/python3.10/site-packages/torch/include/c10/util/string_view.h:577:35: error: "
        "'std_string_type' was not declared in this scope\n"
        "      error: command '/usr/bin/gcc' failed with exit code 1\n"
        "      [end of output]\n"
        "  error: legacy-install-failure\n"
    )
    assert lead(log) == ("EXT_BUILD_FAILED", "info")


def test_build_failing_in_its_own_source_is_not_the_torch_header_reading():
    log = (
        "csrc/my_op.cpp:12:5: error: 'foo' was not declared in this scope\n"
        "error: command '/usr/bin/gcc' failed with exit code 1\n"
    )
    assert "EXT_BUILD_FAILED" not in codes(log)


# --- a submodule or CLI subcommand the installed release lacks ------------------------


def test_missing_submodule_of_stack_package_is_skew_hint():
    log = (
        "ModuleNotFoundError: No module named 'torchtune.training.checkpointing._checkpoint_client'"
    )
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "info")


@pytest.mark.parametrize(
    "log",
    [
        "ModuleNotFoundError: No module named 'myproject.utils.metrics'",
        "ModuleNotFoundError: No module named 'vllm._C'",
    ],
)
def test_own_module_or_compiled_extension_is_not_the_submodule_reading(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        # jsonargparse (litgpt)
        "usage: litgpt [-h] [-c CONFIG] [--print_config[=flags]]\n"
        "              {download,chat,finetune,pretrain,generate,convert,merge_lora,evaluate,serve} ...\n"
        "error: argument subcommand: invalid choice: 'finetune_lora' (choose from 'download', 'chat', 'finetune')",
        # argparse (torchtune's tune)
        "usage: tune [-h] {download,ls,cp,run,validate} ...\n"
        "tune: error: argument {download,ls,cp,run,validate}: invalid choice: 'cat' (choose from 'download', 'ls', 'cp', 'run', 'validate')",
    ],
)
def test_stack_cli_unknown_subcommand_is_skew_hint(log):
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "info")


def test_unknown_subcommand_of_a_users_script_is_not_read():
    log = (
        "usage: train.py [-h] {fit,eval} ...\n"
        "train.py: error: argument {fit,eval}: invalid choice: 'fitt' (choose from 'fit', 'eval')"
    )
    assert codes(log) == []
