"""Readings learned from threads in Chinese: flash-attn's guessed release wheel answering
404 (no wheel for that torch/CUDA/Python), and a launcher starting `python` by name where
no such program is on PATH. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

URL = (
    "https://github.com/Dao-AILab/flash-attention/releases/download/v2.6.3/"
    "flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE-cp312-cp312-linux_x86_64.whl"
)


@pytest.mark.parametrize(
    "log",
    [
        # setup.py's own line, then urllib's error as pip -v shows it
        f"Guessing wheel URL:  {URL}\nurllib.error.HTTPError: HTTP Error 404: Not Found\n",
        # the user's quote, the URL wrapped by the terminal, the 404 in their words
        URL[:110] + "\n" + URL[110:] + " 下载失败，返回404\n",
        # wget's view of the same URL
        f"--2025-03-01 10:00:00--  {URL}\nHTTP request sent, awaiting response... 404 Not Found\n",
    ],
)
def test_a_guessed_flash_attn_wheel_answering_404_means_no_wheel_for_this_stack(log):
    assert ("FA_NO_PREBUILT_WHEEL", "warning") in readings(log)


@pytest.mark.parametrize(
    "log",
    [
        # the same wheel downloaded and installed
        f"Guessing wheel URL:  {URL}\nSuccessfully installed flash-attn-2.6.3\n",
        # a 404 from elsewhere in the same install
        "Collecting flash-attn\nERROR: HTTP error 404 while getting https://example.org/x.whl\n",
        # a byte count that contains 404 after the URL
        f"Downloading {URL} (140404 kB)\n",
    ],
)
def test_other_404s_and_downloads_that_worked_are_not_no_wheel(log):
    assert "FA_NO_PREBUILT_WHEEL" not in {code for code, _ in readings(log)}


@pytest.mark.parametrize(
    "log",
    [
        # mmengine's launcher (xtuner) reporting subprocess's FileNotFoundError
        "07/22 03:04:52 - mmengine - WARNING - WARNING: command error: "
        "'[Errno 2] No such file or directory: 'python''!",
        "FileNotFoundError: [Errno 2] No such file or directory: 'python3'",
        "scripts/train.sh: line 4: python: command not found",
        "sh: 1: python3.10: not found",
        "zsh: command not found: python",
    ],
)
def test_no_python_on_the_launchers_path_is_the_wrong_interpreter(log):
    assert readings(log)[0][0] == "WRONG_PYTHON_INTERPRETER"


@pytest.mark.parametrize(
    "log",
    [
        # python found, the script is what is missing
        "python3: can't open file '/home/u/train.py': [Errno 2] No such file or directory",
        "FileNotFoundError: [Errno 2] No such file or directory: 'python_data/train.json'",
        "FileNotFoundError: [Errno 2] No such file or directory: 'pythonw.cfg'",
        "bash: pythonx: command not found",
    ],
)
def test_a_missing_file_or_another_program_is_not_python_missing(log):
    assert "WRONG_PYTHON_INTERPRETER" not in {code for code, _ in readings(log)}
