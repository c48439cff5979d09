"""Readings learned from failures caused for real on a CPU machine: pip that cannot resolve
the index's name, a pin with no wheel for the interpreter or platform pip fetches for, a
site-packages and a --user fallback neither writable, a tokenizer class the installed
transformers lacks, a text file torch.load's weights-only unpickler refuses. Text shapes
beyond the recordings; near misses that must not read so. Codes and severities only
(wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

RETRY_DNS = (
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None))"
    " after connection broken by 'NameResolutionError(\"HTTPSConnection(host='{host}',"
    " port=443): Failed to resolve '{host}' ([Errno -2] Name or service not known)\")':"
    " /simple/{name}/\n"
)


@pytest.mark.parametrize(
    ("host", "name"), [("pypi.org", "torch"), ("mirrors.example.cn", "transformers")]
)
def test_pip_that_cannot_resolve_the_index_reads_as_index_unreachable(host, name):
    log = RETRY_DNS.format(host=host, name=name)
    log += f"ERROR: Could not find a version that satisfies the requirement {name}==1.0"
    log += " (from versions: none)\n"
    log += f"ERROR: No matching distribution found for {name}==1.0\n"
    assert readings(log)[0] == ("PACKAGE_INDEX_UNREACHABLE", "error")
    assert "NO_RELEASE_FOR_THIS_PLATFORM" not in codes(log)


def test_a_hub_download_that_cannot_resolve_is_not_the_package_index():
    log = (
        'requests.exceptions.ConnectionError: (MaxRetryError("HTTPSConnectionPool('
        "host='huggingface.co', port=443): Max retries exceeded with url: /api/models/x"
        ' (Caused by NameResolutionError("<urllib3.connection.HTTPSConnection object>:'
        " Failed to resolve 'huggingface.co' ([Errno -3] Temporary failure in name"
        " resolution)\"))'), '(Request ID: 1)')\n"
    )
    assert "PACKAGE_INDEX_UNREACHABLE" not in codes(log)


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (
            "$ pip download --no-deps --only-binary=:all: --python-version 3.13 torch==2.1.0",
            "torch==2.1.0 (from versions: 2.5.0, 2.5.1, 2.6.0)",
        ),
        (
            "$ pip download --only-binary=:all: --platform=macosx_10_9_x86_64 torch==2.5.1",
            "torch==2.5.1 (from versions: 2.0.0, 2.1.0, 2.2.2)",
        ),
        (
            "+ python -m pip install --target site --only-binary=:all: --platform"
            " manylinux2014_aarch64 --python-version 3.10 vllm==0.6.3",
            "vllm==0.6.3 (from versions: 0.8.5, 0.9.0)",
        ),
    ],
)
def test_a_pin_without_a_wheel_for_the_fetched_target_reads_as_no_release_there(command, error):
    log = f"{command}\nERROR: Could not find a version that satisfies the requirement {error}\n"
    assert readings(log)[0] == ("NO_RELEASE_FOR_THIS_PLATFORM", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # no target flags: the interpreter's own pip (the older hint, not this reading)
        "$ pip install torch==2.1.0\nERROR: Could not find a version that satisfies the"
        " requirement torch==2.1.0 (from versions: 2.5.0, 2.5.1)\n",
        # the pin is among the versions offered: a conflict, not a missing wheel
        "$ pip download --python-version 3.12 torch==2.5.1\nERROR: Could not find a version"
        " that satisfies the requirement torch==2.5.1 (from versions: 2.5.0, 2.5.1)\n",
        # the flag is in the user's own script's arguments, not pip's
        "$ python train.py --platform macosx\nERROR: Could not find a version that satisfies"
        " the requirement torch==2.1.0 (from versions: 2.5.0)\n",
    ],
)
def test_other_pins_are_not_read_as_no_wheel_for_the_target(log):
    assert ("NO_RELEASE_FOR_THIS_PLATFORM", "warning") not in readings(log)


@pytest.mark.parametrize(
    "denied", ["'/nonexistent'", "'/.local'", "'/home/u/.local/lib/python3.11'"]
)
def test_a_user_site_fallback_that_cannot_write_reads_as_system_python_not_writable(denied):
    log = (
        "Defaulting to user installation because normal site-packages is not writeable\n"
        "Collecting six\n  Downloading six-1.17.0-py2.py3-none-any.whl (11 kB)\n"
        "Installing collected packages: six\n"
        f"ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: {denied}\n"
        "Check the permissions.\n"
    )
    assert readings(log)[0] == ("SYSTEM_PYTHON_NOT_WRITABLE", "error")


def test_a_user_site_install_that_worked_then_a_denied_output_dir_is_not_the_python():
    log = (
        "Defaulting to user installation because normal site-packages is not writeable\n"
        "Successfully installed six-1.17.0\n"
        "$ python train.py\n"
        "PermissionError: [Errno 13] Permission denied: '/data/out/checkpoint-500'\n"
    )
    assert "SYSTEM_PYTHON_NOT_WRITABLE" not in codes(log)


@pytest.mark.parametrize("cls", ["TokenizersBackend", "Qwen2Tokenizer", "GemmaTokenizerFast"])
def test_an_unknown_tokenizer_class_reads_as_transformers_too_old_at_warning(cls):
    log = f"ValueError: Tokenizer class {cls} does not exist or is not currently imported.\n"
    assert readings(log)[0] == ("TRANSFORMERS_TOO_OLD_FOR_MODEL", "warning")


def test_a_tokenizer_class_mismatch_warning_is_not_an_unknown_class():
    log = (
        "The tokenizer class you load from this checkpoint is not the same type as the class"
        " this function is called from. It may result in unexpected tokenization.\n"
        "The tokenizer class you load from this checkpoint is 'LlamaTokenizer'.\n"
        "The class this function is called from is 'Qwen2Tokenizer'.\n"
    )
    assert "TRANSFORMERS_TOO_OLD_FOR_MODEL" not in codes(log)


WEIGHTS_ONLY = (
    "_pickle.UnpicklingError: Weights only load failed. In PyTorch 2.6, we changed the"
    " default value of the `weights_only` argument in `torch.load` from `False` to `True`.\n"
    "Please file an issue with the following so that we can make `weights_only=True`"
    " compatible with your use case: WeightsUnpickler error: \n\n{detail}\n"
)


@pytest.mark.parametrize("operand", ["118", "60"])
def test_text_refused_by_the_weights_only_unpickler_is_not_weights_not_a_global(operand):
    log = WEIGHTS_ONLY.format(detail=f"Unsupported operand {operand}")
    assert readings(log)[0] == ("CHECKPOINT_NOT_WEIGHTS", "warning")
    assert "TORCH_LOAD_WEIGHTS_ONLY" not in codes(log)


def test_a_global_outside_the_allow_list_still_reads_as_weights_only():
    detail = "Unsupported global: GLOBAL argparse.Namespace was not an allowed global by default."
    assert readings(WEIGHTS_ONLY.format(detail=detail))[0] == ("TORCH_LOAD_WEIGHTS_ONLY", "error")
