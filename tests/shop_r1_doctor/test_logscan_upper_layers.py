"""Readings of the refusals printed by the layers above the core stack (peft, unsloth,
unsloth_zoo, llamafactory, verl), on their real wordings (knowledge/framework_messages/)
as a traceback ends with them. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings


def raised(package_file: str, line: str) -> str:
    """The message as a traceback prints it: the raising frame, then the error."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 12, in <module>\n'
        "    model = load()\n"
        f'  File "/opt/conda/lib/python3.11/site-packages/{package_file}", line 501, in check\n'
        "    raise error\n"
        f"{line}\n"
    )


# --- a package's own version check: REQUIREMENT_CONFLICT ---------------------------------

VERSION_REFUSALS = [
    (
        "peft/tuners/lora/model.py",
        "RuntimeError: LoRA with DTensor tensor parallelism requires transformers >= 5.17.0. "
        "Please upgrade.",
    ),
    (
        "peft/utils/other.py",
        "ImportError: Your transformers version is too old, please upgrade it to >= 4.53.1",
    ),
    (
        "peft/import_utils.py",
        "ImportError: Found an incompatible version of torchao. Found version 0.7.0, but only "
        "versions above 0.16.0 are supported",
    ),
    (
        "unsloth/models/_utils.py",
        "ImportError: Unsloth: offload_layers needs a newer unsloth_zoo. Run "
        "`pip install --upgrade unsloth_zoo`.",
    ),
    (
        "unsloth/models/loader.py",
        "ValueError: `Qwen3_5` is not supported yet in `transformers==4.57.1`.\n"
        "Please update transformers via `pip install --upgrade transformers` and try again.",
    ),
    (
        "unsloth/import_fixes.py",
        "ImportError: Unsloth: torch==2.9.0 requires torchvision>=0.24.0, but found "
        'torchvision==0.23.0. Try updating torchvision via `pip install --upgrade "torchvision>=0.24.0"`.',
    ),
    (
        "unsloth/fsdp2_launch.py",
        "RuntimeError: Unsloth: UNSLOTH_FSDP2=1 needs accelerate >= 1.7, which this accelerate is "
        "older than. Upgrade it with `pip install -U accelerate`.",
    ),
    (
        "unsloth/tokenizer_utils.py",
        "RuntimeError: Unsloth: Your protobuf version = 5.29.0 is too new. Please downgrade via "
        "`pip install --force-reinstall protobuf==3.20.3`",
    ),
    (
        "llamafactory/model/patcher.py",
        "RuntimeError: InternLM3 model requires transformers>=4.47.1, please upgrade it.",
    ),
    (
        "verl/third_party/vllm/__init__.py",
        "ValueError: vllm version 0.8.2 not supported and SGLang also not Found. Currently "
        "supported vllm versions are 0.18.0+",
    ),
    (
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
        "RuntimeError: rollout.enable_rollout_routing_replay=True requires vLLM >= 0.22.0 "
        "(installed: 0.20.1). Upgrade vLLM (e.g. `pip install -U 'vllm>=0.22.0'`) or disable "
        "enable_rollout_routing_replay.",
    ),
    (  # llamafactory's check_dependencies, through transformers' require_version
        "transformers/utils/versions.py",
        "ImportError: transformers>=4.55.0,<=5.6.0 is required for a normal functioning of this "
        "module, but found transformers==5.24.0.\nTo fix: run `pip install "
        "transformers>=4.55.0,<=5.6.0` or set `DISABLE_VERSION_CHECK=1` to skip this check.",
    ),
]


@pytest.mark.parametrize("frame,line", VERSION_REFUSALS, ids=[f for f, _ in VERSION_REFUSALS])
def test_a_packages_own_version_refusal_is_a_requirement_conflict(frame, line):
    got = readings(raised(frame, line))
    assert got[0] == ("REQUIREMENT_CONFLICT", "warning")
    # an upgrade's `pip install --upgrade X` is no package missing
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" not in [c for c, _ in got]


@pytest.mark.parametrize(
    "line",
    [
        # the same words where nothing was refused: a warning that goes on, a plan's note
        "UserWarning: LoRA with DTensor tensor parallelism requires transformers >= 5.17.0. "
        "Please upgrade.",
        "[INFO] packing requires transformers >= 4.52; please upgrade for faster training",
        "Unsloth: Will patch your computer to enable 2x faster free finetuning.",
    ],
)
def test_a_version_note_that_is_not_raised_claims_nothing(line):
    assert "REQUIREMENT_CONFLICT" not in [c for c, _ in readings(line)]


# --- a package an option asks for is missing: PACKAGE_REQUESTED_NOT_INSTALLED -------------


