"""Decision rows for the GPU checks besides driver-vs-CUDA (that table is in
tests/shop_r1_doctor/checks/test_gpu_driver_tables.py): who holds a GPU, what CUDA_VISIBLE_DEVICES hides,
a container without the NVIDIA runtime, and what says a GPU is expected. Thresholds:
other processes must hold MORE than 10% of a GPU (8 GiB of 80 GiB is not enough)."""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.gpu_driver import (
    driver_vs_cuda_build,
    gpu_expected,
    gpu_processes,
    gpu_runtime_in_container,
    visible_devices,
)
from shop_r1_doctor.facts import Facts

GIB = 1024**3
H100 = "NVIDIA H100 80GB HBM3"


def _gpu(**kw) -> dict:
    return {"index": 0, "name": H100, "memory_total_bytes": 80 * GIB, **kw}


def _found(check, snap: dict) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity, f.title) for f in check(Facts(snap))]


# ----------------------------------------------------------------- who holds the GPU
# (case, gpu fields, expected [(code, title)], kill command or None)
PROCESS_ROWS = [
    (
        "nothing listed, 8 GiB used: at the 10% line",
        {"processes": [], "memory_used_bytes": 8 * GIB},
        [],
    ),
    (
        "nothing listed, just over 10% used",
        {"processes": [], "memory_used_bytes": 8 * GIB + GIB // 10},
        [
            (
                "GPU_BUSY_OTHER_PROCESSES",
                f"8.1 GiB of 80.0 GiB on {H100} (GPU 0) is in use by processes this machine "
                "cannot see",
            )
        ],
    ),
    # the probe could not list processes: unknown, not "none"
    ("processes unknown", {"processes": None, "memory_used_bytes": 70 * GIB}, []),
    ("used memory unknown", {"processes": [], "memory_used_bytes": None}, []),
    (
        "one process at exactly 10%",
        {"processes": [{"name": "python", "pid": 7, "used_bytes": 8 * GIB}]},
        [],
    ),
    (
        "two processes together over 10%",
        {
            "processes": [
                {"name": "python", "pid": 7, "used_bytes": 5 * GIB},
                {"name": "jupyter", "pid": 8, "used_bytes": 4 * GIB},
                {"name": "zombie", "pid": 9, "used_bytes": None},
            ]
        },
        [
            (
                "GPU_BUSY_OTHER_PROCESSES",
                f"other processes hold 9.0 GiB of 80.0 GiB on {H100} (GPU 0)",
            )
        ],
    ),
    (
        "processes but the GPU's size unknown",
        {
            "memory_total_bytes": None,
            "processes": [{"name": "python", "pid": 7, "used_bytes": 70 * GIB}],
        },
        [],
    ),
    (
        "a vLLM engine left over, whatever its size",
        {
            "processes": [
                {"name": "VLLM::EngineCore", "pid": 12, "used_bytes": GIB},
                {"name": "python", "pid": 7, "used_bytes": 60 * GIB},
                {"name": "vllm serve", "pid": 13, "used_bytes": GIB},
            ]
        },
        [
            (
                "VLLM_ORPHAN_WORKERS_HOLD_GPU",
                f"vLLM engine processes hold {H100} (GPU 0): VLLM::EngineCore (pid 12), "
                "vllm serve (pid 13)",
            )
        ],
    ),
]


PROCESS_ROWS += [
    (
        "a process reporting 0 bytes adds nothing to the 10%",
        {
            "processes": [
                {"name": "python", "pid": 7, "used_bytes": 8 * GIB},
                {"name": "idle", "pid": 8, "used_bytes": 0},
            ]
        },
        [],
    ),
    (
        "GPU size reported as 0",
        {"memory_total_bytes": 0, "processes": [{"name": "python", "pid": 7, "used_bytes": GIB}]},
        [],
    ),
]


@pytest.mark.parametrize(("case", "fields", "want"), PROCESS_ROWS, ids=[r[0] for r in PROCESS_ROWS])
def test_gpu_processes_row(case, fields, want):
    found = list(gpu_processes(Facts({"gpus": [_gpu(**fields)]})))
    assert [(f.code, f.title) for f in found] == want
    assert all(f.detail and f.fix for f in found)  # every finding explains and fixes


def test_index_unknown_is_a_question_mark():
    gpu = {"name": H100, "memory_total_bytes": 80 * GIB, "memory_used_bytes": 9 * GIB}
    found = list(gpu_processes(Facts({"gpus": [{**gpu, "processes": []}]})))
    assert [f.title.split(" on ")[1] for f in found] == [
        f"{H100} (GPU ?) is in use by processes this machine cannot see"
    ]
    held = [{"name": "python", "pid": 7, "used_bytes": 9 * GIB}]
    found = list(gpu_processes(Facts({"gpus": [{**gpu, "processes": held}]})))
    assert [f.title.split(" on ")[1] for f in found] == [f"{H100} (GPU ?)"]


def test_every_gpu_is_looked_at():
    idle = _gpu(processes=[])
    held = _gpu(index=1, processes=[{"name": "VLLM::Worker", "pid": 12}])
    found = list(gpu_processes(Facts({"gpus": [idle, held]})))
    assert [f.title for f in found] == [
        f"vLLM engine processes hold {H100} (GPU 1): VLLM::Worker (pid 12)"
    ]


def test_kill_command_names_the_right_pids():
    vllm = _gpu(processes=[{"name": "VLLM::Worker", "pid": 12}, {"name": "python", "pid": 7}])
    busy = _gpu(index=1, processes=[{"name": "a", "pid": 7, "used_bytes": 9 * GIB}, {"pid": 8}])
    found = list(gpu_processes(Facts({"gpus": [vllm, busy]})))
    assert [f.fix for f in found] == [
        "kill 12",
        "stop those processes (kill 7 8) or train on another GPU",
    ]
    assert found[1].detail == "a (pid 7), None (pid 8)"  # the processes, named


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


@pytest.mark.parametrize(("cvd", "hides"), CVD_ROWS)
def test_visible_devices_row(cvd, hides):
    found = list(visible_devices(Facts({"gpus": TWO_GPUS, "env": {"CUDA_VISIBLE_DEVICES": cvd}})))
    want = [f"CUDA_VISIBLE_DEVICES={cvd!r} hides all 2 GPU(s)"] if hides else []
    assert [f.title for f in found] == want
    assert all(f.detail and f.fix for f in found)


@pytest.mark.parametrize(
    "snap",
    [
        {"gpus": TWO_GPUS, "env": {}},  # not set
        {"gpus": [], "env": {"CUDA_VISIBLE_DEVICES": "2"}},  # no GPU to hide
        {"gpus": [{"name": H100}], "env": {"CUDA_VISIBLE_DEVICES": "2"}},  # no indices
        {"gpus": TWO_GPUS, "env": {"CUDA_VISIBLE_DEVICES": "2"}, "host": {"wsl": 2}},
    ],
    ids=["unset", "no gpus", "no indices", "wsl"],
)
def test_visible_devices_quiet(snap):
    assert list(visible_devices(Facts(snap))) == []


# ----------------------------------------------------------------- what expects a GPU
# (snapshot sections, the reason in words or None)
EXPECTED_ROWS = [
    ({}, None),
    ({"torch": {"version": "2.8.0+cu128"}}, "torch 2.8.0+cu128 is a CUDA 12.8 build"),
    ({"torch": {"version": "2.8.0+cpu"}}, None),
    (
        {"torch": {"version": "2.8.0+cu128"}, "env": {"NVIDIA_VISIBLE_DEVICES": "all"}},
        "torch 2.8.0+cu128 is a CUDA 12.8 build",
    ),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "NVIDIA_VISIBLE_DEVICES=all is set"),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": " VOID "}}, None),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": "none"}}, None),
    ({"env": {"NVIDIA_VISIBLE_DEVICES": ""}}, None),
    ({"env": {"CUDA_VISIBLE_DEVICES": "0"}}, "CUDA_VISIBLE_DEVICES=0 is set"),
    ({"env": {"CUDA_VISIBLE_DEVICES": " -1 "}}, None),
    ({"env": {"CUDA_VISIBLE_DEVICES": ""}}, None),
    ({"packages": {"vllm": {"version": "0.10.1"}}}, "vllm 0.10.1 is installed"),
    ({"packages": {"flash_attn": {"version": "2.8.3"}}}, "flash-attn 2.8.3 is installed"),
    ({"packages": {"nvidia-nccl-cu12": {}}}, "nvidia-nccl-cu12 is installed"),
    ({"packages": {"nvidia-ml-py": {"version": "13.0"}, "pynvml": {"version": "12"}}}, None),
    ({"packages": {"vllm": None}}, None),  # looked for, not installed
    ({"plan": {"use_vllm": True}}, "the plan uses vLLM"),
    ({"plan": {"use_vllm": False}}, None),
    ({"plan": {"attn_implementation": "flash_attention_2"}}, "the plan asks for flash_attention_2"),
    ({"plan": {"attn_implementation": "sdpa"}}, None),
    ({"plan": {"bf16": True}}, "the plan trains in bf16/fp16"),
    ({"plan": {"fp16": True}}, "the plan trains in bf16/fp16"),
    ({"plan": {"bf16": False, "fp16": False}}, None),
]


