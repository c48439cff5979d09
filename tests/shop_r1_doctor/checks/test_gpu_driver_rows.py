"""Decision rows for the GPU checks besides driver-vs-CUDA (that table is in
tests/shop_r1_doctor/checks/test_gpu_driver_tables.py): who holds a GPU, what CUDA_VISIBLE_DEVICES hides,
a container without the NVIDIA runtime, and what says a GPU is expected. Each row asserts
codes, severities and the facts the findings must name; the wording is in
tests/fixtures/golden/checks/gpu_driver.txt. Thresholds: other processes must hold MORE
than 10% of a GPU (8 GiB of 80 GiB is not enough)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from check_wording import assert_row, found

from shop_r1_doctor.checks.gpu_driver import (
    gpu_processes,
    gpu_runtime_in_container,
    visible_devices,
)

GIB = 1024**3
H100 = "NVIDIA H100 80GB HBM3"
GPU0 = f"{H100} (GPU 0)"


def _gpu(**kw) -> dict:
    return {"index": 0, "name": H100, "memory_total_bytes": 80 * GIB, **kw}


def _proc(pid: int, name: str = "python", used: int | None = None) -> dict:
    return {"name": name, "pid": pid, "used_bytes": used}


# ----------------------------------------------------------------- who holds the GPU
BUSY, ORPHANS = "GPU_BUSY_OTHER_PROCESSES", "VLLM_ORPHAN_WORKERS_HOLD_GPU"

# (case, gpu fields, expected [(code, severity, *facts)])
PROCESS_ROWS: list[tuple[Any, ...]] = [
    (
        "nothing listed, 8 GiB used: at the 10% line",
        {"processes": [], "memory_used_bytes": 8 * GIB},
        [],
    ),
    (
        "nothing listed, just over 10% used",
        {"processes": [], "memory_used_bytes": 8 * GIB + GIB // 10},
        [(BUSY, "warning", "8.1 GiB of 80.0 GiB", GPU0)],
    ),
    # the probe could not list processes: unknown, not "none"
    ("processes unknown", {"processes": None, "memory_used_bytes": 70 * GIB}, []),
    ("used memory unknown", {"processes": [], "memory_used_bytes": None}, []),
    ("one process at exactly 10%", {"processes": [_proc(7, used=8 * GIB)]}, []),
    (
        "two processes together over 10%",
        {
            "processes": [
                _proc(7, used=5 * GIB),
                _proc(8, "jupyter", 4 * GIB),
                _proc(9, "zombie"),
            ]
        },
        [
            (
                BUSY,
                "warning",
                "9.0 GiB of 80.0 GiB",
                GPU0,
                "python (pid 7), jupyter (pid 8), zombie (pid 9)",
                "kill 7 8 9",
            )
        ],
    ),
    (
        "processes but the GPU's size unknown",
        {"memory_total_bytes": None, "processes": [_proc(7, used=70 * GIB)]},
        [],
    ),
    (
        "a vLLM engine left over, whatever its size",
        {
            "processes": [
                _proc(12, "VLLM::EngineCore", GIB),
                _proc(7, used=60 * GIB),
                _proc(13, "vllm serve", GIB),
            ]
        },
        [
            (
                ORPHANS,
                "warning",
                GPU0,
                "VLLM::EngineCore (pid 12), vllm serve (pid 13)",
                "kill 12 13",
            )
        ],
    ),
    (
        "a process reporting 0 bytes adds nothing to the 10%",
        {"processes": [_proc(7, used=8 * GIB), _proc(8, "idle", 0)]},
        [],
    ),
    (
        "GPU size reported as 0",
        {"memory_total_bytes": 0, "processes": [_proc(7, used=GIB)]},
        [],
    ),
]


@pytest.mark.parametrize(("case", "fields", "want"), PROCESS_ROWS, ids=[r[0] for r in PROCESS_ROWS])
def test_gpu_processes_row(case, fields, want):
    assert_row(gpu_processes, {"gpus": [_gpu(**fields)]}, want)


NO_INDEX = {"name": H100, "memory_total_bytes": 80 * GIB, "memory_used_bytes": 9 * GIB}


def test_index_unknown_is_a_question_mark():
    unseen = {"gpus": [{**NO_INDEX, "processes": []}]}
    assert_row(gpu_processes, unseen, [(BUSY, "warning", f"{H100} (GPU ?)")])
    held = {"gpus": [{**NO_INDEX, "processes": [_proc(7, used=9 * GIB)]}]}
    assert_row(gpu_processes, held, [(BUSY, "warning", f"{H100} (GPU ?)")])


def test_every_gpu_is_looked_at():
    idle = _gpu(processes=[])
    held = _gpu(index=1, processes=[{"name": "VLLM::Worker", "pid": 12}])
    snap = {"gpus": [idle, held]}
    assert_row(
        gpu_processes, snap, [(ORPHANS, "warning", f"{H100} (GPU 1)", "VLLM::Worker (pid 12)")]
    )


KILL_SNAP = {
    "gpus": [
        _gpu(processes=[{"name": "VLLM::Worker", "pid": 12}, {"name": "python", "pid": 7}]),
        _gpu(index=1, processes=[{"name": "a", "pid": 7, "used_bytes": 9 * GIB}, {"pid": 8}]),
    ]
}


def test_kill_command_names_the_right_pids():
    assert_row(
        gpu_processes,
        KILL_SNAP,
        [(ORPHANS, "warning"), (BUSY, "warning", "a (pid 7), None (pid 8)")],
    )
    # the vLLM engine's pid alone, not the trainer's beside it; a pid-less process as None
    kills = [re.findall(r"kill ([\d ]+)", f.fix) for f in found(gpu_processes, KILL_SNAP)]
    assert kills == [["12"], ["7 8"]]


# ----------------------------------------------------------------- CUDA_VISIBLE_DEVICES
TWO_GPUS = [_gpu(), _gpu(index=1)]

# (CUDA_VISIBLE_DEVICES, hides every GPU?)
CVD_ROWS = [
    ("0", False),
    ("1,5", False),  # one of them exists
    ("2,3", True),
    ("-1", True),
    ("", True),
    (" , ", True),
    ("GPU-8f3a", False),  # UUIDs: cannot tell, keep quiet
    ("0,GPU-8f3a", False),
    ("7,GPU-8f3a", False),
]


def _cvd_snap(cvd: str) -> dict:
    return {"gpus": TWO_GPUS, "env": {"CUDA_VISIBLE_DEVICES": cvd}}


@pytest.mark.parametrize(("cvd", "hides"), CVD_ROWS)
def test_visible_devices_row(cvd, hides):
    want = ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "warning", f"CUDA_VISIBLE_DEVICES={cvd!r}", "2 GPU")
    assert_row(visible_devices, _cvd_snap(cvd), [want] if hides else [])


QUIET_CVD = [
    ("unset", {"gpus": TWO_GPUS, "env": {}}),
    ("no gpus", {"gpus": [], "env": {"CUDA_VISIBLE_DEVICES": "2"}}),
    ("no indices", {"gpus": [{"name": H100}], "env": {"CUDA_VISIBLE_DEVICES": "2"}}),
    ("wsl", {"gpus": TWO_GPUS, "env": {"CUDA_VISIBLE_DEVICES": "2"}, "host": {"wsl": 2}}),
]


@pytest.mark.parametrize("snap", [s for _, s in QUIET_CVD], ids=[n for n, _ in QUIET_CVD])
def test_visible_devices_quiet(snap):
    assert_row(visible_devices, snap, [])


# ----------------------------------------------------------------- container without the runtime
DOCKER = {"os": "linux", "container": "docker"}
MISSING = "DOCKER_GPU_RUNTIME_MISSING"
RUNTIME_ROWS: list[tuple[Any, ...]] = [
    ("bare metal", {"host": {"os": "linux"}, "gpus": []}, []),
    ("GPUs not probed", {"host": DOCKER}, []),
    ("a GPU is visible", {"host": DOCKER, "gpus": [_gpu()]}, []),
    ("the driver is visible", {"host": DOCKER, "gpus": [], "driver": {"version": "580.65.06"}}, []),
    (
        "nothing asks for a GPU",
        {"host": DOCKER, "gpus": [], "driver": {}},
        [(MISSING, "info", "docker")],
    ),
    (
        "a CUDA torch in it",
        {"host": DOCKER, "gpus": [], "torch": {"version": "2.8.0+cu128"}},
        [(MISSING, "warning", "docker", "torch 2.8.0+cu128", "CUDA 12.8")],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), RUNTIME_ROWS, ids=[r[0] for r in RUNTIME_ROWS])
def test_gpu_runtime_in_container_row(case, snap, want):
    assert_row(gpu_runtime_in_container, snap, want)


# ----------------------------------------------------------------- what expects a GPU
# In a container that sees no GPU: what asks for one makes the finding a warning that
# names it; nothing asking leaves an info note. (snapshot sections, the facts named or None)
EXPECTED_ROWS: list[tuple[Any, ...]] = [
    ({}, None),
    ({"torch": {"version": "2.8.0+cu128"}}, ("torch 2.8.0+cu128", "CUDA 12.8")),
    ({"torch": {"version": "2.8.0+cpu"}}, None),
    (
        {"torch": {"version": "2.8.0+cu128"}, "env": {"NVIDIA_VISIBLE_DEVICES": "all"}},
        ("torch 2.8.0+cu128", "CUDA 12.8"),
    ),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, ("NVIDIA_VISIBLE_DEVICES=all",)),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": " VOID "}}, None),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": "none"}}, None),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": ""}}, None),
    ({"env": {"CUDA_VISIBLE_DEVICES": "0"}}, ("CUDA_VISIBLE_DEVICES=0",)),
    ({"env": {"CUDA_VISIBLE_DEVICES": " -1 "}}, None),
    ({"env": {"CUDA_VISIBLE_DEVICES": ""}}, None),
    ({"packages": {"vllm": {"version": "0.10.1"}}}, ("vllm 0.10.1",)),
    ({"packages": {"flash_attn": {"version": "2.8.3"}}}, ("flash-attn 2.8.3",)),
    ({"packages": {"nvidia-nccl-cu12": {}}}, ("nvidia-nccl-cu12",)),
    ({"packages": {"nvidia-ml-py": {"version": "13.0"}, "pynvml": {"version": "12"}}}, None),
    ({"packages": {"vllm": None}}, None),  # looked for, not installed
    ({"plan": {"use_vllm": True}}, ("vLLM",)),
    ({"plan": {"use_vllm": False}}, None),
    ({"plan": {"attn_implementation": "flash_attention_2"}}, ("flash_attention_2",)),
    ({"plan": {"attn_implementation": "sdpa"}}, None),
    ({"plan": {"bf16": True}}, ("bf16",)),
    ({"plan": {"fp16": True}}, ("fp16",)),
    ({"plan": {"bf16": False, "fp16": False}}, None),
]


def _expected_snap(sections: dict) -> dict:
    return {"host": DOCKER, "gpus": [], **sections}


@pytest.mark.parametrize(
    ("sections", "why"), EXPECTED_ROWS, ids=[" ".join(r[1] or ["none"]) for r in EXPECTED_ROWS]
)
def test_gpu_expected_row(sections, why):
    snap = _expected_snap(sections)
    assert_row(
        gpu_runtime_in_container, snap, [(MISSING, "warning", *why) if why else (MISSING, "info")]
    )
    # a version the snapshot lacks leaves no gap: "nvidia-nccl-cu12 is", not "...cu12  is"
    assert [f.title for f in found(gpu_runtime_in_container, snap) if "  " in f.title] == []


SNAPSHOTS = [
    *[(r[0], {"gpus": [_gpu(**r[1])]}) for r in PROCESS_ROWS],
    ("index unknown, unseen", {"gpus": [{**NO_INDEX, "processes": []}]}),
    ("index unknown, held", {"gpus": [{**NO_INDEX, "processes": [_proc(7, used=9 * GIB)]}]}),
    ("kill the right pids", KILL_SNAP),
    *[(f"CUDA_VISIBLE_DEVICES={r[0]!r}", _cvd_snap(r[0])) for r in CVD_ROWS],
    *[(r[0], r[1]) for r in RUNTIME_ROWS],
    *[
        (f"expects a GPU: {' '.join(r[1] or ['none'])}", _expected_snap(r[0]))
        for r in EXPECTED_ROWS
    ],
]
