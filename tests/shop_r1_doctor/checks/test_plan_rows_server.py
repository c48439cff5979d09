"""Decision rows for GRPO with a separate `trl vllm-serve` (TRL_SERVER_MODE_SAME_GPU) and
for vLLM engines seen on GPUs (VLLM_ORPHAN_WORKERS_HOLD_GPU), from the generated 2-GPU
launch script run on the 2x H200 (2026-11-23): the server on GPU 0, the trainer started
with CUDA_VISIBLE_DEVICES=1. Its own preflight refused to train ("would share NVIDIA H200
(1 GPU visible)") and told it to kill its own server's engine (pid 1642); see
tests/fixtures/device_logs/h200x2_launch_grpo_server_refused.log."""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.gpu_driver import gpu_processes
from shop_r1_doctor.checks.plan import server_same_gpu
from shop_r1_doctor.facts import Facts

GIB = 1024**3
H200 = "NVIDIA H200"
ENGINE = {"pid": 1642, "name": "VLLM::EngineCore", "used_bytes": 127 * GIB}


def _gpu(index: int, *processes: dict) -> dict:
    return {
        "index": index,
        "name": H200,
        "compute_capability": "9.0",
        "memory_total_bytes": 141 * GIB,
        "memory_used_bytes": sum(p["used_bytes"] for p in processes),
        "processes": list(processes),
    }


def _facts(gpus: list[dict], cvd: str | None, procs: int = 1, mode: str = "server") -> Facts:
    env = {} if cvd is None else {"CUDA_VISIBLE_DEVICES": cvd}
    plan = {"task": "grpo", "use_vllm": True, "vllm_mode": mode, "num_processes": procs}
    return Facts({"gpus": gpus, "env": env, "plan": plan})


def _codes(check, facts: Facts) -> list[str]:
    return [f.code for f in check(facts)]


# (case, gpus, CUDA_VISIBLE_DEVICES, training processes, TRL_SERVER_MODE_SAME_GPU expected)
SERVER_ROWS = [
    ("launch script's trainer: GPU 1 visible, server on hidden GPU 0",
     [_gpu(0, ENGINE), _gpu(1)], "1", 1, False),
    ("trainer on GPU 1 before the server started: GPU 0 hidden and free",
     [_gpu(0), _gpu(1)], "1", 1, False),
    ("one GPU on the machine, nothing hidden", [_gpu(0)], None, 1, True),
    ("two GPUs, both visible, one trainer: one spare", [_gpu(0), _gpu(1)], None, 1, False),
    ("two GPUs, both visible, two trainers: none spare", [_gpu(0), _gpu(1)], None, 2, True),
    ("two GPUs, CUDA_VISIBLE_DEVICES=0,1, two trainers", [_gpu(0), _gpu(1)], "0,1", 2, True),
    ("server started on GPU 0, trainer sees both and takes GPU 0",
     [_gpu(0, ENGINE), _gpu(1)], None, 1, True),
    ("server started on GPU 1, trainer takes GPU 0", [_gpu(0), _gpu(1, ENGINE)], None, 1, False),
    ("server and trainer both pinned to GPU 1", [_gpu(0), _gpu(1, ENGINE)], "1", 1, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("gpus", "cvd", "procs", "expected"),
    [row[1:] for row in SERVER_ROWS],
    ids=[row[0] for row in SERVER_ROWS],
)
def test_server_mode_same_gpu_rows(gpus, cvd, procs, expected):
    found = list(server_same_gpu(_facts(gpus, cvd, procs)))
    assert [f.code for f in found] == (["TRL_SERVER_MODE_SAME_GPU"] if expected else [])
    assert all(f.severity == "error" and f.fix for f in found)


def test_an_engine_on_the_trainers_gpu_is_named_by_pid():
    (f,) = server_same_gpu(_facts([_gpu(0), _gpu(1, ENGINE)], "1"))
    assert "pid 1642" in f.title and "(GPU 1)" in f.title


def test_colocate_and_no_vllm_never_ask_for_a_second_gpu():
    assert _codes(server_same_gpu, _facts([_gpu(0)], None, mode="colocate")) == []
    facts = Facts({"gpus": [_gpu(0)], "plan": {"task": "grpo", "use_vllm": False}})
    assert _codes(server_same_gpu, facts) == []


# (case, gpus, CUDA_VISIBLE_DEVICES, expected codes)
ENGINE_ROWS = [
    ("the trainer's shell hides GPU 0, where its server's engine runs",
     [_gpu(0, ENGINE), _gpu(1)], "1", []),
    ("no CUDA_VISIBLE_DEVICES: an engine on GPU 0 is this run's business",
     [_gpu(0, ENGINE), _gpu(1)], None, ["VLLM_ORPHAN_WORKERS_HOLD_GPU"]),
    ("the engine is on the visible GPU", [_gpu(0), _gpu(1, ENGINE)], "1",
     ["VLLM_ORPHAN_WORKERS_HOLD_GPU"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("gpus", "cvd", "expected"),
    [row[1:] for row in ENGINE_ROWS],
    ids=[row[0] for row in ENGINE_ROWS],
)
def test_engines_count_only_on_gpus_this_run_can_see(gpus, cvd, expected):
    found = list(gpu_processes(_facts(gpus, cvd)))
    assert [f.code for f in found] == expected
    if expected:
        assert found[0].fix == "kill 1642"


def test_engine_on_the_trainers_gpu_finding_in_full():
    second = {"pid": 1700, "name": "VLLM::Worker", "used_bytes": GIB}
    gpu = {k: v for k, v in _gpu(0, ENGINE, second).items() if k != "index"}  # no index probed
    (f,) = server_same_gpu(_facts([gpu], None))
    assert (f.code, f.severity) == ("TRL_SERVER_MODE_SAME_GPU", "error")
    assert f.title == (
        "a vLLM engine (pid 1642, 1700) already runs on NVIDIA H200 (GPU ?), which the "
        "trainer would use"
    )
    assert f.detail == (
        "Weight sync builds an NCCL group across server and trainer: 'Duplicate GPU detected : "
        "rank 1 and rank 0 both on CUDA device' -> NCCL error: invalid usage."
    )
    assert f.fix == (
        "start `trl vllm-serve` with CUDA_VISIBLE_DEVICES on another GPU than the trainer's "
        "(a launch script does: shop-r1 launch grpo --gpus 2)"
    )
