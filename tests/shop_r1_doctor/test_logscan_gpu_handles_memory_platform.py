"""GPU, memory and platform failures read from the frameworks' own messages: CUDA's busy
device, cuBLAS/cuDNN handles, cuDNN's loader, torch's lazy CUDA init, SIGBUS, Windows' host
allocation, disk offload, fp16 on the CPU, checkpoints for CUDA without CUDA, MPS, torch's
NumPy bridge and a bare read-only file system. Codes and severities only (wording:
codes.yaml); each reading has its framework's form, a second spelling where one exists, and a
near miss it must not read."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

# --- CUDA: a device that refuses the process -------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
        "CUDA kernel errors might be asynchronously reported at some other API call",
        # CUDA 11 and older, and Caffe's check with the error number
        "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
        "Check failed: error == cudaSuccess (46 vs. 0)  all CUDA-capable devices are busy or"
        " unavailable",
    ],
)
def test_busy_or_unavailable_device_is_a_hint_of_another_process(log):
    assert readings(log)[0] == ("GPU_BUSY_OTHER_PROCESSES", "warning")


def test_a_busy_port_is_not_a_busy_gpu():
    assert "GPU_BUSY_OTHER_PROCESSES" not in codes(
        "RuntimeError: The server socket has failed to bind: the device or resource is busy"
    )


# --- cuBLAS / cuDNN handles: most often an out-of-memory in other words ----------------------


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasLtCreate(&handle)`",
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
    ],
)
def test_handle_not_initialized_is_an_oom_hint(log):
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "info")


def test_handle_failure_after_a_device_side_assert_is_the_users_index():
    log = (
        "../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [0,0,0],"
        " thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
    )
    assert "GPU_OUT_OF_MEMORY" not in codes(log)


def test_other_cublas_statuses_are_not_a_handle_failure():
    log = "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle)`"
    assert ("GPU_OUT_OF_MEMORY", "info") not in readings(log)


# --- cuDNN's own loader: a CUDA library missing ----------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared"
        " object file: No such file or directory\nPlease make sure libcudnn_cnn_infer.so.8 is in"
        " your library path!\nAborted (core dumped)",
        "Could not load library libcudnn_ops_infer.so.8. Error: libcublasLt.so.11: cannot open"
        " shared object file: No such file or directory",
        "Could not load library cudnn_ops_infer64_8.dll. Error code 126\nPlease make sure"
        " cudnn_ops_infer64_8.dll is in your library path!",
        "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!",
    ],
)
def test_cudnn_loader_names_a_missing_library(log):
    assert readings(log)[0] == ("CUDA_RUNTIME_LIB_MISSING", "error")


@pytest.mark.parametrize(
    "log",
    [
        # the driver's library: not a CUDA runtime one
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared"
        " object file: No such file or directory",
        # a procedure missing (versions apart), and the page file: not a missing library
        "Could not load library cudnn_cnn_infer64_8.dll. Error code 127",
        "Could not load library cudnn_cnn_infer64_8.dll. Error code 1455",
    ],
)
def test_cudnn_loader_near_misses(log):
    assert ("CUDA_RUNTIME_LIB_MISSING", "error") not in readings(log)


# --- torch's lazy CUDA init: an index past the GPUs the runtime gives ------------------------

NUM_GPUS = (
    'device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/'
    'CUDAContext.cpp":50, please report a bug to PyTorch. device=1, num_gpus=1'
)


@pytest.mark.parametrize(
    "log",
    [
        "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with"
        f" error: {NUM_GPUS}",
        f"RuntimeError: {NUM_GPUS}",
    ],
)
def test_device_past_num_gpus_is_an_ordinal_hint(log):
    assert readings(log)[0] == ("DEVICE_ORDINAL_OUT_OF_RANGE", "warning")


def test_peer_device_assert_is_not_this_reading():
    log = "RuntimeError: peer_device >= 0 && peer_device < num_gpus INTERNAL ASSERT FAILED"
    assert "DEVICE_ORDINAL_OUT_OF_RANGE" not in codes(log)


# --- SIGBUS: most often shared memory ---------------------------------------------------------

SUMMARY = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "Root Cause (first observed failure):\n[0]:\n  rank      : 0 (local_rank: 0)\n"
    "  exitcode  : -7 (pid: 1234)\n  error_file: <N/A>\n"
    "  traceback : Signal 7 (SIGBUS) received by PID 1234"
)


@pytest.mark.parametrize(
    "log",
    [
        SUMMARY,
        "E1105 10:00:01.000000 1234 torch/distributed/elastic/multiprocessing/api.py:869]"
        " failed (exitcode: -7) local_rank: 0 (pid: 1235) of binary: /usr/bin/python3",
        "Fatal Python error: Bus error\n\nThread 0x00007f (most recent call first):",
        "bash: line 1:  4242 Bus error               (core dumped) python train.py",
    ],
)
def test_sigbus_is_a_shared_memory_hint(log):
    assert readings(log)[0] == ("DATALOADER_SHM_BUS_ERROR", "info")


def test_other_exit_codes_are_not_sigbus():
    for log in (
        SUMMARY.replace("-7", "-11").replace("Signal 7 (SIGBUS)", "Signal 11 (SIGSEGV)"),
        "failed (exitcode: -70) local_rank: 0",
        "  exitcode  : 7 (pid: 1234)",
    ):
        assert "DATALOADER_SHM_BUS_ERROR" not in codes(log)


def test_dataloaders_own_bus_error_keeps_its_reading():
    log = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.\n" + SUMMARY
    assert readings(log)[0] == ("DATALOADER_SHM_BUS_ERROR", "warning")


# --- host memory on Windows -------------------------------------------------------------------


def test_windows_cpu_allocator_is_the_commit_limit():
    # Windows has no address-space rlimit: the allocator's refusal is the commit limit
    # (RAM plus the page file), the limit WinError 1455 names
    log = (
        "RuntimeError: [enforce fail at C:\\actions-runner\\_work\\pytorch\\pytorch\\c10\\core\\"
        "impl\\alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to"
        " allocate 11274289152 bytes."
    )
    assert readings(log)[0] == ("WIN_PAGING_FILE_TOO_SMALL", "warning")
    assert "ADDRESS_SPACE_LIMIT" not in codes(log)


def test_other_not_enough_memory_lines_are_not_the_allocator():
    log = "AssertionError: Not enough memory in buffer. Allocation failed"
    assert not {"ADDRESS_SPACE_LIMIT", "WIN_PAGING_FILE_TOO_SMALL"} & set(codes(log))


# --- disk offload ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ValueError: The current `device_map` had weights offloaded to the disk. Please provide"
        " an `offload_folder` for them. Alternatively, make sure you have `safetensors` installed",
        "ValueError: The current `device_map` had weights offloaded to the disk, which needed to"
        " be re-saved. This is either because the weights are not in `safetensors` format, or"
        " because the model uses an internal weight format different than the one saved (i.e."
        " most MoE models). Please provide an `offload_folder` for them in `from_pretrained`.",
    ],
)
def test_weights_offloaded_to_disk_is_a_too_large_model(log):
    assert readings(log)[0] == ("MODEL_TOO_LARGE_FOR_GPU", "warning")


def test_an_offload_folder_in_use_is_not_a_failure():
    assert "MODEL_TOO_LARGE_FOR_GPU" not in codes("offload_folder=./offload device_map=auto")


# --- fp16 on the CPU; a CUDA checkpoint without CUDA -----------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
        "RuntimeError: \"slow_conv2d_cpu\" not implemented for 'Half'",
        "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
    ],
)
def test_half_op_on_cpu_is_a_no_gpu_hint(log):
    assert readings(log)[0] == ("TORCH_CUDA_UNAVAILABLE", "info")


def test_other_dtype_dispatch_refusals_are_not_fp16_on_cpu():
    for log in (
        "RuntimeError: \"addmm_cuda\" not implemented for 'Int'",
        "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Long'",
    ):
        assert "TORCH_CUDA_UNAVAILABLE" not in codes(log)


def test_cuda_checkpoint_without_cuda_is_an_unavailable_gpu():
    log = (
        "RuntimeError: Attempting to deserialize object on a CUDA device but"
        " torch.cuda.is_available() is False. If you are running on a CPU-only machine, please"
        " use torch.load with map_location=torch.device('cpu') to map your storages to the CPU."
    )
    assert readings(log)[0] == ("TORCH_CUDA_UNAVAILABLE", "warning")


def test_checkpoint_for_a_device_index_past_the_count_is_not_unavailable_cuda():
    log = (
        "RuntimeError: Attempting to deserialize object on CUDA device 1 but"
        " torch.cuda.device_count() is 1. Please use torch.load with map_location"
    )
    assert "TORCH_CUDA_UNAVAILABLE" not in codes(log)


# --- Apple MPS --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "NotImplementedError: The operator 'aten::_linalg_solve_ex.result' is not currently"
        " implemented for the MPS device. If you want this op to be considered for addition"
        " please comment on https://github.com/pytorch/pytorch/issues/141287",
        # torch 1.12's spelling
        "NotImplementedError: The operator 'aten::index.Tensor' is not current implemented for"
        " the MPS device.",
    ],
)
def test_mps_op_missing_is_an_mps_error(log):
    assert readings(log)[0] == ("MPS_OP_NOT_IMPLEMENTED", "error")


def test_mps_fallback_warning_is_not_a_failure():
    log = (
        "UserWarning: The operator 'aten::nonzero' is not currently supported on the MPS"
        " backend and will fall back to run on the CPU. This may have performance implications."
    )
    assert "MPS_OP_NOT_IMPLEMENTED" not in codes(log)


# --- torch's NumPy bridge ---------------------------------------------------------------------


def test_numpy_not_available_is_a_numpy2_hint():
    log = (
        '  File "/x/train.py", line 41, in <module>\n'
        "    action = policy(obs).cpu().detach().numpy()\nRuntimeError: Numpy is not available"
    )
    assert readings(log)[0] == ("NUMPY2_BINARY_INCOMPAT", "info")


def test_numpy_not_available_after_a_named_cause_defers_to_it():
    log = (
        "UserWarning: Failed to initialize NumPy: module compiled against API version 0x10 but"
        " this version of numpy is 0xd\nRuntimeError: Numpy is not available"
    )
    found = readings(log)
    assert found[0][0] == "NUMPY_OLDER_THAN_BUILD"
    assert ("NUMPY2_BINARY_INCOMPAT", "info") not in found


# --- a bare read-only file system ------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "OSError: [Errno 30] Read-only file system: '/data/checkpoints'",
        "PermissionError: [Errno 30] Read-only file system: '/mnt/in/run.log'",
    ],
)
def test_bare_read_only_file_system_is_a_hint(log):
    assert readings(log)[0] == ("OUTPUT_DIR_NOT_WRITABLE", "info")


def test_read_only_file_system_under_a_cache_stays_the_caches():
    log = (
        "    os.makedirs(self._cache_dir_root, exist_ok=True)\n"
        '  File "<frozen os>", line 225, in makedirs\n'
        "OSError: [Errno 30] Read-only file system: '/tmp/hf-home/datasets'"
    )
    assert readings(log)[0] == ("CACHE_DIR_NOT_WRITABLE", "error")


def test_errno_30_without_a_path_is_not_read():
    assert "OUTPUT_DIR_NOT_WRITABLE" not in codes("mount: /data: Read-only file system")
