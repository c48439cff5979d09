"""Shared memory for semaphores, bf16 refused by cuBLAS, a DataLoader worker's SIGKILL, a
privileged rendezvous port, a GPU full of another process's memory, the Hub's cache on a
read-only file system, vLLM's KV cache line wrapped, NVML's mismatch as the container
toolkit prints it, and cudarc without libcuda: each line in the form the framework prints
it (and the form a pasted log shows) reads as its code and severity; a near miss does not.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

_SEMLOCK_TB = (
    '  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__\n'
    "    sl = self._semlock = _multiprocessing.SemLock(\n"
    "OSError: [Errno 28] No space left on device\n"
)
_CUBLAS_BF16 = (
    "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling"
    " `cublasGemmStridedBatchedEx(handle, opa, opb, (int)m, (int)n, (int)k, (void*)&falpha, a,"
    " CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, (void*)&fbeta, c,"
    " CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, compute_type,"
    " CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"
)

# (log, code, severity of that reading): the reading must lead
LEADS = [
    # --- /dev/shm full under multiprocessing's semaphores ---
    (_SEMLOCK_TB, "CONTAINER_SHM_TOO_SMALL", "error"),
    (  # two ranks' tracebacks interleaved, as a pasted log shows them
        "    sl = self._semlock = _multiprocessing.SemLock(\n"
        "    sl = self._semlock = _multiprocessing.SemLock(\n"
        "OSError: [Errno 28] No space left on device\n"
        "    return iter(dataloader)OSError\n"
        '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", line'
        " 388, in _get_iterator\n    return _MultiProcessingDataLoaderIter(self)",
        "CONTAINER_SHM_TOO_SMALL",
        "error",
    ),
    (  # Python 3.11's carets under the call
        "    sl = self._semlock = _multiprocessing.SemLock(\n"
        "                         ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "OSError: [Errno 28] No space left on device",
        "CONTAINER_SHM_TOO_SMALL",
        "error",
    ),
    # --- bf16 refused by cuBLAS ---
    (_CUBLAS_BF16, "BF16_PRE_AMPERE", "warning"),
    (
        "GPU 0: NVIDIA TITAN X (Pascal), compute capability 6.1\n" + _CUBLAS_BF16,
        "BF16_PRE_AMPERE",
        "error",
    ),
    # --- a DataLoader worker killed by SIGKILL, no OOM record ---
    (
        "RuntimeError: DataLoader worker (pid 22358) is killed by signal: Killed.",
        "HOST_OOM_KILLED",
        "info",
    ),
    (
        "[12345.6] Out of memory: Killed process 22358 (pt_data_worker)\n"
        "RuntimeError: DataLoader worker (pid 22358) is killed by signal: Killed.",
        "HOST_OOM_KILLED",
        "error",
    ),
    # --- a privileged rendezvous port ---
    (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local"
        " network address. The server socket has failed to bind to [::]:97 (errno: 13 -"
        " Permission denied). The server socket has failed to bind to 0.0.0.0:97 (errno: 13 -"
        " Permission denied).",
        "DIST_PORT_PRIVILEGED",
        "error",
    ),
    (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:1023 (errno:"
        " 13 - Permission denied).",
        "DIST_PORT_PRIVILEGED",
        "error",
    ),
    # --- the GPU full while this process holds almost none of it ---
    (  # torch 1.x's figures, pasted without the `CUDA out of memory.` head
        "Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB already"
        " allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch) If reserved memory"
        " is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
        "GPU_BUSY_OTHER_PROCESSES",
        "warning",
    ),
    (  # torch 2.x in a container: no other PID listed
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a"
        " total capacity of 23.64 GiB of which 3.06 MiB is free. Including non-PyTorch memory,"
        " this process has 412.00 MiB memory in use. Of the allocated memory 96.02 MiB is"
        " allocated by PyTorch, and 1.98 MiB is reserved by PyTorch but unallocated.",
        "GPU_BUSY_OTHER_PROCESSES",
        "warning",
    ),
    # --- the Hub's cache on a read-only file system ---
    (
        '  File "/usr/local/lib/python3.9/dist-packages/faster_whisper/transcribe.py", line 146,'
        " in __init__\n    self.hf_tokenizer = tokenizers.Tokenizer.from_pretrained(\n"
        '  File "/usr/local/lib/python3.9/dist-packages/huggingface_hub/utils/_validators.py",'
        " line 118, in _inner_fn\n    return fn(*args, **kwargs)\n"
        "OSError: [Errno 30] Read-only file system: '/nonexistent'",
        "CACHE_DIR_NOT_WRITABLE",
        "error",
    ),
    # --- vLLM's KV cache sentence, wrapped by a terminal ---
    (
        "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq"
        " len (100000), (4.26 GiB KV cach\ne is needed, which is larger than the available KV"
        " cache memory (4.25 GiB). Based on the avai",
        "VLLM_KV_CACHE_NO_MEMORY",
        "error",
    ),
    # --- NVML's mismatch as the container toolkit prints it ---
    (
        "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch:"
        " unknown.",
        "CUDA_INIT_FAILED_HOST_STATE",
        "error",
    ),
    (
        "failed to create containerd task: failed to create shim task: OCI runtime create failed:"
        " runc create failed: unable to start container process: error during container init:"
        " error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as"
        " 'legacy'\nnvidia-container-cli: initialization error: nvml error: driver/library"
        " version mismatch: unknown",
        "CUDA_INIT_FAILED_HOST_STATE",
        "error",
    ),
    # --- cudarc (Rust) finds no libcuda ---
    (
        "thread 'main' panicked at /home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/"
        "cudarc-0.11.5/src/driver/sys/mod.rs:61:9:\n"
        'Unable to find cuda lib under the names ["cuda", "nvcuda"]. Please open GitHub issue.',
        "WSL_LIBCUDA_NOT_LINKABLE",
        "warning",
    ),
    (
        "thread 'main' panicked at src/lib.rs:161:5:\nUnable to dynamically load the \"cuda\""
        ' shared library - searched for library names: ["cuda", "nvcuda", "libcuda.so"]. Ensure'
        " that `LD_LIBRARY_PATH` has the correct path to the installed library.",
        "WSL_LIBCUDA_NOT_LINKABLE",
        "warning",
    ),
]


@pytest.mark.parametrize(
    "log, code, severity", LEADS, ids=[f"{i}-{c}" for i, (_, c, _) in enumerate(LEADS)]
)
def test_the_framework_line_reads_as_its_cause(log, code, severity):
    assert readings(log)[0] == (code, severity)


# near misses: the same words about something else, or the cause shown elsewhere
NEAR_MISSES = [
    (  # a disk full while writing a checkpoint, no semaphore
        '  File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 1, in save\n'
        "OSError: [Errno 28] No space left on device",
        "CONTAINER_SHM_TOO_SMALL",
    ),
    (  # a semaphore refused for another reason
        "    sl = self._semlock = _multiprocessing.SemLock(\n"
        "OSError: [Errno 38] Function not implemented",
        "CONTAINER_SHM_TOO_SMALL",
    ),
    (  # fp16 refused by cuBLAS is not a bf16 question
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle,"
        " opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c,"
        " CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
        "BF16_PRE_AMPERE",
    ),
    ("torch_dtype: CUDA_R_16BF", "BF16_PRE_AMPERE"),
    (
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.",
        "HOST_OOM_KILLED",
    ),
    (
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.",
        "HOST_OOM_KILLED",
    ),
    (  # EACCES on an unprivileged port is not the privileged-port rule
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno:"
        " 13 - Permission denied).",
        "DIST_PORT_PRIVILEGED",
    ),
    (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:97 (errno: 98 -"
        " Address already in use).",
        "DIST_PORT_PRIVILEGED",
    ),
    (  # the process itself holds the GPU: the batch is the question
        "RuntimeError: CUDA out of memory. Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total"
        " capacity; 6.90 GiB already allocated; 24.56 MiB free; 7.40 GiB reserved in total by"
        " PyTorch)",
        "GPU_BUSY_OTHER_PROCESSES",
    ),
    (  # the GPU has GiBs free: the request is larger than the GPU, nobody else holds it
        "RuntimeError: CUDA out of memory. Tried to allocate 9.00 GiB (GPU 0; 7.92 GiB total"
        " capacity; 69.17 MiB already allocated; 7.50 GiB free; 86.00 MiB reserved in total by"
        " PyTorch)",
        "GPU_BUSY_OTHER_PROCESSES",
    ),
    (  # a 2 GiB GPU: the CUDA context alone can be the rest
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.95 GiB total"
        " capacity; 300.00 MiB already allocated; 4.56 MiB free; 320.00 MiB reserved in total by"
        " PyTorch)",
        "GPU_BUSY_OTHER_PROCESSES",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 79.18 GiB of which 512.00 MiB is free. Including non-PyTorch memory, this"
        " process has 78.64 GiB memory in use.",
        "GPU_BUSY_OTHER_PROCESSES",
    ),
    (  # read-only output directory written by the trainer, no Hub frame
        '  File "/venv/lib/python3.11/site-packages/transformers/trainer.py", line 1, in'
        " _save_checkpoint\n    os.makedirs(output_dir, exist_ok=True)\n"
        "OSError: [Errno 30] Read-only file system: '/data/out'",
        "CACHE_DIR_NOT_WRITABLE",
    ),
    (
        "INFO 05-01 kv_cache_utils.py:700] GPU KV cache size: 120,000 tokens; max seq len (100000)",
        "VLLM_KV_CACHE_NO_MEMORY",
    ),
    ("NVML library version: 550.54; driver version: 550.54", "CUDA_INIT_FAILED_HOST_STATE"),
    (  # cudarc finding no cuBLAS is not the driver library
        'Unable to dynamically load the "cublas" shared library - searched for library names:'
        ' ["cublas", "cublas64_12"].',
        "WSL_LIBCUDA_NOT_LINKABLE",
    ),
]


@pytest.mark.parametrize(
    "log, code", NEAR_MISSES, ids=[f"{i}-{c}" for i, (_, c) in enumerate(NEAR_MISSES)]
)
def test_a_near_miss_is_not_read_as_that_cause(log, code):
    assert code not in codes(log)


def test_a_full_shm_semaphore_is_not_read_as_a_full_disk():
    """ENOSPC from multiprocessing's semaphore is /dev/shm's, so the disk reading stays off."""
    assert "DISK_FULL_AT_CHECKPOINT" not in codes(_SEMLOCK_TB)


def test_memory_held_elsewhere_is_not_told_to_shrink_the_batch():
    """When torch's figures show the GPU held outside this process, the generic OOM reading
    (a smaller batch) does not lead; the OOM stays named as this reading's consequence."""
    log = (
        "RuntimeError: CUDA out of memory. Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total"
        " capacity; 69.17 MiB already allocated; 24.56 MiB free; 86.00 MiB reserved in total by"
        " PyTorch)"
    )
    assert codes(log)[0] == "GPU_BUSY_OTHER_PROCESSES"
    assert "GPU_OUT_OF_MEMORY" not in codes(log)


def test_torch_1x_figures_alone_are_an_out_of_memory():
    """The figures without the head still name an OOM when the process holds the memory."""
    log = (
        "Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 13.20 GiB already"
        " allocated; 1.02 GiB free; 13.60 GiB reserved in total by PyTorch)"
    )
    assert codes(log)[0] == "GPU_OUT_OF_MEMORY"
