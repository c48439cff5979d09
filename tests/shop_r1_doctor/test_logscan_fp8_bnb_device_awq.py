"""FP8 asked for on a GPU without it, bitsandbytes quantization where torch sees no CUDA
GPU, and AutoAWQ's kernels that did not import. Texts as the frameworks print them
(Transformer Engine, torch, vLLM, transformers, Unsloth, AutoAWQ). Codes and severities
(wording: codes.yaml)."""

from __future__ import annotations

from logscan_readings import codes, errors, lead

from shop_r1_doctor.logscan import diagnose_log


def lead_also(text: str) -> tuple[str, ...]:
    """The other codes the lead reading's text can point to."""
    return diagnose_log(text).matches[0].signature.also


# --- FP8 on a GPU below compute capability 8.9 ---------------------------------------


def test_transformer_engine_fp8_on_ampere_is_the_gpu():
    log = (
        "    with te.fp8_autocast(enabled=True, fp8_recipe=fp8_recipe):\n"
        "    assert fp8_available, reason_for_no_fp8\n"
        "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.\n"
    )
    assert lead(log) == ("FP8_UNSUPPORTED_GPU", "error")


def test_transformer_engine_mxfp8_on_hopper_is_the_gpu():
    log = "AssertionError: Device compute capability 10.0 or higher required for MXFP8 execution.\n"
    assert lead(log) == ("FP8_UNSUPPORTED_GPU", "error")


def test_transformer_engine_cublas_too_old_on_ada_is_not_the_gpu():
    log = "AssertionError: CublasLt version 12.1.3.x or higher required for FP8 execution on Ada.\n"
    assert "FP8_UNSUPPORTED_GPU" not in codes(log)


def test_transformer_engine_block_scaling_is_a_warning():
    log = "AssertionError: FP8 block scaled GEMM requires Hopper and CUDA >= 12.9.\n"
    assert lead(log) == ("FP8_UNSUPPORTED_GPU", "warning")
    later = "AssertionError: FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9.\n"
    assert lead(later) == ("FP8_UNSUPPORTED_GPU", "warning")


def test_torch_scaled_mm_refusal_is_the_gpu():
    log = (
        '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 125, in forward\n'
        "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability"
        " >= 9.0 or 8.9, or ROCm MI300+\n"
    )
    assert lead(log) == ("FP8_UNSUPPORTED_GPU", "error")


def test_torch_before_2_3_scaled_mm_refusal_is_a_warning():
    # torch 2.1-2.2 refused Ada (8.9) as well; upgrading torch fixes that GPU
    log = "RuntimeError: torch._scaled_mm is only supported on devices with compute capability >= 9.0)\n"
    assert lead(log) == ("FP8_UNSUPPORTED_GPU", "warning")


def test_vllm_fp8_method_below_minimum_capability():
    log = (
        "ValueError: The quantization method fp8 is not supported for the current GPU. "
        "Minimum capability: 89. Current capability: 86.\n"
    )
    assert lead(log) == ("FP8_UNSUPPORTED_GPU", "error")


def test_vllm_other_method_below_minimum_capability_is_not_fp8():
    log = (
        "ValueError: The quantization method awq_marlin is not supported for the current GPU. "
        "Minimum capability: 80. Current capability: 75.\n"
    )
    assert "FP8_UNSUPPORTED_GPU" not in codes(log)


def test_a_node_or_framework_refusing_an_fp8_model_names_the_capability():
    node = (
        "ERROR: FP8 models require a GPU with Compute Capability 8.9 or higher (e.g., RTX 4090). "
        "Your GPU's capability is 8.6. Please select a non-FP8 model.\n"
    )
    unsloth = (
        "RuntimeError: Unsloth: float8_training needs compute capability 8.9+ (fp8 tensor cores); "
        "NVIDIA A100-SXM4-80GB is 8.0. Train in bfloat16 / float16 instead.\n"
    )
    fbgemm = "ValueError: FP8 quantized models is only supported on GPUs with compute capability >= 9.0 (e.g H100)\n"
    for log in (node, unsloth, fbgemm):
        assert lead(log) == ("FP8_UNSUPPORTED_GPU", "error"), log


def test_fp8_fallbacks_that_go_on_are_not_a_failure():
    dequantize = (
        "FP8 quantized models is only supported on GPUs with compute capability >= 8.9 "
        "(e.g 4090/H100), actual = `8.6`. We will default to dequantizing the model to bf16. "
        "Feel free to use a different quantization method like bitsandbytes or torchao\n"
    )
    accelerate = (
        "The current device has compute capability of (8, 6) which is insufficient for FP8 mixed "
        "precision training (requires a GPU Hopper/Ada Lovelace or higher, compute capability of "
        "8.9 or higher). Will use FP16 instead.\n"
    )
    for log in (dequantize, accelerate):
        assert "FP8_UNSUPPORTED_GPU" not in codes(log), log


def test_fp8_with_another_capability_is_not_this_reading():
    log = "ValueError: FP8 training requires compute capability 7.0 or higher on this backend\n"
    assert "FP8_UNSUPPORTED_GPU" not in codes(log)


# --- bitsandbytes quantization where torch sees no CUDA GPU -------------------------

