"""Driver state, ROCm, builds, distributed start-up and launch: each line in the form the
framework prints it (and a second spelling where one exists) reads as its code and
severity; a near miss does not. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

# (log, code, severity of that reading): the reading must lead
LEADS = [
    # --- driver state ---
    (
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.54",
        "CUDA_INIT_FAILED_HOST_STATE",
        "error",
    ),
    (
        "pynvml.NVMLError_LibRmVersionMismatch: Driver/library version mismatch",
        "CUDA_INIT_FAILED_HOST_STATE",
        "error",
    ),
    (
        "[ 12.3] NVRM: API mismatch: the client has the version 550.54.15, but\n"
        "NVRM: this kernel module has the version 535.161.08.",
        "CUDA_INIT_FAILED_HOST_STATE",
        "error",
    ),
    (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure"
        " that the latest NVIDIA driver is installed and running.",
        "CUDA_INIT_FAILED_HOST_STATE",
        "error",
    ),
    (
        "docker: Error response from daemon: failed to create task for container: OCI runtime"
        " create failed: nvidia-container-cli: initialization error: load library failed:"
        " libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown.",
        "CONTAINER_HOST_DRIVER_NOT_FOUND",
        "error",
    ),
    (
        "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.",
        "CONTAINER_HOST_DRIVER_NOT_FOUND",
        "error",
    ),
    # --- ROCm ---
    (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 23.98 GiB of which 1.02 GiB is free.",
        "GPU_OUT_OF_MEMORY",
        "error",
    ),
    (
        "RuntimeError: HIP error: out of memory\nHIP kernel errors might be asynchronously reported",
        "GPU_OUT_OF_MEMORY",
        "error",
    ),
    (
        "RuntimeError: HIP error: invalid device function\nHIP kernel errors might be"
        " asynchronously reported at some other API call",
        "CUDA_NO_KERNEL_IMAGE",
        "warning",
    ),
    ("hipErrorInvalidDeviceFunction", "CUDA_NO_KERNEL_IMAGE", "warning"),
    # --- builds ---
    (
        "/tmp/tmpx7c0/main.c:6:10: fatal error: Python.h: No such file or directory\n"
        "    6 | #include <Python.h>\n      |          ^~~~~~~~~~\ncompilation terminated.",
        "PYTHON_DEV_HEADERS_MISSING",
        "error",
    ),
    (
        "src/module.c:1:10: fatal error: 'Python.h' file not found\n#include <Python.h>",
        "PYTHON_DEV_HEADERS_MISSING",
        "error",
    ),
    (
        "subprocess.CalledProcessError: Command '['which', 'c++']' returned non-zero exit status 1.",
        "EXT_BUILD_NO_C_COMPILER",
        "error",
    ),
    (
        "CalledProcessError: Command '['which', '/opt/rh/gcc-toolset-12/root/usr/bin/g++-12']'"
        " returned non-zero exit status 1.",
        "EXT_BUILD_NO_C_COMPILER",
        "error",
    ),
    (
        "nvcc fatal   : Value 'sm_90a' is not defined for option 'gpu-architecture'",
        "NVCC_TOO_OLD_FOR_ARCH",
        "warning",
    ),
    (
        "nvcc fatal : Value 'compute_120' is not defined for option 'gpu-code'",
        "NVCC_TOO_OLD_FOR_ARCH",
        "warning",
    ),
    ("RuntimeError: Error building extension 'fused_adam'", "EXT_BUILD_FAILED", "info"),
    (
        "ImportError: libtorch_cpu.so: cannot open shared object file: No such file or directory",
        "TORCH_IMPORT_FAILED",
        "warning",
    ),
    (
        "ImportError: libc10.so: cannot open shared object file: No such file or directory",
        "TORCH_IMPORT_FAILED",
        "warning",
    ),
    # --- distributed start-up ---
    (
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        "NODE_COUNT_MISMATCH",
        "warning",
    ),
    (
        "NCCL WARN NET/IB : Got completion from peer 10.0.0.2<12345> with error 12, opcode 0,"
        " len 0, vendor err 129 (Recv)",
        "NODE_NETWORK_UNREACHABLE",
        "warning",
    ),
    (
        "ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.216.210.236<54862> with"
        " status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00::1 remoteGids fd00::2",
        "NODE_NETWORK_UNREACHABLE",
        "warning",
    ),
    (
        "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving"
        " ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got"
        " error: Connection reset by peer",
        "NODE_NETWORK_UNREACHABLE",
        "info",
    ),
    (
        "RuntimeError: [3] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via"
        " c10d key-value store by key '0', but store->get('0') got error: Socket Timeout",
        "NODE_NETWORK_UNREACHABLE",
        "info",
    ),
    (
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2"
        " clients joined.",
        "NODE_COUNT_MISMATCH",
        "warning",
    ),
    (
        "[W socket.cpp:464] [c10d] The server socket has failed to bind to 10.1.2.3:29500 (errno:"
        " 99 - Cannot assign requested address).\n[E socket.cpp:500] [c10d] The server socket"
        " has failed to listen on any local network address.",
        "BIND_ADDRESS_NOT_LOCAL",
        "error",
    ),
    (
        '  File "/srv/app/server.py", line 12, in serve\n    sock.bind((host, port))\n'
        "OSError: [Errno 99] Cannot assign requested address",
        "BIND_ADDRESS_NOT_LOCAL",
        "error",
    ),
    (
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/rendezvous/'
        'utils.py", line 149, in _matches_machine_hostname\n    addr_list = socket.getaddrinfo(\n'
        '  File "/usr/lib/python3.10/socket.py", line 955, in getaddrinfo\n'
        "    for res in _socket.getaddrinfo(host, port, family, type, proto, flags):\n"
        "socket.gaierror: [Errno -2] Name or service not known",
        "NODE_NETWORK_UNREACHABLE",
        "error",
    ),
    (
        '[rank1]:   File "/opt/conda/lib/python3.11/site-packages/torch/distributed/'
        'rendezvous.py", line 80, in _env_rendezvous_handler\n'
        "[rank1]: socket.gaierror: [Errno -3] Temporary failure in name resolution",
        "NODE_NETWORK_UNREACHABLE",
        "error",
    ),
    # --- launch ---
    (
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 got signal: 1",
        "LAUNCH_SESSION_HANGUP",
        "warning",
    ),
    (
        "W0101 00:00:00.000 123 torch/distributed/elastic/agent/server/api.py:753] Received"
        " Signals.SIGHUP death signal, shutting down workers",
        "LAUNCH_SESSION_HANGUP",
        "warning",
    ),
    (
        "ValueError: fp16 mixed precision requires a GPU (not 'mps').",
        "MIXED_PRECISION_NEEDS_GPU",
        "error",
    ),
    (
        "ValueError: fp16 mixed precision requires a device in ('xpu', 'cuda', 'npu', 'xla', 'mlu',"
        " 'musa', 'hpu', 'sdaa', 'mps') (not 'cpu').",
        "MIXED_PRECISION_NEEDS_GPU",
        "error",
    ),
    (
        "AssertionError: Mixed precision training with AMP or APEX (`--fp16` or `--bf16`) and half"
        " precision evaluation (`--fp16_full_eval` or `--bf16_full_eval`) can only be used on CUDA"
        " or MLU devices or NPU devices or certain XPU devices (with IPEX).",
        "MIXED_PRECISION_NEEDS_GPU",
        "error",
    ),
    (
        "ValueError: FP16 Mixed precision training with AMP or APEX (`--fp16`) and FP16 half"
        " precision evaluation (`--fp16_full_eval`) can only be used on CUDA devices.",
        "MIXED_PRECISION_NEEDS_GPU",
        "error",
    ),
    (
        "RuntimeError: DataLoader worker (pid(s) 1234, 1240) exited unexpectedly",
        "DATALOADER_SHM_BUS_ERROR",
        "info",
    ),
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tThe actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR"
        " Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of"
        " file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM"
        " killer due to high memory usage.",
        "HOST_OOM_KILLED",
        "info",
    ),
]


@pytest.mark.parametrize(
    "log, code, severity", LEADS, ids=[f"{c}-{i}" for i, (_, c, _) in enumerate(LEADS)]
)
def test_the_framework_line_reads_as_its_cause(log, code, severity):
    assert readings(log)[0] == (code, severity)


# near misses: the same words about something else, or the cause shown elsewhere
NEAR_MISSES = [
    ("NVML library version: 550.54", "CUDA_INIT_FAILED_HOST_STATE"),
    (
        "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/x",
        "CONTAINER_HOST_DRIVER_NOT_FOUND",
    ),
    ("HIP_VISIBLE_DEVICES=0 memory: 23.98 GiB free", "GPU_OUT_OF_MEMORY"),
    ("RuntimeError: HIP error: invalid device ordinal", "CUDA_NO_KERNEL_IMAGE"),
    ("fatal error: cuda_runtime.h: No such file or directory", "PYTHON_DEV_HEADERS_MISSING"),
    (
        "CalledProcessError: Command '['which', 'nvcc']' returned non-zero exit status 1.",
        "EXT_BUILD_NO_C_COMPILER",
    ),
    (
        "nvcc fatal   : Value 'sm_86+PTX' is not defined for option 'gpu-architecture'",
        "NVCC_TOO_OLD_FOR_ARCH",
    ),
    ("Building extension module fused_adam...", "EXT_BUILD_FAILED"),
    ("ImportError: libcudart.so.12: cannot open shared object file", "TORCH_IMPORT_FAILED"),
    ("RendezvousClosedError", "NODE_COUNT_MISMATCH"),
    ("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>", "NODE_NETWORK_UNREACHABLE"),
    ("Timed out after 30 seconds waiting for the server", "NODE_COUNT_MISMATCH"),
    ("OSError: [Errno 99] Cannot assign requested address", "BIND_ADDRESS_NOT_LOCAL"),
    ("socket.gaierror: [Errno -2] Name or service not known", "NODE_NETWORK_UNREACHABLE"),
    (
        '  File "/venv/lib/python3.11/site-packages/huggingface_hub/file_download.py", line 1, in'
        " get\nsocket.gaierror: [Errno -3] Temporary failure in name resolution",
        "NODE_NETWORK_UNREACHABLE",
    ),
    (
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 got signal: 15",
        "LAUNCH_SESSION_HANGUP",
    ),
    ("SignalException: Process 77 got signal: 11", "LAUNCH_SESSION_HANGUP"),
    (
        "fp16 mixed precision with MPS device requires a Pytorch >= 2.5.0",
        "MIXED_PRECISION_NEEDS_GPU",
    ),
    ("Pin memory thread exited unexpectedly", "DATALOADER_SHM_BUS_ERROR"),
    (
        "Worker exit type: INTENDED_USER_EXIT Worker exit detail: Worker exits by an user request.",
        "HOST_OOM_KILLED",
    ),
]


@pytest.mark.parametrize("log, code", NEAR_MISSES, ids=[c for _, c in NEAR_MISSES])
def test_a_near_miss_is_not_read_as_that_cause(log, code):
    assert code not in codes(log)


def test_a_named_build_error_leads_the_bare_build_failure():
    """The compiler's own error above `Error building extension` names the cause."""
    log = (
        "/usr/local/lib/python3.10/dist-packages/deepspeed/ops/csrc/adam/fused_adam.cpp:1:10:"
        " fatal error: Python.h: No such file or directory\n"
        "ninja: build stopped: subcommand failed.\n"
        "RuntimeError: Error building extension 'fused_adam'"
    )
    assert readings(log)[0] == ("PYTHON_DEV_HEADERS_MISSING", "error")


def test_a_build_failing_on_its_own_code_is_no_environment_hint():
    """A compiler error in the extension's own source is the user's bug."""
    log = (
        "/tmp/torch_extensions/my_op/main.cpp:2:47: error: 'y' was not declared in this scope\n"
        "ninja: build stopped: subcommand failed.\n"
        "RuntimeError: Error building extension 'my_op'"
    )
    assert "EXT_BUILD_FAILED" not in codes(log)
    cut = "ninja: build stopped: subcommand failed.\nRuntimeError: Error building extension 'my_op'"
    assert readings(cut) == [("EXT_BUILD_FAILED", "info")]


def test_a_dataloader_worker_killed_by_a_bus_error_is_not_only_a_hint():
    log = (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient"
        " shared memory (shm).\n"
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.\n"
        "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly"
    )
    assert readings(log)[0] == ("DATALOADER_SHM_BUS_ERROR", "warning")
