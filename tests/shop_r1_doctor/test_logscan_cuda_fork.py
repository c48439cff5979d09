"""CUDA touched in a child forked after the parent initialised it: any forking code
(multiprocessing, DataLoader workers) reads as the user's fork, vLLM's own workers as
vLLM's. Learned from failures caused on one H100 (tests/fixtures/faults/gpu/); codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

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
