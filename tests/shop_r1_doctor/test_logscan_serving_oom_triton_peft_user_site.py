"""Readings for serving engines' out-of-memory forms (lmdeploy TurboMind, text-generation-
inference's warm-up), Triton's shared-memory refusal on a pre-Ampere GPU, a PEFT config
field of a newer release, DeepSpeed's op build against another toolkit that lacks a CUDA
header, and a package imported from the user site-packages into a separate environment.
Each on the framework's own wording and on a pasted shape, with a near miss that must not
be read. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

# --- lmdeploy TurboMind's allocator ---------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # lmdeploy 0.1's check(): std::runtime_error with the source path
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  [TM][ERROR] CUDA runtime error: out of memory "
        "/opt/tritonserver/lmdeploy/src/turbomind/utils/allocator.h:223 \n",
        # a later release's core allocator, then the abort
        "[TM][ERROR] CUDA runtime error: out of memory /opt/lmdeploy/src/turbomind/core/allocator.cc:49\n"
        "Aborted (core dumped)",
        # FasterTransformer, which TurboMind grew from
        "RuntimeError: [FT][ERROR] CUDA runtime error: out of memory /workspace/src/fastertransformer/utils/allocator.h:181",
    ],
)
def test_turbomind_allocator_oom_is_gpu_oom(log):
    assert lead(log) == ("GPU_OUT_OF_MEMORY", "error")


def test_another_turbomind_runtime_error_is_not_oom():
    log = (
        "[TM][ERROR] CUDA runtime error: an illegal memory access was encountered "
        "/opt/lmdeploy/src/turbomind/models/llama/LlamaBatch.cc:1203"
    )
    assert "GPU_OUT_OF_MEMORY" not in codes(log)


# --- text-generation-inference's warm-up ------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # 0.9.3's warm-up, and the issue title's cut before the closing backquote
        "RuntimeError: Not enough memory to handle 16000 total tokens with 4096 prefill tokens. "
        "You need to decrease `--max-batch-total-tokens` or `--max-batch-prefill-tokens`",
        "Not enough memory to handle 16000 total tokens with 2 prefill tokens. You need to decrease "
        "`--max-batch-total-tokens` or `--max-batch-prefill-tokens",
        # 0.9.4+ words it for the prefill tokens only
        "2023-08-01T10:00:00Z ERROR warmup{max_input_length=1024}: text_generation_client: router/client/src/lib.rs:33: "
        "Server error: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`",
        # 3.x's router
        "Error: Backend(NotEnoughMemory(4096))\nNot enough memory to handle `max_total_tokens=4096`",
    ],
)
def test_tgi_warmup_refusal_is_a_gpu_oom_warning(log):
    assert lead(log) == ("GPU_OUT_OF_MEMORY", "warning")


def test_tgi_warmup_leads_below_the_chained_real_error():
    # TGI 0.9-2.x reword any warm-up exception; torch's own OOM chained above it leads
    log = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
        "`--max-batch-prefill-tokens`"
    )
    assert lead(log) == ("GPU_OUT_OF_MEMORY", "error")


def test_tgi_token_limits_of_the_users_own_settings_are_not_memory():
    log = 'Error: ArgumentValidation("`max_input_length` must be < `max_total_tokens`")'
    assert "GPU_OUT_OF_MEMORY" not in codes(log)


# --- Triton's shared-memory refusal ------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # Turing (64 KiB), the app's log prefix as pasted
        "[16:10:33] stdout/INFO  triton.runtime.errors.OutOfResources: out of resource: shared memory, "
        "Required: 98304, Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
        # Volta (96 KiB) under torch.compile
        "torch._inductor.exc.InductorError: OutOfResources: out of resource: shared memory, "
        "Required: 131072, Hardware limit: 98304. Reducing block sizes or `num_stages` may help.",
        # Pascal (48 KiB)
        "triton.runtime.autotuner.OutOfResources: out of resource: shared memory, Required: 65536, "
        "Hardware limit: 49152. Reducing block sizes or `num_stages` may help.",
    ],
)
def test_triton_shared_memory_over_a_pre_ampere_limit_is_gpu_too_old(log):
    assert lead(log) == ("GPU_TOO_OLD_FOR_STACK", "warning")


@pytest.mark.parametrize("limit", ["101376", "166912", "232448"])
def test_triton_shared_memory_on_ampere_or_newer_is_not_gpu_too_old(limit):
    # RTX 30/40/50 (99 KiB), A100 (163 KiB), H100 (227 KiB): the kernel's config, not the GPU's age
    log = (
        f"triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 262144, "
        f"Hardware limit: {limit}. Reducing block sizes or `num_stages` may help."
    )
    assert "GPU_TOO_OLD_FOR_STACK" not in codes(log)


# --- a PEFT config saved by a newer release --------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "TypeError: LoraConfig.__init__() got an unexpected keyword argument 'layer_replication'",
        # the issue title with the reporter's words after it
        "LoraConfig.__init__() got an unexpected keyword argument 'layer_replication' when using custom model handler",
        # Python 3.9's wording names no class
        '  File "/opt/venv/lib/python3.9/site-packages/peft/config.py", line 118, in from_pretrained\n'
        "    return config_cls(**kwargs)\nTypeError: __init__() got an unexpected keyword argument 'use_dora'",
        # a base field of every config, saved by peft 0.18+
        "TypeError: AdaLoraConfig.__init__() got an unexpected keyword argument 'peft_version'",
    ],
)
def test_a_field_of_a_newer_peft_is_version_skew(log):
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a misspelt argument in the user's own code
        "TypeError: LoraConfig.__init__() got an unexpected keyword argument 'target_module'",
        # a generic field name without the config class: any class may lack it
        "TypeError: __init__() got an unexpected keyword argument 'revision'",
    ],
)
def test_a_misspelt_or_generic_keyword_is_not_peft_skew(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)


# --- DeepSpeed's op build with another toolkit that lacks a CUDA header -------------------

DS_ACCEPTED = (
    "Installed CUDA version 11.2 does not match the version torch was compiled with 11.7 "
    "but since the APIs are compatible, accepting this combination\n"
    "Using /home/jovyan/.cache/torch_extensions/py38_cu117 as PyTorch extensions root...\n"
)


@pytest.mark.parametrize(
    "missing",
    [
        "/opt/conda/lib/python3.8/site-packages/deepspeed/ops/csrc/includes/custom_cuda_layers.h:12:10: "
        "fatal error: curand_kernel.h: No such file or directory\n   12 | #include <curand_kernel.h>\n"
        "compilation terminated.\nninja: build stopped: subcommand failed.",
        # clang's wording, then torch's build error
        "csrc/includes/context.h:9:10: fatal error: 'cublas_v2.h' file not found\n"
        "RuntimeError: Error building extension 'fused_adam'",
    ],
)
def test_ds_accepted_minor_mismatch_then_missing_cuda_header_is_toolkit_mismatch(missing):
    assert lead(DS_ACCEPTED + missing) == ("CUDA_TOOLKIT_TORCH_MISMATCH_BUILD", "warning")


def test_missing_cuda_header_without_a_toolkit_mismatch_is_not_read_as_one():
    log = "csrc/cpu_adam.cpp:6:10: fatal error: curand_kernel.h: No such file or directory"
    assert "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD" not in codes(log)


def test_accepted_mismatch_with_a_missing_non_cuda_header_is_not_read():
    log = (
        DS_ACCEPTED
        + "csrc/aio/py_lib/deepspeed_py_aio.h:12:10: fatal error: libaio.h: No such file or directory"
    )
    assert "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD" not in codes(log)


# --- a package from the user site-packages in a separate environment -------------------

USER_SITE_LINUX = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/miniconda3/envs/train/lib/python3.10/site-packages/transformers/generation/utils.py",'
    " line 27, in <module>\n    from sklearn.metrics import roc_curve\n"
    '  File "/home/u/.local/lib/python3.10/site-packages/sklearn/__init__.py", line 82, in <module>\n'
    "    from .utils._show_versions import show_versions\n"
    "ModuleNotFoundError: No module named 'joblib'"
)
USER_SITE_WINDOWS = (
    "Traceback (most recent call last):\n"
    '  File "D:\\lora-scripts\\python\\Lib\\site-packages\\transformers\\utils\\import_utils.py", line 1382,'
    ' in _get_module\n    return importlib.import_module("." + module_name, self.__name__)\n'
    '  File "C:\\Users\\me\\AppData\\Roaming\\Python\\Python310\\site-packages\\sklearn\\__init__.py",'
    " line 84, in <module>\n    from .base import clone\n"
    "ImportError: cannot import name 'logger' from 'joblib'"
)


@pytest.mark.parametrize("log", [USER_SITE_LINUX, USER_SITE_WINDOWS])
def test_a_user_site_frame_in_a_separate_environment_is_a_user_site_leak(log):
    assert lead(log) == ("USER_SITE_PACKAGES_LEAK", "warning")


def test_user_site_under_the_system_python_alone_is_not_a_leak():
    # a plain `pip install --user` beside the system interpreter: one Python, no leak
    log = USER_SITE_LINUX.replace(
        "/home/u/miniconda3/envs/train/lib/python3.10/site-packages",
        "/usr/lib/python3/dist-packages",
    )
    assert "USER_SITE_PACKAGES_LEAK" not in codes(log)


def test_the_bare_import_error_names_no_user_site():
    assert "USER_SITE_PACKAGES_LEAK" not in codes("ModuleNotFoundError: No module named 'joblib'")
