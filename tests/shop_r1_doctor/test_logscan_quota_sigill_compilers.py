"""Readings learned from failures caused for real on a CPU machine: a write past a disk
quota, native code built for instructions the CPU lacks (SIGILL), an extension build with
no C compiler, nvcc refusing its host compiler. Text shapes beyond the recordings; near
misses that must not read so. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings


@pytest.mark.parametrize(
    "log",
    [
        "OSError: [Errno 122] Disk quota exceeded: '/home/u/.cache/huggingface/hub/tmpab12'",
        "safetensors._safetensors_rust.SafetensorError: Error while serializing: I/O error:"
        " Disk quota exceeded (os error 122)",
        "[rank0]: OSError: [Errno 69] Disc quota exceeded",
        "ERROR: Could not install packages due to an OSError: [Errno 122] Disk quota exceeded",
    ],
)
def test_a_write_past_a_quota_reads_as_the_quota_at_error(log):
    assert readings(log)[0] == ("DISK_QUOTA_EXCEEDED", "error")


@pytest.mark.parametrize(
    "log",
    [
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric",
        "INFO disk quota: 41% of 500 GB used",
    ],
)
def test_other_quotas_are_not_a_disk_quota(log):
    assert "DISK_QUOTA_EXCEEDED" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "Fatal Python error: Illegal instruction\n\nCurrent thread 0x7f (most recent call"
        ' first):\n  File "train.py", line 3 in <module>',
        "bash: line 1:   698 Illegal instruction     python -m train",
        "run.sh: line 12: 4242 Illegal instruction (core dumped) python train.py",
        "Illegal instruction (core dumped)",
        "zsh: illegal hardware instruction  python train.py",
        "traceback : Signal 4 (SIGILL) received by PID 1234",
    ],
)
def test_sigill_reads_as_an_unsupported_instruction_at_warning(log):
    assert readings(log)[0] == ("CPU_INSTRUCTION_UNSUPPORTED", "warning")


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA error: an illegal instruction was encountered",
        "ValueError: Illegal instructions in the prompt template",
    ],
)
def test_a_gpu_kernel_fault_or_a_word_is_not_sigill(log):
    assert "CPU_INSTRUCTION_UNSUPPORTED" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "      error: [Errno 2] No such file or directory: 'gcc'",
        "      error: [Errno 2] No such file or directory: '/opt/gcc-13/bin/gcc'",
        "error: command 'x86_64-linux-gnu-gcc' failed: No such file or directory",
        "error: command 'clang++' failed: No such file or directory",
        "unable to execute 'gcc-12': No such file or directory",
        "FileNotFoundError: [Errno 2] No such file or directory: 'c++'",
    ],
)
def test_a_compiler_that_is_not_there_reads_as_no_c_compiler_at_error(log):
    assert readings(log)[0] == ("EXT_BUILD_NO_C_COMPILER", "error")


@pytest.mark.parametrize(
    "log",
    [
        "error: command '/usr/bin/gcc' failed with exit code 1",
        "FileNotFoundError: [Errno 2] No such file or directory: 'gcc_version.txt'",
        "FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'",
    ],
)
def test_a_compiler_that_ran_or_another_file_is_not_a_missing_compiler(log):
    assert "EXT_BUILD_NO_C_COMPILER" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "host_config.h:137:2: error: #error -- unsupported GNU version! gcc versions later than"
        " 15 are not supported!",
        "host_config.h:143:2: error: #error -- unsupported clang version! clang version must be"
        " less than 21 and greater than 3.2 .",
        "host_config.h(164): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio"
        " version! Only the versions between 2019 and 2022 (inclusive) are supported!",
    ],
)
def test_nvcc_refusing_its_host_compiler_reads_so_at_error(log):
    assert readings(log)[0] == ("NVCC_HOST_COMPILER_UNSUPPORTED", "error")


def test_an_unsupported_python_version_is_not_a_host_compiler():
    log = "RuntimeError: unsupported Python version 3.14 for this wheel"
    assert "NVCC_HOST_COMPILER_UNSUPPORTED" not in codes(log)
