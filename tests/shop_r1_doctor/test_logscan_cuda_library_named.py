"""A CUDA library named by its file, with a failure phrase on the same line, in any
program's words: a warning of a missing CUDA runtime library (a DLL: also a Windows DLL
load), ranked below the exact messages of the loader, cuDNN, NVRTC and ctranslate2.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

CODE = "CUDA_RUNTIME_LIB_MISSING"


@pytest.mark.parametrize(
    "log",
    [
        "FileNotFoundError: Could not find: cublasLt64_12.dll. Is it on your PATH?",
        "FileNotFoundError: Could not find: cudnn64_8.dll. Is it on your PATH?",
        "[launcher] cudart64_12.dll not found, GPU acceleration disabled",
    ],
)
def test_a_cuda_dll_named_as_not_found_is_a_warning(log):
    assert lead(log) == (CODE, "warning")


@pytest.mark.parametrize(
    "log",
    [
        "OSError: Could not load libcublasLt.so.12: not found on the library path",
        "ERROR: unable to load libnvJitLink.so.12 needed by the JIT",
        "libcudnn_ops.so.9 could not be found in any of the library folders",
    ],
)
def test_a_cuda_shared_library_named_as_not_found_is_a_warning(log):
    assert lead(log) == (CODE, "warning")


def test_the_loaders_own_message_keeps_its_reading_and_severity():
    log = (
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory"
    )
    assert lead(log) == (CODE, "error")


@pytest.mark.parametrize(
    "log",
    [
        # TensorFlow on a CPU-only machine: a notice, not a failure
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic"
        " library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object"
        " file: No such file or directory; Ignore above cudart dlerror if you do not have a GPU"
        " set up on your machine.",
        "Successfully installed nvidia-cublas-cu12-12.4.5.8 nvidia-cudnn-cu12-9.1.0.70",
        "loaded libcublasLt.so.12 from /usr/local/cuda/lib64",
        "FileNotFoundError: Could not find: model.safetensors. Is it on your PATH?",
    ],
)
def test_a_library_loaded_installed_or_another_file_is_not_this(log):
    assert CODE not in codes(log), readings(log)
