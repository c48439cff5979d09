"""A broken host or container under CUDA: the stub libcuda, a container without its GPU
device, CUDA libraries missing (NCCL at import, cuDNN 9's sub-libraries, NVRTC's builtins)
and Triton without a ptxas. Learned from failures caused on one H100 in a private mount
namespace (tests/fixtures/faults/gpu/, batch 13), read here on other shapes of the same
messages; codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

from shop_r1_doctor.logscan import find_evidence

TORCH_INIT = (
    '  File "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", line 478, in'
    " _lazy_init\n    torch._C._cuda_init()\n"
)

# --- CUDA_DRIVER_STUB_LOADED ---------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # torch 2.11: the warning from is_available(), then the error at .to('cuda')
        "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:180: UserWarning: CUDA"
        " initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda"
        " functions before calling NumCudaDevices() that might have already set an error?"
        " Error 34: CUDA driver is a stub library (Triggered internally at"
        " /pytorch/c10/cuda/CUDAFunctions.cpp:119.)\n"
        f"{TORCH_INIT}RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run"
        " some cuda functions before calling NumCudaDevices() that might have already set an"
        " error? Error 34: CUDA driver is a stub library",
        # the runtime's enum name (CuPy), the driver API's (a C++ program), under a rank prefix
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorStubLibrary: CUDA driver is"
        " a stub library",
        "[rank0]: cuInit failed: CUDA_ERROR_STUB_LIBRARY",
    ],
)
def test_the_stub_libcuda_is_its_own_error(log):
    assert lead(log) == ("CUDA_DRIVER_STUB_LOADED", "error")
    # not also the device-count reading's fabric manager / driver mismatch list
    assert "CUDA_INIT_FAILED_HOST_STATE" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda"
        " functions before calling NumCudaDevices() that might have already set an error?"
        " Error 802: system not yet initialized",
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda"
        " functions before calling NumCudaDevices() that might have already set an error?"
        " Error 804: forward compatibility was attempted on non supported HW",
    ],
)
def test_other_device_count_errors_are_not_the_stub(log):
    assert "CUDA_DRIVER_STUB_LOADED" not in codes(log)
    assert "CUDA_INIT_FAILED_HOST_STATE" in codes(log)


# --- DOCKER_GPU_RUNTIME_MISSING: no device in a container ----------------------------------

NO_GPU = f"torch.cuda.is_available(): False\n{TORCH_INIT}RuntimeError: No CUDA GPUs are available"


@pytest.mark.parametrize(
    "shown",
    [
        "$ docker run --rm -e NVIDIA_VISIBLE_DEVICES=all trainer python train.py\n",
        "NVIDIA_VISIBLE_DEVICES=all\nCUDA_VERSION=13.0.2\n",  # an env dump in a CUDA image
        "Running inside container 'trainer-0' (kubepods)\n",
    ],
)
def test_no_gpu_in_a_container_reads_as_the_container_started_without_it(shown):
    found = readings(shown + NO_GPU)
    assert found[0] == ("DOCKER_GPU_RUNTIME_MISSING", "warning")
    assert ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "info") in found


def test_no_gpu_without_a_container_stays_the_visible_devices_hint():
    assert lead(NO_GPU) == ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "info")
    assert "DOCKER_GPU_RUNTIME_MISSING" not in codes(NO_GPU)
    # WSL's own container-less GPU path is not Docker's
    wsl = "Linux 5.15.153.1-microsoft-standard-WSL2 docker\n" + NO_GPU
    assert "DOCKER_GPU_RUNTIME_MISSING" not in codes(wsl)


def test_the_nvidia_container_variable_shows_a_container():
    assert "container" in find_evidence("NVIDIA_VISIBLE_DEVICES=0")
    assert "container" not in find_evidence("CUDA_VISIBLE_DEVICES=0")


# --- CUDA_RUNTIME_LIB_MISSING: NCCL, cuDNN 9's sub-libraries, NVRTC's builtins -------------


@pytest.mark.parametrize(
    "log",
    [
        # torch's CUDA wheel at import, the nvidia-nccl wheel's library gone
        '  File "/opt/venv/lib/python3.12/site-packages/torch/__init__.py", line 442, in'
        " <module>\n    from torch._C import *  # noqa: F403\n"
        "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory",
        # through ctypes, another release's name
        "OSError: libnccl.so.2.28.3: cannot open shared object file: No such file or directory",
    ],
)
def test_a_missing_nccl_library_is_a_missing_cuda_library(log):
    assert lead(log) == ("CUDA_RUNTIME_LIB_MISSING", "error")
    assert "SYSTEM_LIB_MISSING" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        # cuDNN's logging off: the one line before the abort (torch 2.11, cuDNN 9.14)
        "Invalid handle. Cannot load symbol cudnnGetVersion",
        # the sub-library named first, as faster-whisper / ctranslate2 users paste it
        "Unable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9,"
        " libcudnn_ops.so}\nInvalid handle. Cannot load symbol cudnnCreateTensorDescriptor\n"
        "Aborted (core dumped)",
        # docker compose's prefix, then the abort
        "factory  | Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1,"
        " libcudnn_cnn.so.9, libcudnn_cnn.so}\nfactory  | Invalid handle. Cannot load symbol"
        " cudnnCreateConvolutionDescriptor",
    ],
)
def test_cudnn9_that_cannot_load_its_sub_library_is_a_missing_cuda_library(log):
    assert lead(log) == ("CUDA_RUNTIME_LIB_MISSING", "error")


@pytest.mark.parametrize(
    "log",
    [
        # a cuDNN call that failed for another reason
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you"
        " passed in a non-contiguous input.",
        # another library's handle (not cuDNN's dispatcher)
        "Invalid handle. Cannot load symbol cublasLtCreate",
        "Unable to load any of {libfoo.so.1, libfoo.so}",
    ],
)
def test_other_cudnn_and_loader_failures_are_not_it(log):
    assert "CUDA_RUNTIME_LIB_MISSING" not in codes(log)


JITERATOR_SOURCE = (
    "RuntimeError: \n  #ifdef __HIPCC__\n  #define ERROR_UNSUPPORTED_CAST ;\n"
    '  extern "C" __global__\n  void calc_i0e_vectorized4_kernel(\n'
    "      const int N,\n      Array<char*, 1+1> data,\n"
)


@pytest.mark.parametrize(
    "log",
    [
        # torch's jiterator: the kernel source, then NVRTC's log (torch 2.11, CUDA 13.0)
        f"{JITERATOR_SOURCE}  }}\nnvrtc: error: failed to open libnvrtc-builtins.so.13.0.\n"
        "  Make sure that libnvrtc-builtins.so.13.0 is installed correctly.",
        # numba-cuda's wording around it
        "numba.cuda.cudadrv.error.NvrtcError: NVRTC Compilation failure whilst compiling"
        " memsys.cu:\n\nnvrtc: error: failed to open libnvrtc-builtins.so.12.8.\n"
        "  Make sure that libnvrtc-builtins.so.12.8 is installed correctly.",
        # Windows' file name
        "RuntimeError: nvrtc: error: failed to open nvrtc-builtins64_118.dll.\n"
        "  Make sure that nvrtc-builtins64_118.dll is installed correctly.",
    ],
)
def test_nvrtc_without_its_builtins_is_a_missing_cuda_library(log):
    assert lead(log) == ("CUDA_RUNTIME_LIB_MISSING", "error")


def test_a_kernel_nvrtc_refuses_to_compile_is_not_a_missing_library():
    log = (
        f"{JITERATOR_SOURCE}  }}\n"
        'default_program(12): error: identifier "undefined_fn" is undefined\n\n'
        '1 error detected in the compilation of "default_program".\nnvrtc compilation failed'
    )
    assert "CUDA_RUNTIME_LIB_MISSING" not in codes(log)


# --- TRITON_PTXAS_NOT_FOUND ----------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # torch.compile on torch 2.11 / Triton 3.6: Inductor re-raises Triton's error
        '  File "/opt/venv/lib/python3.12/site-packages/triton/knobs.py", line 217, in'
        ' transform\n    raise RuntimeError(f"Cannot find {self.binary}")\n'
        "torch._inductor.exc.InductorError: RuntimeError: Cannot find ptxas",
        # Windows, the older Dynamo wrapper
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Cannot find ptxas.exe",
        # a Blackwell GPU's separate tool, a Triton kernel called directly
        "[rank1]: RuntimeError: Cannot find ptxas-blackwell",
    ],
)
def test_triton_without_a_ptxas_it_can_run(log):
    assert lead(log) == ("TRITON_PTXAS_NOT_FOUND", "error")


@pytest.mark.parametrize(
    "log",
    [
        # ptxas ran and refused the arch: its own readings
        "RuntimeError: Internal Triton PTX codegen error\n`ptxas` stderr:\n"
        "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'",
        "RuntimeError: Cannot find ptxasm",
        "FileNotFoundError: [Errno 2] No such file or directory: 'ptxas'",
    ],
)
def test_other_ptxas_failures_are_not_it(log):
    assert "TRITON_PTXAS_NOT_FOUND" not in codes(log)
