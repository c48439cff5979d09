"""Readings learned from failures caused for real on a CPU machine: libraries built on a
noexec mount, torch.load's weights-only refusal, dataset loading scripts under datasets 4,
transformers' remote code without trust_remote_code, and a console encoding that cannot
print the run's text. Text shapes beyond the recordings (other paths, Triton's wording,
rank prefixes); near misses that must not read so. Codes and severities only (wording:
codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

# --- TMP_DIR_NOEXEC -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "torch._inductor.exc.InductorError: OSError: /scratch/u1/inductor/rd/crd.main.so: failed"
        " to map segment from shared object.  The most common reason this may occur is if the"
        " /tmp folder is mounted with noexec (e.g., by default Docker mounts tmp file systems as"
        " noexec).",
        "[rank1]: ImportError: /home/u/.cache/torch_extensions/py311_cu128/fused_adam/"
        "fused_adam.so: failed to map segment from shared object",
        "ImportError: /tmp/triton/abc/cuda_utils.so: failed to map segment from shared object."
        " This usually means Triton's cache directory (/tmp/triton) is on a filesystem mounted"
        " with noexec, so the dynamic loader cannot map generated shared objects.",
    ],
)
def test_a_library_that_cannot_be_mapped_reads_as_a_noexec_dir_at_warning(log):
    assert readings(log)[0] == ("TMP_DIR_NOEXEC", "warning")


@pytest.mark.parametrize(
    "log",
    [
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
        "mount -o remount,exec /tmp\nmount: /tmp: permission denied.",
        "/tmp/ext/main.cpp:2:47: error: 'y' was not declared in this scope\n"
        "RuntimeError: Error building extension 'shop_twice'",
    ],
)
def test_other_shared_object_and_build_failures_are_not_noexec(log):
    assert "TMP_DIR_NOEXEC" not in codes(log)


# --- TORCH_LOAD_WEIGHTS_ONLY ----------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do"
        " so you have two options, \x1b[1mdo those steps only if you trust the source of the"
        " checkpoint\x1b[0m.",
        "\tWeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar was not"
        " an allowed global by default. Please use `torch.serialization.add_safe_globals([scalar])`",
        "[rank0]: _pickle.UnpicklingError: Weights only load failed. In PyTorch 2.6, we changed"
        " the default value of the `weights_only` argument in `torch.load` from `False` to `True`.",
    ],
)
def test_a_weights_only_refusal_reads_as_such_at_error(log):
    assert readings(log)[0] == ("TORCH_LOAD_WEIGHTS_ONLY", "error")


@pytest.mark.parametrize(
    "log",
    [
        "FileNotFoundError: [Errno 2] No such file or directory: 'checkpoint-500/pytorch_model.bin'",
        "_pickle.UnpicklingError: invalid load key, 'v'.",
        "FutureWarning: You are using `torch.load` with `weights_only=False` (the current default"
        " value), which uses the default pickle module implicitly.",
    ],
)
def test_other_load_failures_and_the_old_warning_are_not_the_refusal(log):
    assert "TORCH_LOAD_WEIGHTS_ONLY" not in codes(log)


# --- DATASET_SCRIPT_UNSUPPORTED --------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: Dataset scripts are no longer supported, but found gsm8k.py",
        "[rank0]: RuntimeError: Dataset scripts are no longer supported, but found"
        " webshop_sessions.py",
    ],
)
def test_a_loading_script_under_datasets_4_reads_as_such(log):
    assert readings(log)[0] == ("DATASET_SCRIPT_UNSUPPORTED", "error")


@pytest.mark.parametrize(
    "log",
    [
        "`trust_remote_code` is not supported anymore.\nPlease check that the Hugging Face dataset"
        " 'org/data' isn't based on a loading script and remove `trust_remote_code`.",
        "ValueError: Unknown split \"validation\". Should be one of ['train'].",
    ],
)
def test_the_logged_trust_remote_code_note_and_a_split_typo_are_not_scripts(log):
    assert "DATASET_SCRIPT_UNSUPPORTED" not in codes(log)


# --- TRUST_REMOTE_CODE_REQUIRED --------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ValueError: The repository Qwen/Qwen-7B contains custom code which must be executed to"
        " correctly load the model. You can inspect the repository content at"
        " https://hf.co/Qwen/Qwen-7B.\nPlease pass the argument `trust_remote_code=True` to allow"
        " custom code to be run.",
        "Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
    ],
)
def test_custom_code_without_trust_remote_code_reads_as_such(log):
    assert readings(log)[0] == ("TRUST_REMOTE_CODE_REQUIRED", "error")


@pytest.mark.parametrize(
    "log",
    [
        "The argument `trust_remote_code` is to be used with Auto classes. It has no effect here"
        " and is ignored.",
        "    print(AutoConfig.from_pretrained(str(model_dir), trust_remote_code=True))\n"
        "OSError: [Errno 30] Read-only file system: '/hf-home/modules'",
    ],
)
def test_trust_remote_code_mentioned_elsewhere_is_not_the_refusal(log):
    assert "TRUST_REMOTE_CODE_REQUIRED" not in codes(log)


# --- WIN_CONSOLE_GBK_ENCODING: the console, not the program's own encode() -----------------


@pytest.mark.parametrize(
    "log",
    [
        '  File "train.py", line 62, in log_step\n'
        '    print(f"step 1/10 sample: {sample}")\n'
        "UnicodeEncodeError: 'ascii' codec can't encode characters in position 30-31: ordinal"
        " not in range(128)",
        "--- Logging error ---\n"
        '  File "/usr/lib/python3.11/logging/__init__.py", line 1113, in emit\n'
        "    stream.write(msg + self.terminator)\n"
        "UnicodeEncodeError: 'ascii' codec can't encode characters in position 19-20: ordinal"
        " not in range(128)",
    ],
)
def test_printing_to_an_ascii_stream_reads_as_the_console_encoding(log):
    assert codes(log)[0] == "WIN_CONSOLE_GBK_ENCODING"


@pytest.mark.parametrize(
    "log",
    [
        '  File "app.py", line 82, in cache_key\n'
        '    key = name.encode("ascii")\n'
        "          ^^^^^^^^^^^^^^^^^^^^\n"
        "UnicodeEncodeError: 'ascii' codec can't encode characters in position 0-1: ordinal not"
        " in range(128)",
        '  File "app.py", line 9, in <module>\n'
        "    header = value.encode('ascii', errors='strict')\n"
        "UnicodeEncodeError: 'ascii' codec can't encode character '\\u2019' in position 3",
    ],
)
def test_the_programs_own_encode_call_is_not_the_console(log):
    assert "WIN_CONSOLE_GBK_ENCODING" not in codes(log)
