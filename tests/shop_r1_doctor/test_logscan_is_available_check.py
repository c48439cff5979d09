"""The check users paste when the GPU goes unused, `torch.cuda.is_available()` answered
`False` (a REPL, IPython, a one-liner): torch sees no usable GPU, a warning that leaves
the CPU build and hidden GPUs open. Codes and severities (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead


@pytest.mark.parametrize(
    "log",
    [
        ">>> import torch\n>>> print(torch.cuda.is_available())\nFalse\n",
        "In [2]: torch.cuda.is_available()\nOut[2]: False\n",
        '$ python -c "import torch; print(torch.cuda.is_available())"\nFalse\n',
    ],
    ids=["repl", "ipython", "one-liner"],
)
def test_the_check_answered_false_is_a_warning(log):
    assert lead(log) == ("TORCH_CUDA_UNAVAILABLE", "warning")


@pytest.mark.parametrize(
    "log",
    [
        ">>> print(torch.cuda.is_available())\nTrue\n",
        "if not torch.cuda.is_available():\n    use_cpu = False\n",
    ],
    ids=["true", "code-not-output"],
)
def test_a_true_answer_or_code_mentioning_it_is_not_read(log):
    assert "TORCH_CUDA_UNAVAILABLE" not in codes(log)