@pytest.mark.parametrize(
    "frame,line",
    [
        (
            "unsloth_zoo/patching_utils.py",
            "ImportError: Unsloth: Please install peft via `pip install peft`",
        ),
        (
            "llamafactory/chat/chat_model.py",
            "ImportError: vLLM not install, you may need to run `pip install vllm`\n"
            "or try to use HuggingFace backend: --infer_backend huggingface",
        ),
        (
            "peft/tuners/adamss/config.py",
            "ImportError: scikit-learn is required for AdaMSS. Please install it with: pip install scikit-learn",
        ),
        (
            "unsloth/models/_utils.py",
            "ImportError: Error: torchao not found, please install with `pip install torchao`",
        ),
        (
            "peft/utils/loftq_utils.py",
            "ValueError: bitsandbytes is not available, please install it to use LoftQ.",
        ),
        (  # llamafactory's mandatory check_version, through transformers' require_version
            "transformers/utils/versions.py",
            "importlib.metadata.PackageNotFoundError: No package metadata was found for The "
            "'unsloth' distribution was not found and is required by this application. \n"
            "To fix: run `pip install unsloth`.",
        ),
    ],
    ids=lambda v: v.split("/")[0] if v.endswith(".py") else "",
)
def test_a_package_the_run_asks_for_missing_is_an_error(frame, line):
    assert readings(raised(frame, line))[0] == ("PACKAGE_REQUESTED_NOT_INSTALLED", "error")


def test_the_version_checks_not_found_keeps_the_specific_codes():
    deepspeed = (
        "importlib.metadata.PackageNotFoundError: No package metadata was found for The "
        "'deepspeed>=0.10.0,<=0.16.9' distribution was not found and is required by this "
        "application. \nTo fix: run `pip install deepspeed>=0.10.0,<=0.16.9`."
    )
    assert readings(deepspeed)[0] == ("DEEPSPEED_REQUESTED_NOT_INSTALLED", "error")
    # pkg_resources names the requiring package: a range not met, not this reading
    pkg = (
        "pkg_resources.DistributionNotFound: The 'transformers<=4.48.3,>=4.41.2' distribution "
        "was not found and is required by llamafactory"
    )
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" != readings(pkg)[0][0]


# --- the GPU or the machine refused -------------------------------------------------------


@pytest.mark.parametrize(
    "frame,line",
    [
        (
            "unsloth_zoo/vllm_utils.py",
            "NotImplementedError: Unsloth: Your GPU is too old for vLLM! vLLM needs compute "
            "capability 7.0 or higher, but your GPU has 6.1. Use `fast_inference = False` to train "
            "and do inference without vLLM.",
        ),
        (
            "unsloth/utils/attention_dispatch.py",
            "RuntimeError: Unsloth: This model softcaps attention logits, which needs Flash "
            "Attention, but Tesla T4 cannot run it (compute capability below 8.0).",
        ),
    ],
    ids=lambda v: v.split("/")[0] if v.endswith(".py") else "",
)
def test_a_gpu_refused_for_its_age_is_too_old_for_the_stack(frame, line):
    assert readings(raised(frame, line))[0] == ("GPU_TOO_OLD_FOR_STACK", "warning")


@pytest.mark.parametrize(
    "frame,line",
    [
        (
            "unsloth/models/_utils.py",
            "ValueError: Unsloth: FP8 quantization is only supported on L4 and higher GPUs with "
            "compute capability 8.9 or higher. You are using Tesla T4.",
        ),
        (
            "unsloth/models/float8_training.py",
            "RuntimeError: Unsloth: float8_training needs the model on an NVIDIA GPU with compute "
            "capability 8.9+; the model is on NVIDIA A100-SXM4-40GB.",
        ),
    ],
    ids=["fp8-quantization", "float8-training"],
)
def test_fp8_refused_for_the_gpu_is_fp8_unsupported(frame, line):
    assert readings(raised(frame, line))[0] == ("FP8_UNSUPPORTED_GPU", "error")


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: Unsloth cannot find any torch accelerator? You need a GPU.",
        "NotImplementedError: Unsloth: load_in_4bit needs a GPU.",
        "NotImplementedError: Unsloth: nvidia-smi sees NVIDIA L4 but torch.cuda.is_available() is "
        "False (torch 2.9.0+cpu). PyTorch likely does not match this machine",
    ],
)
def test_no_usable_gpu_refusals_read_as_cuda_unavailable(line):
    assert readings(raised("unsloth/device_type.py", line))[0] == (
        "TORCH_CUDA_UNAVAILABLE",
        "warning",
    )


def test_a_gpu_mentioned_in_passing_is_no_refusal():
    # a help text that names what needs a GPU, not a raised error
    assert readings("Tip: fast_inference needs a GPU. Training continues on CPU.\n") == []


def test_unsloth_model_too_large_and_export_disk_refusals():
    big = (
        "ValueError: Unsloth: unsloth/Qwen3-32B does not fit in GPU memory (23.6 GB free), so "
        "transformers placed part of it on the CPU, which bitsandbytes cannot quantize. Lower "
        "max_seq_length or the batch size, load a smaller model, or add a GPU."
    )
    assert readings(raised("unsloth/models/loader_utils.py", big))[0] == (
        "MODEL_TOO_LARGE_FOR_GPU",
        "error",
    )
    for line in (
        "RuntimeError: Unsloth: Not enough disk space to convert to GGUF. The export needs about "
        "64GB on the filesystem holding `/content`, which has 31GB free.",
        "RuntimeError: Failed saving - no disk space left!",
    ):
        assert readings(raised("unsloth/save.py", line))[0] == ("DISK_FULL_AT_CHECKPOINT", "error")


def test_unsloths_vllm_load_oom_is_gpu_memory():
    line = (
        "MemoryError: Unsloth: Your GPU ran out of memory loading vLLM with standby mode enabled. "
        "Your GPU has 15 GB VRAM with gpu_memory_utilization=0.9."
    )
    assert readings(raised("unsloth_zoo/vllm_utils.py", line))[0][0] == "GPU_OUT_OF_MEMORY"
