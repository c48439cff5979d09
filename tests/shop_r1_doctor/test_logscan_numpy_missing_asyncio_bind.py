"""Readings learned from failures caused for real on a CPU machine: torch's NumPy bridge in an
environment without NumPy, and an asyncio server (aiohttp, uvicorn) told to listen on an
address that is not this machine's. Near misses that must not read so. Codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

WARN = (
    "/venv/lib/python3.11/site-packages/torch/_subclasses/functional_tensor.py:368: UserWarning:"
    " Failed to initialize NumPy: No module named 'numpy' (Triggered internally at"
    " /__w/pytorch/pytorch/torch/csrc/utils/tensor_numpy.cpp:84.)\n"
    '  cpu = _conversion_method_template(device=torch.device("cpu"))\n'
)


@pytest.mark.parametrize(
    "tail",
    [
        "Traceback (most recent call last):\n"
        '  File "train.py", line 6, in <module>\n'
        "    preds = logits.argmax(-1).numpy()\n"
        "RuntimeError: Numpy is not available\n",
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.\n"
        "Original Traceback (most recent call last):\n"
        "RuntimeError: Numpy is not available\n",
    ],
)
def test_numpy_bridge_without_numpy_reads_as_not_installed_at_error(tail):
    assert readings(WARN + tail)[0] == ("PACKAGE_REQUESTED_NOT_INSTALLED", "error")


def test_the_import_warning_alone_is_no_failure():
    log = WARN + "Traceback (most recent call last):\nKeyError: 'labels'\n"
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" not in codes(log)


def test_numpy_2_under_an_old_torch_is_not_read_as_numpy_missing():
    log = (
        "UserWarning: Failed to initialize NumPy: _ARRAY_API not found (Triggered internally at"
        " ../torch/csrc/utils/tensor_numpy.cpp:84.)\n"
        "RuntimeError: Numpy is not available\n"
    )
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "OSError: [Errno 99] error while attempting to bind on address ('10.77.0.5', 8011):"
        " cannot assign requested address",
        "OSError: [Errno 99] error while attempting to bind on address ('fd00::5', 8000, 0, 0):"
        " cannot assign requested address",
    ],
)
def test_asyncio_bind_on_a_foreign_address_reads_as_not_local(log):
    assert readings(log)[0] == ("BIND_ADDRESS_NOT_LOCAL", "error")


@pytest.mark.parametrize(
    "log",
    [
        "OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000):"
        " address already in use",
        "OSError: [Errno 13] error while attempting to bind on address ('0.0.0.0', 80):"
        " permission denied",
    ],
)
def test_other_asyncio_bind_errors_are_not_a_foreign_address(log):
    assert "BIND_ADDRESS_NOT_LOCAL" not in codes(log)