@pytest.mark.parametrize(("snap", "why"), EXPECTED_ROWS, ids=[str(r[1]) for r in EXPECTED_ROWS])
def test_gpu_expected_row(snap, why):
    assert gpu_expected(Facts(snap)) == why


# ----------------------------------------------------------------- container without the runtime
DOCKER = {"os": "linux", "container": "docker"}
RUNTIME_ROWS = [
    ("bare metal", {"host": {"os": "linux"}, "gpus": []}, []),
    ("GPUs not probed", {"host": DOCKER}, []),
    ("a GPU is visible", {"host": DOCKER, "gpus": [_gpu()]}, []),
    ("the driver is visible", {"host": DOCKER, "gpus": [], "driver": {"version": "580.65.06"}}, []),
    (
        "nothing asks for a GPU",
        {"host": DOCKER, "gpus": [], "driver": {}},
        [
            (
                "DOCKER_GPU_RUNTIME_MISSING",
                "info",
                "no NVIDIA GPU in this docker container: fine for CPU work",
            )
        ],
    ),
    (
        "a CUDA torch in it",
        {"host": DOCKER, "gpus": [], "torch": {"version": "2.8.0+cu128"}},
        [
            (
                "DOCKER_GPU_RUNTIME_MISSING",
                "warning",
                "no NVIDIA GPU or driver visible inside this docker container, but torch "
                "2.8.0+cu128 is a CUDA 12.8 build",
            )
        ],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), RUNTIME_ROWS, ids=[r[0] for r in RUNTIME_ROWS])
