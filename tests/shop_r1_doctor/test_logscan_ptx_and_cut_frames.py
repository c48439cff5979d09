"""Readings learned from held-out batch 18, on text shapes beyond the batch's own pastes:
a kernel compiled for a newer CUDA than the driver loads (Triton's bundled ptxas, an
extension's nvcc), and one package calling another's API in a frame whose path the paste
cut before the package. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

# --- DRIVER_TOO_OLD_FOR_TORCH_CUDA: the driver refuses newer PTX or an image --------------


@pytest.mark.parametrize(
    "line",
    [
        # Triton's gpuAssert, under torch.compile (Dynamo's wrapper line above it)
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Triton Error [CUDA]: device kernel image is invalid",
        "RuntimeError: Triton Error [CUDA]: the provided PTX was compiled with an unsupported"
        " toolchain.",
        # torch's own check on an extension's or a JIT kernel's PTX
        "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
        # the driver API's name for it, as a C++ extension prints it
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported"
        " toolchain.",
    ],
)
def test_a_kernel_for_a_newer_cuda_than_the_driver_is_the_driver(line):
    assert ("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "warning") in readings(line)


@pytest.mark.parametrize(
    "line",
    [
        # other driver errors Triton reports: a kernel's bug, a full GPU, a bad launch
        "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
        "RuntimeError: Triton Error [CUDA]: out of memory",
        "RuntimeError: Triton Error [CUDA]: invalid argument",
        # the image is the user's own file, not a kernel
        "PIL.UnidentifiedImageError: cannot identify image file; the image is invalid",
    ],
)
def test_other_triton_and_cuda_errors_are_not_the_driver(line):
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in [c for c, _ in readings(line)]


# --- PACKAGE_VERSION_SKEW: a package's frame whose path the paste cut ---------------------

CUT_FRAME = (
    '/trl/trainer/grpo_trainer.py", line 269, in __init__\n'
    "    super().__init__(\n"
    "TypeError: Trainer.__init__() got an unexpected keyword argument 'processing_class'\n"
)


def test_a_frame_cut_before_the_package_is_still_the_packages():
    assert ("PACKAGE_VERSION_SKEW", "info") in readings(CUT_FRAME)


@pytest.mark.parametrize(
    "text",
    [
        # the user's own script, its path cut the same way
        '/home/me/train.py", line 3, in main\n'
        "TypeError: build() got an unexpected keyword argument 'processing_class'\n",
        # a folder named like a package further down a user's path, not at the cut
        '/home/me/trl_runs/train.py", line 3, in main\n'
        "TypeError: build() got an unexpected keyword argument 'processing_class'\n",
        # a package that is not the stack's
        '/mylib/trainer.py", line 9, in __init__\n'
        "TypeError: Base.__init__() got an unexpected keyword argument 'processing_class'\n",
    ],
)
def test_a_cut_frame_that_is_not_a_stack_package_is_no_skew(text):
    assert "PACKAGE_VERSION_SKEW" not in [c for c, _ in readings(text)]


# --- BNB_NO_CUDA_BINARY: bitsandbytes fell back to its CPU library ---------------------------

BNB_CPU = (
    "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers,"
    " 8-bit multiplication, and GPU quantization are unavailable."
)


def test_bitsandbytes_on_its_cpu_library_is_a_hint():
    assert readings(BNB_CPU) == [("BNB_NO_CUDA_BINARY", "info")]


@pytest.mark.parametrize(
    "context",
    [
        # macOS and a CPU torch, where no CUDA library is meant
        "/Users/me/venv/lib/python3.11/site-packages/bitsandbytes/cextension.py:34: UserWarning: ",
        "torch 2.5.1+cpu\n",
        "UserWarning: Torch not compiled with CUDA enabled\n",
    ],
)
def test_bitsandbytes_cpu_library_where_no_gpu_is_meant_is_no_finding(context):
    assert "BNB_NO_CUDA_BINARY" not in [c for c, _ in readings(context + BNB_CPU)]


def test_the_missed_library_file_leads_at_its_own_severity():
    text = (
        "Could not find the bitsandbytes CUDA binary at PosixPath('/usr/local/lib/python3.12/"
        "dist-packages/bitsandbytes/libbitsandbytes_cuda129.so')\n" + BNB_CPU
    )
    assert readings(text)[0] == ("BNB_NO_CUDA_BINARY", "error")
