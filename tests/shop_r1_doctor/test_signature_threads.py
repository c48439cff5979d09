"""Signatures chosen by how often users meet a framework message in public threads: each
reads every message it cites as a log renders it, the lines users pasted lead to the
right code, and a message that only suggests a cause stays a hint below the cause."""

from __future__ import annotations

import pytest
from repo_paths import load_script

from shop_r1_doctor.framework_messages import load_messages
from shop_r1_doctor.knowledge import load_codes
from shop_r1_doctor.logscan import diagnose_log, load_signatures

# id -> a line as users pasted it (the thread is the signature's `source`) -> its code
THREAD_LINES = {
    "cuda-home-unset-ext-build": (
        "      OSError: CUDA_HOME environment variable is not set. Please set it to your "
        "CUDA install root.\n      [end of output]",
        "CUDA_HOME_UNSET_EXT_BUILD",
    ),
    "torch-ninja-missing": (
        '    raise RuntimeError("Ninja is required to load C++ extensions")\n'
        "RuntimeError: Ninja is required to load C++ extensions",
        "NINJA_MISSING_EXT_BUILD",
    ),
    "cuda-unknown-error-init": (
        "/home/u/venv/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning: "
        "CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up "
        "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
        "Setting the available devices to be zero.",
        "CUDA_INIT_FAILED_HOST_STATE",
    ),
    "cuda-device-count-error": (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? "
        "Error 802: system not yet initialized",
        "CUDA_INIT_FAILED_HOST_STATE",
    ),
    "torch-c-extensions-shadowed": (
        "ImportError: Failed to load PyTorch C extensions:\n"
        "    It appears that PyTorch has loaded the `torch/_C` folder",
        "TORCH_C_EXTENSIONS_SHADOWED",
    ),
    "deepspeed-cuda-version-mismatch": (
        "deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: "
        "Installed CUDA version 12.2 does not match the version torch was compiled with "
        "11.7, unable to compile cuda/cpp extensions without a matching cuda version.",
        "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD",
    ),
    "inductor-gpu-too-old-for-triton": (
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        "RuntimeError: Found Tesla P100-SXM2-16GB which is too old to be supported by the "
        "triton GPU compiler, which is used as the backend. Triton only supports devices of "
        "CUDA Capability >= 7.0, but your device is of CUDA capability 6.0",
        "GPU_TOO_OLD_FOR_STACK",
    ),
    "vllm-profiling-free-memory-grew": (
        "(EngineCore_DP0 pid=418) ERROR 01-29 15:38:21 [core.py:946] AssertionError: Error "
        "in memory profiling. Initial free memory 30.3 GiB, current free memory 30.3 GiB. "
        "This happens when other processes sharing the same container release GPU memory "
        "while vLLM is profiling during initialization.",
        "GPU_BUSY_OTHER_PROCESSES",
    ),
    "vllm-engine-start-timeout": (
        "TimeoutError: Timed out waiting for engine core processes to start. This is often "
        "caused by slow weight loading for large models. Waited 600s (configured by "
        "VLLM_ENGINE_READY_TIMEOUT_S).",
        "VLLM_ENGINE_START_TIMEOUT",
    ),
    "nccl-remote-error": (
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/"
        "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3763, remote process exited or "
        "there was a network error, NCCL version 2.28.8\n"
        "[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote "
        "process exiting prematurely.",
        "NODE_NETWORK_UNREACHABLE",
    ),
    "nccl-watchdog-stuck": (
        "[rank2]:[E704 13:48:58.260494728 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID "
        "0(default_pg) Rank 2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without "
        "making progress in monitoring enqueued collectives. This typically indicates a "
        "NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog",
        "NCCL_COLLECTIVE_TIMEOUT",
    ),
    "nccl-cuda-oom": (
        "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
        "ng30903:3063028:3066152 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc "
        "6291456 bytes",
        "GPU_OUT_OF_MEMORY",
    ),
    "dataloader-too-many-open-files": (
        "    raise RuntimeError(\nRuntimeError: Too many open files. Communication with the "
        "workers is no longer possible. Please increase the limit using `ulimit -n` in the "
        "shell",
        "DATALOADER_FD_LIMIT",
    ),
    "hf-download-incomplete": (
        "OSError: Consistency check failed: file should be of size 9449717937 but has size "
        "883464076 ((…)l-00001-of-00002.bin).\nWe are sorry for the inconvenience. Please "
        "retry download and pass `force_download=True, resume_download=False` as argument.",
        "HF_DOWNLOAD_INCOMPLETE",
    ),
}


@pytest.fixture(scope="module")
def coverage():
    return load_script("benchmarks/signature_coverage.py")


@pytest.mark.parametrize("sig_id", sorted(THREAD_LINES))
def test_signature_reads_every_message_it_cites(coverage, sig_id):
    sig = next(s for s in load_signatures() if s.id == sig_id)
    cited = [c for c in sig.printed_by if c.package]
    assert cited, sig_id
    for c in cited:
        assert c.package and c.version
        [msg] = [m for m in load_messages(c.package, c.version) if m.at == c.at][:1]
        assert any(sig.pattern.search(t) for t in coverage._renderings(msg)), (sig_id, c.at)


@pytest.mark.parametrize("sig_id", sorted(THREAD_LINES))
def test_pasted_line_leads_to_its_code(sig_id):
    line, code = THREAD_LINES[sig_id]
    lead = diagnose_log(line).lead
    assert lead is not None, sig_id
    assert (lead.signature.id, lead.code) == (sig_id, code)


def test_hints_stay_hints():
    """A peer's NCCL remote error and a start-up timeout say only where to look."""
    remote, _ = THREAD_LINES["nccl-remote-error"]
    [m] = [m for m in diagnose_log(remote).matches if m.signature.id == "nccl-remote-error"]
    assert m.severity(load_codes()[m.code].severity) == "info"
    stuck, _ = THREAD_LINES["nccl-watchdog-stuck"]
    lead = diagnose_log(stuck).lead
    assert lead is not None and lead.signature.id == "nccl-watchdog-stuck"
    assert lead.severity(load_codes()[lead.code].severity) == "info"
    timeout, _ = THREAD_LINES["vllm-engine-start-timeout"]
    lead = diagnose_log(timeout).lead
    assert lead is not None
    assert lead.severity(load_codes()[lead.code].severity) == "info"


def test_remote_error_ranks_below_the_peer_that_caused_it():
    # the surviving rank's remote error is printed first, the peer's OOM after it
    log = (
        THREAD_LINES["nccl-remote-error"][0]
        + "\n[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    lead = diagnose_log(log).lead
    assert lead is not None and lead.code == "GPU_OUT_OF_MEMORY"


def test_deepspeed_skip_check_warning_is_no_failure():
    """With DS_SKIP_CUDA_CHECK=1 DeepSpeed prints the mismatch as a warning and builds."""
    warned = (
        "[WARNING]  DeepSpeed Op Builder: Installed CUDA version 12.1 does not match the "
        "version torch was compiled with 11.8.Detected `DS_SKIP_CUDA_CHECK=1`: Allowing this "
        "combination of CUDA, but it may result in unexpected behavior.\n"
    )
    assert [m.code for m in diagnose_log(warned).matches] == []