# transformers <= 4.43: one text for accelerate missing, bitsandbytes missing, or no CUDA
COMBINED = (
    "ImportError: Using `bitsandbytes` 8-bit quantization requires Accelerate: `pip install "
    "accelerate` and the latest version of bitsandbytes: `pip install -i "
    "https://pypi.org/simple/ bitsandbytes`\n"
)


def test_combined_refusal_alone_is_a_hint_naming_both():
    assert lead(COMBINED) == ("BNB_REQUESTED_NOT_INSTALLED", "warning")
    assert "BNB_NO_CUDA_DEVICE" in lead_also(COMBINED)
    assert errors(COMBINED) == []


def test_combined_refusal_on_a_mac_is_no_cuda_device():
    mac = "running on my M3 chip\n" + COMBINED
    assert lead(mac) == ("BNB_NO_CUDA_DEVICE", "error")
    darwin = "Platform: macOS-14.4-arm64-arm-64bit\n" + COMBINED
    assert lead(darwin) == ("BNB_NO_CUDA_DEVICE", "error")
    cut = "我的M3芯片本地运行MiniCPM-Llama3-V-2_5-int4得到了报错Using `bitsandbytes` 8-bit quantization requires Accelerate\n"
    assert lead(cut) == ("BNB_NO_CUDA_DEVICE", "error")
    assert "BNB_REQUESTED_NOT_INSTALLED" not in codes(cut)


def test_combined_refusal_with_cuda_unavailable_shown_is_no_cuda_device():
    log = ">>> torch.cuda.is_available()\nFalse\n" + COMBINED
    assert lead(log) == ("BNB_NO_CUDA_DEVICE", "error")


def test_an_rtx_name_is_not_an_apple_chip():
    log = "GPU: NVIDIA GeForce RTX 3090, CUDA 12.1, GM3 chipset board\n" + COMBINED
    assert lead(log) == ("BNB_REQUESTED_NOT_INSTALLED", "warning")


def test_accelerate_only_refusal_is_accelerate_missing():
    old = "ImportError: Using `bitsandbytes` 4-bit quantization requires Accelerate: `pip install accelerate`\n"
    new = "ImportError: Using `bitsandbytes` 8-bit quantization requires accelerate: `pip install 'accelerate>=1.1.0'`\n"
    for log in (old, new, "macOS 14\n" + old):
        assert lead(log) == ("PACKAGE_REQUESTED_NOT_INSTALLED", "error"), log
        assert "BNB_NO_CUDA_DEVICE" not in codes(log)


def test_transformers_cuda_required_for_bitsandbytes():
    log = (
        "RuntimeError: CUDA is required but not available for bitsandbytes. Please consider installing "
        "the multi-platform enabled version of bitsandbytes, which is currently a work in progress.\n"
    )
    assert lead(log) == ("BNB_NO_CUDA_DEVICE", "error")


def test_no_device_bitsandbytes_supports():
    log = (
        "RuntimeError: None of the available devices `available_devices = {'mps'}` are supported by "
        "the bitsandbytes version you have installed: `bnb_supported_devices = {'cuda'}`.\n"
    )
    assert lead(log) == ("BNB_NO_CUDA_DEVICE", "error")


def test_bitsandbytes_not_installed_stays_not_installed():
    log = "ImportError: Using `bitsandbytes` 4-bit quantization requires bitsandbytes: `pip install -U bitsandbytes>=0.46.1`\n"
    assert lead(log) == ("BNB_REQUESTED_NOT_INSTALLED", "error")
    assert "BNB_NO_CUDA_DEVICE" not in codes(log)


# --- AutoAWQ's kernels did not import ---------------------------------------------


def test_awq_kernels_not_loaded_is_a_hint():
    log = (
        '  File "/usr/local/lib/python3.10/dist-packages/awq/modules/fused/norm.py", line 20, in forward\n'
        "AssertionError: AWQ kernels could not be loaded. Please install them from "
        "https://github.com/casper-hansen/AutoAWQ_kernels\n"
    )
    assert lead(log) == ("EXT_TORCH_ABI_UNDEFINED_SYMBOL", "warning")
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" in lead_also(log)
    assert errors(log) == []


def test_awq_gemv_import_error_appended():
    log = "ModuleNotFoundError: External AWQ kernels are not properly installed.No module named 'awq_ext'\n"
    assert lead(log) == ("EXT_TORCH_ABI_UNDEFINED_SYMBOL", "warning")


def test_awq_kernels_with_the_loader_symbol_is_an_error():
    log = (
        "ImportError: /venv/lib/python3.10/site-packages/awq_ext.cpython-310-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
        "AssertionError: AWQ kernels could not be loaded. Please install them from "
        "https://github.com/casper-hansen/AutoAWQ_kernels\n"
    )
    assert lead(log) == ("EXT_TORCH_ABI_UNDEFINED_SYMBOL", "error")


def test_other_kernels_not_loaded_is_not_awq():
    log = "AssertionError: IPEX kernels could not be loaded. Please install with `pip install intel_extension_for_pytorch`\n"
    assert "EXT_TORCH_ABI_UNDEFINED_SYMBOL" not in codes(log)
