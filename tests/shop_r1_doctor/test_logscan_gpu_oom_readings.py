"""torch's CUDA out-of-memory line read for what it names besides the failure: the process's
own memory fraction (`<size> allowed;`: the cap, not the GPU, was reached) and another
process holding GiB of the GPU (GPU_BUSY_OTHER_PROCESSES beside the failure). Learned
from failures caused on H100s (tests/fixtures/faults/gpu/); codes, severities and which
reading leads (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

from shop_r1_doctor.logscan import diagnose_log

# torch's out-of-memory line with neither a memory fraction (`allowed`) nor another
# process holding the GPU: the generic reading alone
ONLY_THIS_PROCESS = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a"
    " total capacity of 79.18 GiB of which 2.10 GiB is free. Including non-PyTorch memory,"
    " this process has 77.00 GiB memory in use. Of the allocated memory 75.00 GiB is"
    " allocated by PyTorch"
)


# --- GPU_OUT_OF_MEMORY over set_per_process_memory_fraction ---------------------------------


def _lead_id(log: str) -> str | None:
    lead = diagnose_log(log).lead
    return lead.signature.id if lead else None


@pytest.mark.parametrize(
    "log",
    [
        # torch 2.x (the H100 recording's wording)
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a"
        " total capacity of 79.18 GiB of which 78.66 GiB is free. Including non-PyTorch memory,"
        " this process has 518.00 MiB memory in use. 3.96 GiB allowed; Of the allocated memory"
        " 0 bytes is allocated by PyTorch",
        # torch 1.x's parenthesised figures
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.70 GiB total"
        " capacity; 1.20 GiB already allocated; 21.90 GiB free; 11.85 GiB allowed; 1.25 GiB"
        " reserved in total by PyTorch)",
        # a fraction so small that it prints in MiB, behind a rank prefix
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 1"
        " has a total capacity of 39.38 GiB of which 38.90 GiB is free. 512.00 MiB allowed; Of"
        " the allocated memory 20.00 MiB is allocated by PyTorch",
    ],
)
def test_oom_over_the_memory_fraction_names_the_fraction(log):
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "error")
    assert _lead_id(log) == "cuda-oom-over-memory-fraction"


@pytest.mark.parametrize(
    "log",
    [
        # no fraction set: torch prints no `allowed`
        ONLY_THIS_PROCESS,
        # `allowed` on another line than the out-of-memory one
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.\n"
        "quota: 4.00 GiB allowed; 3.00 GiB used",
    ],
)
def test_oom_without_a_fraction_is_the_generic_reading(log):
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "error")
    assert _lead_id(log) == "cuda-oom"


# --- GPU_BUSY_OTHER_PROCESSES: another process named in the out-of-memory line --------

BUSY = ("GPU_BUSY_OTHER_PROCESSES", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a rank of a second torchrun job on GPUs a first job fills (the 2x H100 recording)
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
        ONLY_THIS_PROCESS,
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
