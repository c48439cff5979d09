"""Two OpenMP runtimes in one process: OpenMP's own abort (Error #15), in full, cut before
its number, or only its Hint line. Codes and severities only (wording: codes.yaml); the
recordings are tests/fixtures/faults/openmp_duplicate/."""

from __future__ import annotations

from pathlib import Path

import pytest
from logscan_readings import codes, lead

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "faults" / "openmp_duplicate"
CODE = "OPENMP_RUNTIME_DUPLICATE"


@pytest.mark.parametrize(
    "log",
    [
        "OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll already initialized.",
        "Initializing libomp.dylib, but found libiomp5.dylib already initialized.",
        "OMP: Hint This means that multiple copies of the OpenMP runtime have been linked into"
        " the program. That is dangerous, since it can degrade performance",
    ],
)
def test_openmp_aborting_on_a_second_copy_is_read(log):
    assert lead(log) == (CODE, "error")


@pytest.mark.parametrize(
    "log",
    [
        "OMP: Info #276: omp_set_nested routine deprecated, please use omp_set_max_active_levels",
        "OMP: Error #13: Assertion failure at kmp_runtime.cpp(6481).",
        "Initializing the tokenizer, found 2 special tokens already in the vocabulary",
    ],
)
def test_other_openmp_messages_and_lookalikes_are_not_this(log):
    assert CODE not in codes(log)


def test_the_recordings_lead_with_it_and_the_users_bug_gets_nothing():
    log = (RECORDED / "two_packages_bundle_libiomp5.log").read_text(encoding="utf-8")
    assert lead(log) == (CODE, "error")
    user = (RECORDED / "one_runtime_user_keyerror.log").read_text(encoding="utf-8")
    assert CODE not in codes(user)
