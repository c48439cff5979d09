"""Readings learned from GPU fault batch 9 (caused on two H100s), on text shapes beyond the
recordings: torch's out-of-memory line naming another process that holds the GPU's memory.
Codes, severities and which reading leads; wording stays in the knowledge."""

from __future__ import annotations

import pytest
from logscan_readings import readings

BUSY = ("GPU_BUSY_OTHER_PROCESSES", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a rank of a second torchrun job on GPUs a first job fills (batch 9's recording)
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 31.67 GiB. GPU 1"
        " has a total capacity of 79.18 GiB of which 20.89 GiB is free. Process 767 has 56.85"
        " GiB memory in use. Including non-PyTorch memory, this process has 1.42 GiB memory in"
        " use. Of the allocated memory 512 bytes is allocated by PyTorch",
        # two other processes, this one listed last (NVML's order)
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has"
        " a total capacity of 23.65 GiB of which 9.06 MiB is free. Including non-PyTorch memory,"
        " this process has 1.10 GiB memory in use. Process 3180 has 11.69 GiB memory in use."
        " Process 48133 has 10.83 GiB memory in use. Of the allocated memory 655.00 MiB is"
        " allocated by PyTorch",
    ],
)
def test_oom_naming_another_process_says_it_holds_the_gpu(log):
    found = readings(log)
    assert found[0] == ("GPU_OUT_OF_MEMORY", "error")  # the failure leads; the holder explains
    assert BUSY in found


@pytest.mark.parametrize(
    "log",
    [
        # only this process on the GPU
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a"
        " total capacity of 79.18 GiB of which 2.10 GiB is free. Including non-PyTorch memory,"
        " this process has 77.00 GiB memory in use. Of the allocated memory 75.00 GiB is"
        " allocated by PyTorch",
        # another process holds a few MiB (a monitor, a display server): not the cause
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a"
        " total capacity of 79.18 GiB of which 2.10 GiB is free. Process 1234 has 312.00 MiB"
        " memory in use. Including non-PyTorch memory, this process has 76.70 GiB memory in use.",
        # a process's memory reported on a line of its own, no out-of-memory there
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.\n"
        "monitor: Process 4321 has 40.00 GiB memory in use",
    ],
)
def test_oom_without_another_holder_names_none(log):
    found = readings(log)
    assert found[0] == ("GPU_OUT_OF_MEMORY", "error")
    assert "GPU_BUSY_OTHER_PROCESSES" not in [c for c, _ in found]
