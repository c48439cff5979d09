"""ctranslate2's own CUDA messages (its library stubs' `Library X is not found or cannot be
loaded`, its CUDA_CHECK's `CUDA failed with error <string>`), pyannote's gated-download
advice, a stack package's console script missing from PATH, a person's `cuda out of
memory`, and pip's `(from versions: ...)` against a specifier list compared as versions:
codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, errors, lead

# --- ctranslate2: its stubs' library names ------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: Library libcublas.so.12 is not found or cannot be loaded",
        # the message alone, quoted in a sentence
        "and meet the error: Library libcublas.so.11 is not found or cannot be loaded",
        "RuntimeError: Library libnccl.so.2 is not found or cannot be loaded",
    ],
)
def test_ctranslate2_library_stub_on_linux_is_a_missing_cuda_runtime_library(log):
    assert lead(log) == ("CUDA_RUNTIME_LIB_MISSING", "error")


def test_ctranslate2_library_stub_on_windows_names_the_dll_too():
    log = "Library cublas64_12.dll is not found or cannot be loaded"
    assert lead(log) == ("CUDA_RUNTIME_LIB_MISSING", "error")
    assert "WIN_DLL_LOAD_FAILED" not in codes(log)  # an `also`, not a second reading


@pytest.mark.parametrize(
    "log",
    [
        # Open MPI is no CUDA library; a symbol missing from a loaded library is another fault
        "RuntimeError: Library libmpi.so.40 is not found or cannot be loaded",
        "RuntimeError: Cannot load symbol cublasGemmEx from library libcublas.so.12",
        "Library libcublas.so.12 was found and loaded",
    ],
)
def test_other_library_lines_are_not_a_missing_cuda_runtime(log):
    assert "CUDA_RUNTIME_LIB_MISSING" not in codes(log)


# --- ctranslate2: CUDA_CHECK's family ------------------------------------------------------

CT2 = "RuntimeError: CUDA failed with error {}"


@pytest.mark.parametrize(
    ("string", "expected"),
    [
        ("out of memory", ("GPU_OUT_OF_MEMORY", "error")),
        ("invalid device ordinal", ("DEVICE_ORDINAL_OUT_OF_RANGE", "error")),
        ("unknown error", ("CUDA_INIT_FAILED_HOST_STATE", "warning")),
        ("system not yet initialized", ("CUDA_INIT_FAILED_HOST_STATE", "warning")),
        (
            "the provided PTX was compiled with an unsupported toolchain.",
            ("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "warning"),
        ),
    ],
)
def test_ctranslate2_cuda_check_strings_read_by_their_meaning(string, expected):
    assert lead(CT2.format(string)) == expected


def test_ctranslate2_oom_quoted_in_prose_reads_the_same():
    log = "Listen, it's appeared again:RuntimeError: CUDA failed with error out of memory error."
    assert lead(log) == ("GPU_OUT_OF_MEMORY", "error")


@pytest.mark.parametrize(
    "string", ["invalid argument", "an illegal memory access was encountered", "unknown errors"]
)
def test_ctranslate2_cuda_check_strings_without_an_environment_meaning_are_not_read(string):
    assert codes(CT2.format(string)) == []


# --- pyannote: the gated-download advice ---------------------------------------------------

_PYANNOTE = (
    "Could not download 'pyannote/{name}' {kind}.\n"
    "It might be because the {kind} is private or gated so make\n"
    "sure to authenticate. Visit https://hf.co/settings/tokens to\n"
    "create your access token and retry with:"
)


@pytest.mark.parametrize(
    ("name", "kind"),
    [("speaker-diarization-3.1", "pipeline"), ("segmentation", "model")],
)
def test_pyannote_could_not_download_is_a_gated_repo_hint_not_an_error(name, kind):
    log = 'torchaudio.set_audio_backend("soundfile")\n' + _PYANNOTE.format(name=name, kind=kind)
    assert lead(log) == ("HF_GATED_REPO_NO_TOKEN", "warning")
    assert errors(log) == []


def test_a_failed_download_without_pyannotes_advice_is_not_a_gated_repo():
    log = "Could not download 'pyannote/segmentation' model.\nConnection reset by peer"
    assert "HF_GATED_REPO_NO_TOKEN" not in codes(log)


def test_the_none_pyannote_returns_alone_is_not_read():
    # pyannote returns None after its advice; the caller's error alone names nothing
    assert codes("\"error\": \"'NoneType' object has no attribute 'eval'\"") == []


# --- a stack package's console script missing ---------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "swift: command not found",
        "train.sh: line 3: llamafactory-cli: command not found",
        "zsh: command not found: lighteval",
        "sh: 1: tensorboard: not found",
        "'huggingface-cli' is not recognized as an internal or external command,",
        "bash: wandb: command not found",
        "hf: command not found",
    ],
)
def test_a_stack_console_script_missing_is_the_environment_not_a_system_program(log):
    assert lead(log) == ("WRONG_PYTHON_INTERPRETER", "warning")
    assert "SYSTEM_PROGRAM_MISSING" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "bash: swiftc: command not found",  # another program whose name starts the same
        "./swift: No such file or directory",
        "Error: No such command 'swift'.",
        "ms-swift: command not found",
    ],
)
def test_other_names_and_messages_are_not_a_missing_console_script(log):
    assert "WRONG_PYTHON_INTERPRETER" not in codes(log)


# --- a person's words for GPU out of memory ------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "Using VLLM0.7.2 server to start DeepSeek-R1 model on 8xNVIDIA-H200, there is a"
        " phenomenon of cuda out of memory and service shutting down.",
        "training crashes with cuda oom after 200 steps",
        "WAN Training: CUDA OOM error using block swapping",
    ],
)
def test_cuda_out_of_memory_in_prose_is_a_hint(log):
    assert lead(log) == ("GPU_OUT_OF_MEMORY", "info")


@pytest.mark.parametrize(
    "log",
    [
        "How to avoid cuda out of memory with a 7B model?",
        "anyone else seeing cuda out of memory on the 4090?",
        "is there a way to run it without cuda out of memory",
        "it no longer hits cuda oom after the upgrade",
        "solved the cuda out of memory by lowering max_model_len",
        "How do I stop CUDA OOM with long videos?",
        "no CUDA OOM since block swapping",
    ],
)
def test_a_question_or_a_fix_about_cuda_memory_is_not_read(log):
    assert "GPU_OUT_OF_MEMORY" not in codes(log)


# --- pip: a specifier list against the versions offered, as versions ------------------------

PIP = "ERROR: Could not find a version that satisfies the requirement {req} (from versions: {offered})"


@pytest.mark.parametrize(
    "req",
    [
        "onnxruntime<=1.8.0,==1.8.0 (from kobert)",
        "onnxruntime<=1.8.0",  # a cap alone
        "onnxruntime<1.12.0",  # a strict cap at the first offered version
        "onnxruntime!=1.7.0,==1.8.0 (from -r requirements.txt (line 4))",
    ],
)
def test_a_pin_or_cap_below_every_offered_version_in_a_specifier_list(req):
    log = PIP.format(req=req, offered="1.12.0, 1.12.1, 1.13.1, 1.14.0, 1.14.1")
    assert lead(log) == ("PYTHON_TOO_NEW_FOR_PACKAGE", "info")
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in codes(log)


@pytest.mark.parametrize(
    "req",
    [
        "onnxruntime<=1.13.0,>=1.8.0 (from kobert)",  # the cap lets 1.12.x in
        "onnxruntime<=1.12.0",
        "onnxruntime<1.12.1",
        "onnxruntime==1.8.*",  # a series, not a version
        "onnxruntime>=1.8.0",
    ],
)
def test_a_bound_that_some_offered_version_meets_is_not_read_as_too_new(req):
    log = PIP.format(req=req, offered="1.12.0, 1.12.1, 1.13.1, 1.14.0, 1.14.1")
    assert "PYTHON_TOO_NEW_FOR_PACKAGE" not in codes(log)


@pytest.mark.parametrize(
    "req",
    ["transformers>=4.45.0", "transformers>4.30.2", "transformers>=4.45.0,<5 (from trl)"],
)
def test_a_floor_above_every_offered_version_is_a_hint_of_an_older_python(req):
    log = PIP.format(req=req, offered="4.30.0, 4.30.1, 4.30.2")
    assert lead(log) == ("PYTHON_TOO_OLD_FOR_PACKAGE", "info")
    assert errors(log) == []


@pytest.mark.parametrize(
    ("req", "offered"),
    [
        ("transformers>=4.30.2", "4.30.0, 4.30.1, 4.30.2"),  # the last one meets it
        ("transformers>=4.9.0", "4.10.0, 4.30.2"),  # 10 above 9: versions, not text
        ("transformers>=4.45.0", "none"),
    ],
)
def test_a_floor_some_offered_version_meets_is_not_read(req, offered):
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in codes(PIP.format(req=req, offered=offered))


def test_a_floor_pip_names_ignored_releases_for_reads_as_before():
    log = (
        "ERROR: Ignored the following versions that require a different python version:"
        " 4.45.0 Requires-Python >=3.9\n" + PIP.format(req="transformers>=4.45.0", offered="4.30.2")
    )
    # pip-no-match-some-ignored-for-python needs the `No matching distribution` line; the
    # floor reading stands aside when pip names what it ignored
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in codes(log)
