"""Readings learned from GPU fault batch 8 (caused on one H100), on text shapes beyond the
recordings: CUDA touched in a child forked after the parent initialised it (any forking
code, vLLM's own workers apart), and an allocation over the process's own memory
fraction. Codes, severities and which reading leads; wording stays in the knowledge."""

from __future__ import annotations

import pytest
from logscan_readings import readings

from shop_r1_doctor.logscan import diagnose_log

REINIT = (
    "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with"
    " multiprocessing, you must use the 'spawn' start method"
)

# --- CUDA_INIT_BEFORE_FORK: the user's fork, not vLLM's -------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # a multiprocessing Process of the fork context (batch 8's first recording's shape)
        "Process ForkProcess-1:\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n'
        f"{REINIT}",
        # DataLoader workers re-raising in the main process
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.\n"
        "Original Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py",'
        " line 349, in _worker_loop\n"
        f"{REINIT}",
        # a multiprocessing Pool, torchrun's rank prefix
        f"[rank0]: multiprocessing.pool.RemoteTraceback:\n[rank0]: {REINIT}",
        # the title line alone
        REINIT,
    ],
)
def test_cuda_in_a_forked_child_is_the_users_fork(log):
    found = readings(log)
    assert found[0] == ("CUDA_INIT_BEFORE_FORK", "error")
    assert "VLLM_FORKED_CUDA_REINIT" not in [c for c, _ in found]


@pytest.mark.parametrize(
    "log",
    [
        f"ERROR 01-19 03:55:24 multiproc_worker_utils.py:233] Exception in worker"
        f" VllmWorkerProcess while processing method init_device: {REINIT}",
        f"[BUG] vllm_worker: {REINIT}",
        f"export VLLM_WORKER_MULTIPROC_METHOD=fork\n{REINIT}",
        '  File "/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 166, in'
        f" init_device\n    torch.cuda.set_device(self.device)\n{REINIT}",
    ],
)
def test_cuda_in_vllms_forked_workers_stays_vllms(log):
    found = [c for c, _ in readings(log)]
    assert found[0] == "VLLM_FORKED_CUDA_REINIT"
    assert "CUDA_INIT_BEFORE_FORK" not in found


def test_other_cuda_init_failures_are_not_a_fork():
    for log in (
        "RuntimeError: No CUDA GPUs are available",
        "RuntimeError: CUDA error: initialization error",
        "RuntimeError: Caught RuntimeError in DataLoader worker process 0.",
    ):
        assert "CUDA_INIT_BEFORE_FORK" not in [c for c, _ in readings(log)]


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
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a"
        " total capacity of 79.18 GiB of which 2.10 GiB is free. Including non-PyTorch memory,"
        " this process has 77.00 GiB memory in use. Of the allocated memory 75.00 GiB is"
        " allocated by PyTorch",
        # `allowed` on another line than the out-of-memory one
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB.\n"
        "quota: 4.00 GiB allowed; 3.00 GiB used",
    ],
)
def test_oom_without_a_fraction_is_the_generic_reading(log):
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "error")
    assert _lead_id(log) == "cuda-oom"
