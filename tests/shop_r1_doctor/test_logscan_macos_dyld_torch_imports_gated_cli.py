"""macOS's loader wording of an extension built for another torch (dyld's `Symbol not found`
and `symbol not found in flat namespace` behind dlopen), a stack package's missing name
pasted without its `ImportError: `, and the gated-repository refusals of the training
stacks' download CLIs (torchtune, litgpt). Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

SITE = "/Users/u/miniforge3/envs/g/lib/python3.10/site-packages"

# --- dyld: a torch C++ symbol missing for an extension's library ----------------------------


@pytest.mark.parametrize(
    "log",
    [
        # torch.ops.load_library's ctypes.CDLL: dyld 3's one line, a c10 destructor
        f"OSError: dlopen({SITE}/torch_scatter/_version_cpu.so, 0x0006): Symbol not found:"
        " __ZN3c1017RegisterOperatorsD1Ev",
        # dyld 4 (macOS 12+): the image that needs it and where it was expected follow
        f"OSError: dlopen({SITE}/torchvision/image.so, 0x0006): Symbol not found:"
        " __ZN5torch3jit17parseSchemaOrNameERKNSt3__112basic_stringIcNS1_11char_traitsIcEE"
        "NS1_9allocatorIcEEEEb\n"
        f"  Referenced from: <8A3B0C41-7D2E-3F6A-9C1B-2E4D5F6A7B8C> {SITE}/torchvision/image.so\n"
        f"  Expected in:     <5C1E2D3F-4A5B-3C6D-8E7F-9A0B1C2D3E4F> {SITE}/torch/lib/"
        "libtorch_cpu.dylib",
        # a flat-namespace build (dyld 4): CPython's import of the extension, an at:: op
        f"ImportError: dlopen({SITE}/torch_sparse/_convert_cpu.so, 0x0002): symbol not found in"
        " flat namespace '__ZN2at4_ops5zeros4callEN3c108ArrayRefIxEENS2_8optionalINS2_10Scalar"
        "TypeEEE'",
        # the dlopen line cut from the paste: dyld's own lines name the extension
        "Symbol not found: __ZNK3c1010TensorImpl36is_contiguous_nondefault_policy_implENS_12"
        "MemoryFormatE\n"
        "  Referenced from: <1234ABCD-0000-3000-8000-000000000001> /Users/u/proj/build/"
        "lib.macosx-11.0-arm64-cpython-310/my_ops/_C.so\n"
        f"  Expected in:     <1234ABCD-0000-3000-8000-000000000002> {SITE}/torch/lib/libc10.dylib",
    ],
)
def test_dyld_torch_symbol_missing_for_an_extension_reads_as_its_abi(log):
    assert readings(log)[0] == ("EXT_TORCH_ABI_UNDEFINED_SYMBOL", "error")


@pytest.mark.parametrize(
    "log",
    [
        # torch's own module failing to load: a broken torch, not an extension's build
        # (dyld 3's line, then dyld 4's with the image that needs the symbol)
        f"ImportError: dlopen({SITE}/torch/_C.cpython-310-darwin.so, 0x0002): Symbol not found:"
        " __ZN3c1010Dispatcher17runRecordFunctionERN2at14RecordFunctionE",
        f"ImportError: dlopen({SITE}/torch/_C.cpython-310-darwin.so, 0x0002): Symbol not found:"
        " __ZN3c1010Dispatcher17runRecordFunctionERN2at14RecordFunctionE\n"
        f"  Referenced from: <AB12CD34-0000-3000-8000-000000000005> {SITE}/torch/"
        "_C.cpython-310-darwin.so\n"
        f"  Expected in:     <AB12CD34-0000-3000-8000-000000000006> {SITE}/torch/lib/libc10.dylib",
        # torch's own library names the symbol (libtorch_cpu against another libc10)
        "dyld[4242]: Symbol not found: __ZN3c1017RegisterOperatorsD1Ev\n"
        f"  Referenced from: <AB12CD34-0000-3000-8000-000000000003> {SITE}/torch/lib/"
        "libtorch_cpu.dylib\n"
        f"  Expected in:     <AB12CD34-0000-3000-8000-000000000004> {SITE}/torch/lib/libc10.dylib",
        # a plain C symbol of a native library (libpq under psycopg2)
        f"ImportError: dlopen({SITE}/psycopg2/_psycopg.cpython-310-darwin.so, 0x0002): symbol not"
        " found in flat namespace '_PQbackendPID'",
        # another C++ library's namespace (absl), not torch's
        f"ImportError: dlopen({SITE}/foo/_ext.so, 0x0002): symbol not found in flat namespace"
        " '__ZN4absl12lts_202308026StatusC1E'",
        # the symbol alone: no library says whose it is
        "Symbol not found: __ZN3c1017RegisterOperatorsD1Ev",
    ],
)
def test_torchs_own_libraries_and_other_symbols_are_not_an_extensions_abi(log):
    assert "EXT_TORCH_ABI_UNDEFINED_SYMBOL" not in codes(log)


# --- `cannot import name` without its `ImportError: ` ----------------------------------------

CHECKOUT_FRAMES = (
    "[rank0]:Traceback (most recent call last):\n"
    '[rank0]:  File "/home/u/torchtitan/torchtitan/experiments/llama4/__init__.py", line 12,'
    " in <module>\n"
    "[rank0]:    from torchtitan.models.llama3 import pipeline_llama\n"
)


@pytest.mark.parametrize(
    "line",
    [
        "cannot import name 'ScheduleDualPipeV' from 'torch.distributed.pipelining.schedules'",
        "  cannot import name 'PrepareModuleInputOutput' from 'torch.distributed.tensor.parallel'"
        f" ({SITE}/torch/distributed/tensor/parallel/__init__.py)",
        "cannot import name 'is_torch_greater_or_equal' from 'transformers.utils'",
    ],
)
def test_a_stack_packages_missing_name_pasted_bare_reads_as_skew(line):
    assert readings(f"{CHECKOUT_FRAMES}{line}")[0] == ("PACKAGE_VERSION_SKEW", "info")


@pytest.mark.parametrize(
    "log",
    [
        # the user's own module
        f"{CHECKOUT_FRAMES}cannot import name 'build_model' from 'mymodels.llama'",
        # the words inside a sentence, not the error's text
        "Question: why do I get cannot import name 'ScheduleDualPipeV' from"
        " 'torch.distributed.pipelining.schedules' on stable?",
        # the package's own frame imports from itself: one broken install, not two out of step
        f'  File "{SITE}/transformers/models/auto/modeling_auto.py", line 20, in <module>\n'
        "    from transformers.utils import is_foo_available\n"
        "cannot import name 'is_foo_available' from 'transformers.utils'"
        f" ({SITE}/transformers/utils/__init__.py)",
    ],
)
def test_bare_import_failures_of_users_code_or_one_package_are_not_skew(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)


# --- the download CLIs' gated-repository refusals ---------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # torchtune without a token (and v0.1.0, token or not)
        "usage: tune download <repo-id> [OPTIONS]\n"
        "tune download: error: It looks like you are trying to access a gated repository. Please"
        " ensure you have access to the repository and have provided the proper Hugging Face API"
        " token using the option `--hf-token` or by running `huggingface-cli login`.You can find"
        " your token by visiting https://huggingface.co/settings/tokens",
        # torchtune with a token whose account has no access
        "tune download: error: It looks like you are trying to access a gated repository. Please"
        " ensure you have access to the repository.",
        # litgpt download, no token / a token without access
        "ValueError: https://huggingface.co/meta-llama/Meta-Llama-3-8B requires authentication,"
        " please set the `HF_TOKEN=your_token` environment variable or pass"
        " `--access_token=your_token`. You can find your token by visiting"
        " https://huggingface.co/settings/tokens.",
        "ValueError: https://huggingface.co/google/gemma-2b requires authentication. The access"
        " token provided by `HF_TOKEN=your_token` environment variable or"
        " `--access_token=your_token` may not have sufficient access rights. Please visit"
        " https://huggingface.co/google/gemma-2b for more information.",
    ],
)
def test_download_clis_gated_refusals_read_as_gated_repo(log):
    assert readings(log)[0] == ("HF_GATED_REPO_NO_TOKEN", "error")


@pytest.mark.parametrize(
    "log",
    [
        # documentation and the Hub library's docstring speak of gated repositories
        "Please see here for details on accessing gated repositories.",
        "Raised when trying to access a gated repository for which the user is not on the"
        " authorized list.",
        # another service asking for a login
        "wandb: ERROR This project requires authentication. Run `wandb login`",
        # the Hub CLI's option check
        "Error: Cannot use --gated/--no-gated when listing files.",
        # torchtune's refusal of a repository that does not exist
        "tune download: error: Repository 'meta-llama/Llama-9-7b' not found on the Hugging Face"
        " Hub.",
    ],
)
def test_other_gated_and_authentication_words_are_not_it(log):
    assert "HF_GATED_REPO_NO_TOKEN" not in codes(log)
