"""Readings checked against GPU fault batch 7 (one H100, transformers 5.17), on text shapes
beyond the batch's own logs: FlashAttention 3/4 wordings, a 4.x wording, the refusals of an
installed flash-attn that share the missing package's preface, and the user's own CUDA bugs.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

PREFACE = "ImportError: FlashAttention{n} has been toggled on, but it cannot be used due to the "
PREFACE += "following error: "


@pytest.mark.parametrize(
    "log",
    [
        # transformers 5's wording, for each flash_attention_N it knows
        PREFACE.format(n=2) + "the package for FlashAttention2 doesn't seem to be installed.",
        PREFACE.format(n=3) + "the package for FlashAttention3 doesn't seem to be installed.",
        PREFACE.format(n=4) + "the package for FlashAttention4 doesn't seem to be installed.",
        # transformers 4.x, behind torchrun's rank prefix
        "[rank0]: " + PREFACE.format(n=2) + "the package flash_attn seems to be not installed.",
        # a pytest summary cut before the reason
        "FAILED tests/test_vlm.py::test_train - ImportError: FlashAttention2 has been toggled on,"
        " but it cannot be used due to the fol",
    ],
)
def test_a_flash_attention_package_that_is_not_installed_is_an_error(log):
    assert readings(log)[0] == ("FA_REQUESTED_NOT_INSTALLED", "error")


@pytest.mark.parametrize(
    "reason",
    [
        "FlashAttention2 requires at least version `2.3.3`.",
        "FlashAttention2 is not available on CPU. Please make sure you are on any of the"
        " supported devices: ('cuda', 'xpu').",
        "FlashAttention3 requires compute capability >= 9.0, but found NVIDIA A100-SXM4-80GB"
        " with compute capability 8.x",
    ],
)
def test_an_installed_flash_attention_that_refuses_is_not_read_as_missing(reason):
    n = reason[len("FlashAttention")]
    codes = [code for code, _ in readings(PREFACE.format(n=n) + reason)]
    assert "FA_REQUESTED_NOT_INSTALLED" not in codes


def test_a_dataloader_shm_allocation_refused_with_eagain_is_read_as_small_shm():
    # torch 2.11 on an H100 under a 64 MiB /dev/shm gave EAGAIN, not ENOSPC
    log = (
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.\n"
        "RuntimeError: unable to allocate shared memory(shm) for file </torch_774_1058316955_0>:"
        " Resource temporarily unavailable (11)\n"
    )
    assert readings(log)[0] == ("DATALOADER_SHM_BUS_ERROR", "warning")


@pytest.mark.parametrize(
    "log",
    [
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:245: nll_loss_forward_reduce_cuda_kernel_2d:"
        " block: [0,0,0], thread: [7,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
        "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
        "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu,"
        " different from other tensors on cuda:0 (when checking argument in method"
        " wrapper_CUDA_addmm)",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x16 and 32x8)",
    ],
)
def test_the_users_own_cuda_bugs_get_no_error_level_reading(log):
    assert [code for code, severity in readings(log) if severity == "error"] == []
