"""pip's `No matching distribution found` for a bare requirement of a package every index
has: no file of it installs on this interpreter and platform (a warning). Codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

CODE = "NO_RELEASE_FOR_THIS_PLATFORM"


@pytest.mark.parametrize(
    "log",
    [
        "All return: ERROR: No matching distribution found for torch",
        "ERROR: No matching distribution found for vllm\n",
        "ERROR: No matching distribution found for torchaudio  ",
    ],
)
def test_a_bare_stack_package_with_no_distribution_is_a_warning(log):
    assert lead(log) == (CODE, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a version that does not exist: the user's pin, not the platform
        "ERROR: No matching distribution found for torch==2.9.9",
        # a package name the reader does not know: a typo or a private package
        "ERROR: No matching distribution found for torchh",
        "ERROR: No matching distribution found for my-internal-utils",
    ],
)
def test_a_pinned_version_or_another_name_is_not_this(log):
    assert CODE not in codes(log)
