"""Readings of CUDA's forward-compatibility error (804) in any engine's words, an optional
package a library says it requires and then fails to import, flash-attn older than a
feature needs, and a stack CLI that does not know one of its own subcommands.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

FORWARD_COMPAT = "forward compatibility was attempted on non supported HW"


@pytest.mark.parametrize(
    "line",
    [
        # ggml (llama.cpp, ik_llama.cpp), then its fallback to the CPU
        f"ggml_cuda_init: failed to initialize CUDA: {FORWARD_COMPAT}\nCPU: using device CPU",
        f"cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorCompatNotSupportedOnDevice: {FORWARD_COMPAT}",
        "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:282] failed call to cuInit:"
        f" CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: {FORWARD_COMPAT}",
        "[TRT] [W] CUDA initialization failure with error: 804. Please check your CUDA installation",
    ],
)
def test_cuda_804_outside_a_container_is_the_runtime_above_the_driver(line):
    assert lead(line) == ("CUDA_INIT_FAILED_HOST_STATE", "warning")
    assert "CONTAINER_CUDA_GT_HOST_DRIVER" not in codes(line)  # no container in the log


def test_cuda_804_in_a_container_is_the_image_above_the_host_driver():
    log = (
        "$ docker run --gpus all ghcr.io/example/ik-llama:cu132 --model m.gguf\n"
        f"ggml_cuda_init: failed to initialize CUDA: {FORWARD_COMPAT}\n"
        "CPU: using device CPU\n"
    )
    assert lead(log) == ("CONTAINER_CUDA_GT_HOST_DRIVER", "error")


def test_torchs_804_in_a_container_leads_with_the_image_too():
    log = (
        "kubepods container start\n"
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda"
        " functions before calling NumCudaDevices() that might have already set an error?"
        f" Error 804: {FORWARD_COMPAT}\n"
    )
    assert lead(log) == ("CONTAINER_CUDA_GT_HOST_DRIVER", "error")


@pytest.mark.parametrize(
    "line",
    [
        # another CUDA init error (no driver loaded) and the 803 mismatch are not 804
        "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected",
        "ggml_cuda_init: failed to initialize CUDA: system has unsupported display driver / cuda"
        " driver combination",
        "the docs say forward compatibility is supported on datacenter GPUs",
    ],
)
def test_other_cuda_init_failures_are_not_read_as_forward_compatibility(line):
    found = codes(line)
    assert "CONTAINER_CUDA_GT_HOST_DRIVER" not in found
    assert "CUDA_INIT_FAILED_HOST_STATE" not in found


EXLLAMAV3 = (
    "2025-10-16 05:27:54.710 INFO:     exllamav3 version: 0.0.10\n"
    " ## Qwen3-Next requires flash-linear-attention"
    " (https://github.com/fla-org/flash-linear-attention)\n"
    "Traceback (most recent call last):\n"
    '  File "/root/tabbyAPI/main.py", line 61, in entrypoint_async\n'
    "    await model.load_model(\n"
    "ModuleNotFoundError: No module named '{module}'\n"
)


@pytest.mark.parametrize(
    ("requirement", "module"),
    [
        ("flash-linear-attention", "fla"),
        ("flash-linear-attention", "fla.ops.gated_delta_rule"),
        ("`causal-conv1d>=1.4`", "causal_conv1d"),
        ("mamba-ssm", "mamba_ssm"),
        ("scikit-learn", "sklearn"),
        ("einops", "einops"),  # the same name for both
    ],
)
def test_a_printed_requirement_then_its_failed_import_is_a_package_not_installed(
    requirement, module
):
    log = EXLLAMAV3.replace("flash-linear-attention (", requirement + " (").format(module=module)
    assert lead(log) == ("PACKAGE_REQUESTED_NOT_INSTALLED", "error")


@pytest.mark.parametrize(
    "module",
    [
        "einops",  # another module than the one the message requires
        "flash_linear",  # a prefix of the distribution's name is not its import name
        "my_utils",
    ],
)
def test_a_failed_import_of_another_module_is_not_the_printed_requirement(module):
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" not in codes(EXLLAMAV3.format(module=module))


PREFACE = "ImportError: FlashAttention{n} has been toggled on, but it cannot be used due to the "
PREFACE += "following error: "


@pytest.mark.parametrize(
    "log",
    [
        # exllamav2's assert (TabbyAPI's paged mode), on a Windows traceback
        '  File "L:\\tabbyAPI\\backends\\exllamav2\\model.py", line 462, in load_gen\n'
        "    self.generator = ExLlamaV2DynamicGeneratorAsync(\n"
        "AssertionError: Paged attention required Flash Attention 2.5.7 or later\n",
        # transformers' refusal of an installed flash-attn older than 2.3.3
        PREFACE.format(n=2) + "FlashAttention2 requires at least version `2.3.3`.",
        "RuntimeError: This kernel requires flash-attn 2.6.3 or newer, found 2.5.8",
    ],
)
def test_an_installed_flash_attn_older_than_a_feature_needs_is_an_error(log):
    assert lead(log) == ("FA_TOO_OLD_FOR_FEATURE", "error")


@pytest.mark.parametrize(
    "log",
    [
        # flash-attn missing, not too old
        PREFACE.format(n=2) + "the package for FlashAttention2 doesn't seem to be installed.",
        "ImportError: DeepSpeed FPDT requires flash-attn (>=2.5, including 2.6.x and 2.7.x)."
        " Please install it with `pip install flash-attn --no-build-isolation`.",
        "RuntimeError: Sliding window requires flash-attn 2.3.0 or later, which is not installed",
        # the GPU, not the release
        PREFACE.format(n=3) + "FlashAttention3 requires compute capability >= 9.0, but found"
        " NVIDIA A100-SXM4-80GB with compute capability 8.x",
    ],
)
def test_a_missing_flash_attn_or_a_gpu_refusal_is_not_read_as_too_old(log):
    assert "FA_TOO_OLD_FOR_FEATURE" not in codes(log)


def _click_usage(cli: str, subcommand: str) -> str:
    return (
        f"(env) user@host:~$ {cli} {subcommand} --config x.yaml\n"
        f"Usage: {cli} [OPTIONS] COMMAND [ARGS]...\n"
        f"Try '{cli} --help' for help.\n\n"
        f"Error: No such command '{subcommand}'.\n"
    )


@pytest.mark.parametrize(
    ("cli", "subcommand"),
    [
        ("tune", "run"),  # ray's click `tune` over torchtune's
        ("tune", "download"),
        ("trl", "grpo"),
        ("accelerate", "launch"),
        ("axolotl", "preprocess"),
        ("ray", "start"),
        ("hf", "download"),
    ],
)
def test_a_stack_cli_that_does_not_know_its_own_subcommand_is_another_script(cli, subcommand):
    assert readings(_click_usage(cli, subcommand)) == [("CONSOLE_SCRIPT_SHADOWED", "warning")]


def test_typers_boxed_error_and_click_7s_quotes_are_read_too():
    typer = (
        " Usage: hf [OPTIONS] COMMAND [ARGS]...\n"
        " Try 'hf -h' for help.\n"
        "╭─ Error ───────────────────────────╮\n"
        "│ No such command 'upload'.          │\n"
        "╰───────────────────────────────────╯\n"
    )
    click7 = 'Usage: tune [OPTIONS] COMMAND [ARGS]...\nTry "tune --help" for help.\n\nError: No such command "run".\n'
    assert lead(typer) == ("CONSOLE_SCRIPT_SHADOWED", "warning")
    assert lead(click7) == ("CONSOLE_SCRIPT_SHADOWED", "warning")


@pytest.mark.parametrize(
    "log",
    [
        _click_usage("tune", "rnu"),  # the user's typo
        _click_usage("trl", "sft_train"),  # a subcommand trl never had
        _click_usage("mytool", "run"),  # not a stack CLI
        # a stack CLI's own subcommand named far from the usage error
        "Usage: tune [OPTIONS] COMMAND [ARGS]...\n" + "step\n" * 10 + "No such command 'run'.\n",
    ],
)
def test_a_misspelt_subcommand_or_another_cli_is_not_read_as_shadowed(log):
    assert "CONSOLE_SCRIPT_SHADOWED" not in codes(log)
