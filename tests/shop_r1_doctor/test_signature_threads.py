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
    # the layers above torch (flash-attn, DeepSpeed, transformers, datasets, accelerate,
    # bitsandbytes, vLLM)
    "fa-build-nvcc-too-old": (
        "RuntimeError: FlashAttention is only supported on CUDA 11.6 and above.  Note: make "
        "sure nvcc has a supported version by running nvcc -V.",
        "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD",
    ),
    "ext-build-cuda-mismatch-apex-check": (
        "RuntimeError: Cuda extensions are being compiled with a version of Cuda that does "
        "not match the version used to compile Pytorch binaries.  Pytorch binaries were "
        "compiled with Cuda 10.2.",
        "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD",
    ),
    "ext-build-nvcc-not-found": (
        "    RuntimeError: --cuda_ext was requested, but nvcc was not found.  Are you sure "
        "your environment has nvcc available?  If you're installing within a container from "
        "https://hub.docker.com/r/pytorch/pytorch, only images whose names contain 'devel' "
        "will provide nvcc.",
        "CUDA_HOME_UNSET_EXT_BUILD",
    ),
    "deepspeed-launcher-no-gpu": (
        "[2023-05-10 23:27:00,776] [WARNING] [runner.py:191:fetch_hostfile] Unable to find "
        "hostfile, will proceed with training with local resources only.\n"
        '    raise RuntimeError("Unable to proceed, no GPU resources available")\n'
        "RuntimeError: Unable to proceed, no GPU resources available",
        "TORCH_CUDA_UNAVAILABLE",
    ),
    # transformers 5 and datasets 5 reworded these; the threads paste the 4.x wording
    "hf-gated-repository": (
        "OSError: meta-llama/Llama-3.2-1B is a gated repository. Make sure to request access "
        "at https://huggingface.co/meta-llama/Llama-3.2-1B and pass a token having "
        "permission to this repo either by logging in with `hf auth login` or by passing "
        "`token=<your_token>`.",
        "HF_GATED_REPO_NO_TOKEN",
    ),
    "datasets-hub-unreachable": (
        "ConnectionError: Couldn't reach the Hugging Face Hub for dataset 'allenai/c4': "
        "ConnectTimeout",
        "HF_HUB_UNREACHABLE",
    ),
    "datasets-not-found-or-no-access": (
        "datasets.exceptions.DatasetNotFoundError: Dataset 'Tevatron/browsecomp-plus' "
        "doesn't exist on the Hub or cannot be accessed.",
        "HF_GATED_REPO_NO_TOKEN",
    ),
    "kbit-modules-dispatched-cpu-disk": (
        "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have "
        "enough GPU RAM to fit\n                        the quantized model. If you want to "
        "dispatch the model on the CPU or the disk while keeping",
        "MODEL_TOO_LARGE_FOR_GPU",
    ),
    "offload-to-disk-no-folder": (
        "ValueError: At least one of the model submodule will be offloaded to disk, please "
        "pass along an `offload_folder`.",
        "MODEL_TOO_LARGE_FOR_GPU",
    ),
    "kbit-train-with-offload": (
        "ValueError: You can't train a model that has been loaded in 8-bit precision with "
        "CPU or disk offload.",
        "MODEL_TOO_LARGE_FOR_GPU",
    ),
    "vllm-triton-kernels-import-failed": (
        "ERROR 04-01 11:21:57 [config.py:29] Failed to import Triton kernels. Please make "
        "sure your triton version is compatible. Error: No module named "
        "'triton_kernels.matmul_ogs'",
        "PACKAGE_VERSION_SKEW",
    ),
    "accelerate-fp8-backend-missing": (
        "ValueError: Using `fp8` precision requires `transformer_engine` or `MS-AMP` to be "
        "installed.",
        "PACKAGE_REQUESTED_NOT_INSTALLED",
    ),
    "quantized-model-other-device": (
        "ValueError: You can't train a model that has been loaded in 8-bit precision on a "
        "different device than the one you're training on. Make sure you loaded the model on "
        "the correct device using for example `device_map={'':torch.cuda.current_device()}"
        "you're training on. Make sure you loaded the model on the correct device using for "
        "example `device_map={'':torch.cuda.current_device() or "
        "device_map={'':torch.xpu.current_device()}",
        "QUANTIZED_MODEL_ON_OTHER_DEVICE",
    ),
    "datasets-stream-server-disconnected": (
        '    raise ConnectionError("Server Disconnected")\nConnectionError: Server Disconnected',
        "HF_DOWNLOAD_INCOMPLETE",
    ),
    "hf-endpoint-not-the-hub": (
        "OSError: Distant resource does not seem to be on huggingface.co. It is possible that a "
        "configuration issue prevents you from downloading resources from https://huggingface.co. "
        "Please check your firewall and proxy settings and make sure your SSL certificates are "
        "updated.",
        "HF_HUB_UNREACHABLE",
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


def test_guesses_above_torch_stay_below_error():
    """A not-found dataset may be a typo, vLLM's Triton import failure is often harmless,
    and device_map's CPU/disk placement or the launcher's missing GPU name no cause
    alone: none is an error-level claim."""
    codes = load_codes()
    expected = {
        "datasets-not-found-or-no-access": "info",
        "vllm-triton-kernels-import-failed": "info",
        "kbit-modules-dispatched-cpu-disk": "warning",
        "offload-to-disk-no-folder": "warning",
        "kbit-train-with-offload": "warning",
        "deepspeed-launcher-no-gpu": "warning",
        "datasets-stream-server-disconnected": "warning",
    }
    for sig_id, severity in expected.items():
        lead = diagnose_log(THREAD_LINES[sig_id][0]).lead
        assert lead is not None and lead.signature.id == sig_id
        assert lead.severity(codes[lead.code].severity) == severity, sig_id


def test_nvcc_warning_of_a_wheel_install_is_no_failure():
    """flash-attn's setup.py only warns when nvcc is missing and may still fetch a wheel."""
    warned = (
        "/tmp/pip-install-x/flash-attn_1/setup.py:107: UserWarning: flash_attn was requested, "
        "but nvcc was not found.  Are you sure your environment has nvcc available?  If "
        "you're installing within a container from https://hub.docker.com/r/pytorch/pytorch, "
        "only images whose names contain 'devel' will provide nvcc.\n"
        "Successfully installed flash-attn-2.8.3\n"
    )
    assert "ext-build-nvcc-not-found" not in [m.signature.id for m in diagnose_log(warned).matches]
