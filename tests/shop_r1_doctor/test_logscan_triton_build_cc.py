"""The C compiler Triton builds its launcher with is not there (CC names no file): Python's
FileNotFoundError under Triton's _build frame, or in Inductor's wrapper naming a compiler,
reads as TORCH_COMPILE_NO_COMPILER ahead of a package build's EXT_BUILD_NO_C_COMPILER.
Learned from a failure caused on one H100 (tests/fixtures/faults/gpu/); codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

BUILD_FRAME = (
    '  File "/opt/venv/lib/python3.11/site-packages/triton/runtime/build.py", line 48, in _build\n'
    "    subprocess.check_call(cc_cmd, stdout=subprocess.DEVNULL)\n"
    '  File "/usr/lib/python3.11/subprocess.py", line 408, in check_call\n'
    "    retcode = call(*popenargs, **kwargs)\n"
    "              ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/usr/lib/python3.11/subprocess.py", line 1955, in _execute_child\n'
    "    raise child_exception_type(errno_num, err_msg, err_filename)\n"
)


@pytest.mark.parametrize(
    "log",
    [
        # under torch.compile: Inductor re-raises with Triton's frames kept (torch 2.11)
        f"{BUILD_FRAME}torch._inductor.exc.InductorError: FileNotFoundError: [Errno 2] No such"
        " file or directory: '/opt/gcc-13/bin/gcc'",
        # a Triton kernel called directly (Liger, a user's kernel): CC names a clang that is
        # not installed, under torchrun's rank prefix
        "\n".join(f"[rank0]: {line}" for line in BUILD_FRAME.splitlines())
        + "\n[rank0]: FileNotFoundError: [Errno 2] No such file or directory: 'clang-18'",
        # CC names a wrapper (ccache) that is not installed: the frame says whose build it is
        f"{BUILD_FRAME}FileNotFoundError: [Errno 2] No such file or directory: 'ccache'",
        # frames cut: Inductor's wrapper naming a compiler (2.x, then the older form)
        "torch._inductor.exc.InductorError: FileNotFoundError: [Errno 2] No such file or"
        " directory: '/usr/local/bin/x86_64-linux-gnu-gcc-12'",
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nFileNotFoundError:"
        " [Errno 2] No such file or directory: 'gcc'",
    ],
)
def test_tritons_missing_compiler_reads_as_compile_without_compiler(log):
    assert readings(log)[0] == ("TORCH_COMPILE_NO_COMPILER", "error")


def test_the_recorded_failure_leads_with_it():
    from pathlib import Path

    log = Path(__file__).parents[1] / "fixtures/faults/gpu/compile_cc_points_nowhere.log"
    assert codes(log.read_text(encoding="utf-8"))[0] == "TORCH_COMPILE_NO_COMPILER"


@pytest.mark.parametrize(
    "log",
    [
        # a package's own build (setuptools) missing gcc stays EXT_BUILD_NO_C_COMPILER
        "      error: [Errno 2] No such file or directory: 'gcc'",
        "  error: command 'gcc' failed: No such file or directory",
        # the compiler ran and failed: Triton's build, but not a missing compiler
        f"{BUILD_FRAME}subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpab/"
        "main.c', '-O3']' returned non-zero exit status 1.",
        # a compiled run that cannot find the user's data file
        "torch._inductor.exc.InductorError: FileNotFoundError: [Errno 2] No such file or"
        " directory: 'data/train.jsonl'",
        # Triton's frame in one traceback, the user's missing file in a later one
        f"{BUILD_FRAME}subprocess.CalledProcessError: returned non-zero exit status 1.\n"
        "Retrying without torch.compile\n"
        "FileNotFoundError: [Errno 2] No such file or directory: 'checkpoints/last.pt'",
    ],
)
def test_other_build_and_missing_file_failures_are_not_it(log):
    assert "TORCH_COMPILE_NO_COMPILER" not in codes(log)