def test_gpu_runtime_in_container_row(case, snap, want):
    assert _found(gpu_runtime_in_container, snap) == want
    assert all(f.detail and f.fix for f in gpu_runtime_in_container(Facts(snap)))


# ----------------------------------------------------------------- driver vs CUDA, more rows
# (case, snapshot, [(code, severity, title)], the minimum driver the detail names, written
# as NVIDIA writes it: 576.02, not packaging's normalised 576.2)
DRIVER_ROWS = [
    # Windows needs 576.02 for CUDA 12.9 (Linux: 575.51.03): the driver's CUDA by OS
    (
        "windows 575.60 and a cu129 torch",
        {
            "host": {"os": "windows"},
            "driver": {"version": "575.60"},
            "torch": {"version": "2.8.0+cu129"},
        },
        [
            (
                "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                "error",
                "torch 2.8.0+cu129 needs CUDA 12.9; driver 575.60 supports CUDA 12.8",
            )
        ],
        "CUDA 12.9 needs driver >= 576.02 (",
    ),
    (
        "linux 575.60 and a cu129 torch",
        {
            "host": {"os": "linux"},
            "driver": {"version": "575.60"},
            "torch": {"version": "2.8.0+cu129"},
        },
        [],
        None,
    ),
    # OS unknown: read as Linux, so minor-version compatibility applies
    (
        "no OS, one minor newer",
        {
            "driver": {"version": "570.86.10", "cuda_version": "12.8"},
            "torch": {"version": "2.8.0+cu129"},
        },
        [
            (
                "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                "warning",
                "torch 2.8.0+cu129 needs CUDA 12.9; driver 570.86.10 supports CUDA 12.8",
            )
        ],
        "CUDA 12.9 needs driver >= 575.51.03 (",
    ),
    # NVML names the CUDA without the driver's version
    (
        "driver version unknown",
        {
            "host": {"os": "linux"},
            "driver": {"cuda_version": "12.4"},
            "torch": {"version": "2.8.0+cu128"},
        },
        [
            (
                "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                "warning",
                "torch 2.8.0+cu128 needs CUDA 12.8; the driver supports CUDA 12.4",
            )
        ],
        "CUDA 12.8 needs driver >= 570.26 (",
    ),
    # the torch build and the image's CUDA_VERSION are both checked
    (
        "container: torch and the image both newer",
        {
            "host": {"os": "linux", "container": "docker"},
            "driver": {"version": "570.86.10", "cuda_version": "12.8"},
            "torch": {"version": "2.8.0+cu129"},
            "env": {"CUDA_VERSION": "12.9.1"},
        },
        [
            (
                "CONTAINER_CUDA_GT_HOST_DRIVER",
                "warning",
                "torch 2.8.0+cu129 needs CUDA 12.9; driver 570.86.10 supports CUDA 12.8",
            ),
            (
                "CONTAINER_CUDA_GT_HOST_DRIVER",
                "warning",
                "the image's CUDA_VERSION needs CUDA 12.9; driver 570.86.10 supports CUDA 12.8",
            ),
        ],
        "CUDA 12.9 needs driver >= 575.51.03 (",
    ),
]


@pytest.mark.parametrize(
    ("case", "snap", "want", "needs"), DRIVER_ROWS, ids=[r[0] for r in DRIVER_ROWS]
)
def test_driver_vs_cuda_row(case, snap, want, needs):
    found = list(driver_vs_cuda_build(Facts(snap)))
    assert [(f.code, f.severity, f.title) for f in found] == want
    for f in found:
        assert needs in f.detail and f.fix


def test_no_windows_minimum_listed_says_none_rather_than_a_placeholder():
    # compat.yaml lists no Windows driver for CUDA 13.0: the detail must not print "?"
    snap = {
        "host": {"os": "windows"},
        "driver": {"version": "576.02"},
        "torch": {"version": "2.9.0+cu130"},
    }
    (f,) = driver_vs_cuda_build(Facts(snap))
    assert f.title == "torch 2.9.0+cu130 needs CUDA 13.0; driver 576.02 supports CUDA 12.9"
    assert "needs driver >=" not in f.detail and "?" not in f.detail
