"""Readings learned from batches 29 and 29c: torch 2.8+'s unsupported-GPU warning read from
its opening lines alone, xformers built for a CUDA torch while the CPU build runs, and a
GUI's per-line stream labels (`Cache Preparation STDERR: `) taken off before reading.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

from shop_r1_doctor.logscan import strip_prefixes


def cc_warning(name: str, cc: str, built: list[str]) -> str:
    """torch/cuda/__init__.py _warn_unsupported_code's opening lines, as torch 2.13 joins them."""
    lines = [
        f"Found GPU0 {name} which is of compute capability (CC) {cc}.",
        "The following list shows the CCs this version of PyTorch was built for and the"
        " hardware CCs it supports:",
    ] + [f"- {b} which supports hardware CC >={b}" for b in built]
    return "UserWarning: " + "\n".join(lines) + "\n"


def test_the_warnings_opening_lines_for_an_old_gpu_read_as_a_build_without_its_arch():
    log = cc_warning("NVIDIA GeForce GTX 1070 Ti", "6.1", ["7.5", "8.0", "9.0"])
    assert lead(log)[0] == "TORCH_ARCH_UNSUPPORTED_GPU"


def test_the_same_lines_on_one_console_line_as_windows_pasted_them():
    log = cc_warning("NVIDIA GeForce GTX 1070 Ti", "6.1", ["7.5"]).replace("\n", " ")
    assert lead(log)[0] == "TORCH_ARCH_UNSUPPORTED_GPU"


def test_the_warnings_opening_lines_for_a_blackwell_gpu_read_as_no_blackwell_arch():
    log = cc_warning("NVIDIA GeForce RTX 5090", "12.0", ["5.0", "8.0", "9.0"])
    assert lead(log)[0] == "TORCH_NO_BLACKWELL_ARCH"


def test_a_compute_capability_stated_elsewhere_is_no_build_warning():
    log = "GPU 0: NVIDIA A100 which is of compute capability (CC) 8.0.\nTraining started\n"
    assert not {"TORCH_ARCH_UNSUPPORTED_GPU", "TORCH_NO_BLACKWELL_ARCH"} & set(codes(log))


XFORMERS = (
    "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
    "    PyTorch 2.6.0+cu124 with CUDA 1204 (you have {have})\n"
    "    Python  3.10.11 (you have 3.10.11)\n"
)


def test_xformers_built_for_a_cuda_torch_beside_a_cpu_torch_is_the_cpu_build():
    assert lead(XFORMERS.format(have="2.6.0+cpu")) == ("TORCH_CPU_ONLY_BUILD", "warning")
    assert lead(XFORMERS.format(have="2.5.1+cpu"))[0] == "TORCH_CPU_ONLY_BUILD"


def test_xformers_beside_the_cuda_torch_it_was_built_for_is_not_the_cpu_build():
    assert "TORCH_CPU_ONLY_BUILD" not in codes(XFORMERS.format(have="2.6.0+cu124"))
    # another CUDA torch: the wheel mismatch, not a CPU build
    assert lead(XFORMERS.format(have="2.5.1+cu121"))[0] == "XFORMERS_WHEEL_MISMATCH"


def test_a_guis_stream_labels_come_off_each_line():
    relayed = "".join(
        f"Cache Preparation STDERR: {line}\n"
        for line in XFORMERS.format(have="2.6.0+cpu").splitlines()
    )
    assert strip_prefixes(relayed) == XFORMERS.format(have="2.6.0+cpu")
    assert lead(relayed)[0] == "TORCH_CPU_ONLY_BUILD"


@pytest.mark.parametrize(
    "line",
    [
        "ERROR: Could not find a version that satisfies the requirement torch",
        "stderr: fatal: not a git repository",
        "RuntimeError: child failed, see its STDERR: below",
    ],
)
def test_lines_that_are_not_a_relay_label_keep_their_words(line):
    assert strip_prefixes(line) == line
