"""Decision rows for the NCCL checks (shop_r1_doctor/checks/nccl.py): each row's codes,
severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/nccl.txt.

Worked out by hand:
- processes in play = max(plan num_processes, plan vllm_tensor_parallel_size), 1 when
  unset; with no plan at all, the GPUs left visible by CUDA_VISIBLE_DEVICES count instead;
- /dev/shm in a container needs >= 1 GiB for several GPUs (1023 MiB fires);
- InfiniBand needs a memlock limit of >= 1 GiB (or unlimited, -1) and /dev/infiniband;
- NCCL before 2.22.3 and a vLLM server need NCCL_CUMEM_ENABLE=0 on the trainer; torch's
  bundled NCCL from knowledge/compat.yaml when the torch probe did not say (2.5-2.6: 2.21.5,
  2.7: 2.26.2, 2.10+cu13: 2.28.9);
- knowledge/gpus.yaml marks GeForce RTX 40/50 `p2p: false`; H100/H200 are not marked."""

from __future__ import annotations

from typing import Any

import pytest
from check_wording import assert_row
from machines import machine_snapshot

from shop_r1_doctor.checks.nccl import (
    consumer_p2p,
    cumem_weight_sync,
    docker_shm,
    infiniband,
    nccl_dists,
    nccl_windows,
    wsl_multi_gpu,
)

GIB = 1024**3
H200 = machine_snapshot("h200x2")  # 2x H200 in docker, torch 2.11.0+cu130, NCCL 2.28.9
H200_GPUS = H200["gpus"]
RTX4090 = machine_snapshot("ada4090")["gpus"][0]
RTX4090x3 = [{**RTX4090, "index": i} for i in range(3)]
RTX5090 = {"index": 1, "name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}


# ----------------------------------------------------------------- NCCL libraries
TORCH_REQ = H200["packages"]["torch"]["requires"]  # ... 'nvidia-nccl-cu13==2.28.9' ...


def _dists(env: dict | None = None, torch_req: list | None = None, **nccl: Any) -> dict:
    """The H200 box with its NCCL wheels replaced by `nccl` (name -> version or a record)."""
    pkgs = {k: v for k, v in H200["packages"].items() if not k.startswith("nvidia-nccl")}
    pkgs["torch"] = {**pkgs["torch"], "requires": TORCH_REQ if torch_req is None else torch_req}
    for name, value in nccl.items():
        pkgs[name.replace("_", "-")] = {"version": value} if isinstance(value, str) else value
    return {**H200, "packages": pkgs, "env": {**H200["env"], **(env or {})}}


def _pin(installed: str, req: str = "nvidia-nccl-cu13==2.28.9") -> tuple:
    return (
        "NCCL_LIB_SYMBOL_MISMATCH",
        "error",
        f"torch 2.11.0+cu130 pins {req}",
        f"nvidia-nccl-cu13 {installed}",
        f'/opt/torch/.venv/bin/python3 -m pip install "{req}"',
    )


def _ld(where: str) -> tuple:
    return ("NCCL_LD_LIBRARY_PATH_OVERRIDE", "warning", f"puts {where} ahead", f"remove {where}")


def _two(cu12: str, cu13: str) -> tuple:
    return (
        "NCCL_LIB_SYMBOL_MISMATCH",
        "error",
        "2 NCCL wheels",
        f"nvidia-nccl-cu12 {cu12}, nvidia-nccl-cu13 {cu13}",
        "pip uninstall -y nvidia-nccl-cu12 nvidia-nccl-cu13",
        "--force-reinstall torch",
    )


TWO_WHEELS = _two("2.27.3", "2.28.9")
DIST_ROWS = [
    ("the H200 box as recorded", H200, []),
    ("torch's pin, installed", _dists(nvidia_nccl_cu13="2.28.9"), []),
    ("an older NCCL than torch's pin", _dists(nvidia_nccl_cu13="2.27.3"), [_pin("2.27.3")]),
    ("a newer one", _dists(nvidia_nccl_cu13="2.29.7"), [_pin("2.29.7")]),
    (
        "the pin spelled with underscores",
        _dists(torch_req=["nvidia_nccl_cu13==2.28.9"], nvidia_nccl_cu13="2.27.3"),
        [_pin("2.27.3", "nvidia_nccl_cu13==2.28.9")],
    ),
    (
        "an unparseable requirement is skipped, the next one read",
        _dists(
            torch_req=["nvidia-nccl-cu13 ==", "nvidia-nccl-cu13==2.28.9"], nvidia_nccl_cu13="2.27.3"
        ),
        [_pin("2.27.3")],
    ),
    # torch pins the cu13 wheel; a lone cu12 wheel is not what it loads
    ("a pin for a wheel not installed", _dists(nvidia_nccl_cu12="2.27.3"), []),
    (
        "a range pin that holds",
        _dists(torch_req=["nvidia-nccl-cu13>=2.28"], nvidia_nccl_cu13="2.28.9"),
        [],
    ),
    (
        "a requirement on something else",
        _dists(torch_req=["triton==3.6.0"], nvidia_nccl_cu13="2.1"),
        [],
    ),
    ("installed version unparseable", _dists(nvidia_nccl_cu13="two"), []),
    ("installed version missing", _dists(nvidia_nccl_cu13={"requires": []}), []),
    ("two wheels", _dists(nvidia_nccl_cu12="2.27.3", nvidia_nccl_cu13="2.28.9"), [TWO_WHEELS]),
    # looked for and absent (null), or a record with nothing in it: not an installed wheel
    (
        "a second one absent",
        _dists(nvidia_nccl_cu12=None, nvidia_nccl_cu13="2.27.3"),
        [_pin("2.27.3")],
    ),
    (
        "a second one empty",
        _dists(nvidia_nccl_cu12={}, nvidia_nccl_cu13="2.27.3"),
        [_pin("2.27.3")],
    ),
    (
        "two wheels and neither pinned version: one finding, not three",
        _dists(nvidia_nccl_cu12="2.27.3", nvidia_nccl_cu13="2.27.3"),
        [_two("2.27.3", "2.27.3")],
    ),
    # LD_LIBRARY_PATH: the image's /usr/local/nvidia/lib64 holds no NCCL
    (
        "a system NCCL ahead",
        _dists(env={"LD_LIBRARY_PATH": "/opt/nccl/lib:/usr/local/nvidia/lib64"}),
        [_ld("/opt/nccl/lib")],
    ),
    (
        "the first NCCL directory is named",
        _dists(env={"LD_LIBRARY_PATH": "/usr/lib:/opt/NCCL-2.18/lib:/opt/nccl/lib"}),
        [_ld("/opt/NCCL-2.18/lib")],
    ),
    (
        "a pin mismatch and a system NCCL",
        _dists(env={"LD_LIBRARY_PATH": "/opt/nccl/lib"}, nvidia_nccl_cu13="2.27.3"),
        [_pin("2.27.3"), _ld("/opt/nccl/lib")],
    ),
    # two wheels do not hide the LD_LIBRARY_PATH problem: both break the same load
    (
        "two wheels and a system NCCL",
        _dists(
            env={"LD_LIBRARY_PATH": "/opt/nccl/lib"},
            nvidia_nccl_cu12="2.27.3",
            nvidia_nccl_cu13="2.28.9",
        ),
        [TWO_WHEELS, _ld("/opt/nccl/lib")],
    ),
    ("LD_LIBRARY_PATH unknown", {**_dists(), "env": {}}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), DIST_ROWS, ids=[r[0] for r in DIST_ROWS])
def test_nccl_dists_row(case, snap, want):
    assert_row(nccl_dists, snap, want)


# ----------------------------------------------------------------- how many processes: Windows
WIN = {"os": "windows"}

WINDOWS_ROWS = [
    ("plan: 2 processes", {"host": WIN, "plan": {"num_processes": 2}}, "error"),
    (
        "plan: vLLM tensor parallel 2",
        {"host": WIN, "plan": {"vllm_tensor_parallel_size": 2}},
        "error",
    ),
    (
        "plan: 1 process, 2 GPUs",
        {"host": WIN, "gpus": H200_GPUS, "plan": {"num_processes": 1}},
        None,
    ),
    # a plan that does not say: one process, whatever the GPUs
    (
        "plan without a count, 2 GPUs",
        {"host": WIN, "gpus": H200_GPUS, "plan": {"use_vllm": False}},
        None,
    ),
    ("plan: num_processes 0", {"host": WIN, "gpus": H200_GPUS, "plan": {"num_processes": 0}}, None),
    (
        "plan: num_processes true",
        {"host": WIN, "gpus": H200_GPUS, "plan": {"num_processes": True}},
        None,
    ),
    ("no plan, 2 GPUs", {"host": WIN, "gpus": H200_GPUS}, "warning"),
    (
        "no plan, 1 GPU visible",
        {"host": WIN, "gpus": H200_GPUS, "env": {"CUDA_VISIBLE_DEVICES": "1"}},
        None,
    ),
    ("no plan, 1 GPU", {"host": WIN, "gpus": H200_GPUS[:1]}, None),
    ("Linux, 2 processes", {"host": {"os": "linux"}, "plan": {"num_processes": 2}}, None),
]


@pytest.mark.parametrize(
    ("case", "snap", "severity"), WINDOWS_ROWS, ids=[r[0] for r in WINDOWS_ROWS]
)
def test_nccl_windows_row(case, snap, severity):
    want = [("NCCL_MISSING_ON_WINDOWS", severity, "Windows", "num_processes: 1")]
    assert_row(nccl_windows, snap, want if severity else [])


# ----------------------------------------------------------------- WSL
WSL_ROWS = [
    (
        "2 processes",
        {"host": {"wsl": 2}, "plan": {"num_processes": 2}},
        "2 processes with NCCL inside WSL2",
    ),
    (
        "the larger of processes and tensor parallel",
        {"host": {"wsl": 2}, "plan": {"num_processes": 3, "vllm_tensor_parallel_size": 2}},
        "3 processes with NCCL inside WSL2",
    ),
    (
        "tensor parallel larger",
        {"host": {"wsl": 2}, "plan": {"num_processes": 2, "vllm_tensor_parallel_size": 4}},
        "4 processes with NCCL inside WSL2",
    ),
    (
        "WSL1",
        {"host": {"wsl": 1}, "plan": {"num_processes": 2}},
        "2 processes with NCCL inside WSL1",
    ),
    ("1 process", {"host": {"wsl": 2}, "plan": {"num_processes": 1}}, None),
    ("no plan, 2 GPUs", {"host": {"wsl": 2}, "gpus": H200_GPUS}, None),
    ("not WSL", {"host": {"wsl": None}, "plan": {"num_processes": 2}}, None),
]


@pytest.mark.parametrize(("case", "snap", "title"), WSL_ROWS, ids=[r[0] for r in WSL_ROWS])
def test_wsl_multi_gpu_row(case, snap, title):
    assert_row(wsl_multi_gpu, snap, [("WSL_MULTI_GPU_NCCL", "warning", title)] if title else [])


# ----------------------------------------------------------------- /dev/shm in a container
def _shm(shm: Any, container: Any = "docker", **snap: Any) -> dict:
    return {**H200, "host": {**H200["host"], "shm_bytes": shm, "container": container}, **snap}


def _shm_finding(mib: int, container: str = "docker", severity: str = "info", *facts: str) -> tuple:
    return (
        "NCCL_DOCKER_SHM_TOO_SMALL",
        severity,
        f"/dev/shm is {mib} MiB in this {container}",
        *facts,
    )


def _nccl(version: str | None, env: dict | None = None, **snap: Any) -> dict:
    """The H200 box in docker with a 64 MiB /dev/shm, its torch probe saying NCCL `version`."""
    torch = {**H200["torch"], "nccl": version}
    return _shm(64 * 2**20, torch=torch, env={**H200["env"], **(env or {})}, **snap)


VLLM_PLAN = {"use_vllm": True, "num_processes": 2}


def _vllm(version: str) -> dict:
    return {**H200["packages"], "vllm": {"version": version}}


SHM_ROWS = [
    # the box's NCCL 2.28.9 with cuMem on: measured to pass under a 1 MiB /dev/shm
    (
        "docker's 64 MiB, 2 GPUs",
        _shm(64 * 2**20),
        [_shm_finding(64, "docker", "info", "NCCL 2.28.9")],
    ),
    ("exactly 1 GiB", _shm(GIB), []),
    ("one byte under 1 GiB", _shm(GIB - 1), [_shm_finding(1023)]),
    ("podman", _shm(64 * 2**20, "podman"), [_shm_finding(64, "podman")]),
    ("not in a container", _shm(64 * 2**20, None), []),
    ("shm unknown", _shm(None), []),
    ("plan: 1 process on 2 GPUs", _shm(64 * 2**20, plan={"num_processes": 1}), []),
    ("plan: 2 processes", _shm(64 * 2**20, plan={"num_processes": 2}), [_shm_finding(64)]),
    ("no plan, 1 GPU", _shm(64 * 2**20, gpus=H200_GPUS[:1]), []),
    # NCCL's version and settings (knowledge/compat.yaml nccl_shm)
    (
        "NCCL unknown",
        _shm(
            64 * 2**20,
            torch={},
            packages={k: v for k, v in H200["packages"].items() if k != "torch"},
        ),
        None,
    ),
    (
        "NCCL 2.18.6: cuMem off by default",
        _nccl("2.18.6"),
        [_shm_finding(64, "docker", "error", "NCCL 2.18.6", "2.19.1")],
    ),
    (
        "NCCL 2.19.1, P2P on",
        _nccl("2.19.1"),
        [_shm_finding(64, "docker", "warning", "NCCL 2.19.1", "2.24.3")],
    ),
    (
        "NCCL 2.21.5, P2P off",
        _nccl("2.21.5", {"NCCL_P2P_DISABLE": "1"}),
        [_shm_finding(64, "docker", "error", "NCCL 2.21.5", "P2P is off")],
    ),
    (
        "NCCL 2.21.5, P2P_DISABLE=0",
        _nccl("2.21.5", {"NCCL_P2P_DISABLE": "0"}),
        [_shm_finding(64, "docker", "warning")],
    ),
    ("NCCL 2.24.3", _nccl("2.24.3"), [_shm_finding(64, "docker", "info", "NCCL 2.24.3")]),
    (
        "NCCL 2.28.9, P2P off (measured pass)",
        _nccl("2.28.9", {"NCCL_P2P_DISABLE": "1"}),
        [_shm_finding(64)],
    ),
    (
        "NCCL_CUMEM_ENABLE=0 (measured fail)",
        _nccl("2.28.9", {"NCCL_CUMEM_ENABLE": "0"}),
        [_shm_finding(64, "docker", "error", "NCCL_CUMEM_ENABLE=0", "NCCL 2.28.9")],
    ),
    ("NCCL_CUMEM_ENABLE=1", _nccl("2.28.9", {"NCCL_CUMEM_ENABLE": "1"}), [_shm_finding(64)]),
    (
        "NCCL_CUMEM_HOST_ENABLE=0, P2P off",
        _nccl("2.28.9", {"NCCL_CUMEM_HOST_ENABLE": "0", "NCCL_P2P_DISABLE": "1"}),
        [_shm_finding(64, "docker", "error", "NCCL_CUMEM_HOST_ENABLE=0", "P2P is off")],
    ),
    (
        "NCCL_CUMEM_HOST_ENABLE=0, P2P on",
        _nccl("2.28.9", {"NCCL_CUMEM_HOST_ENABLE": "0"}),
        [_shm_finding(64, "docker", "warning", "NCCL_CUMEM_HOST_ENABLE=0")],
    ),
    (
        "driver CUDA 12.5",
        _nccl("2.28.9", driver={**H200["driver"], "cuda_version": "12.5"}),
        [_shm_finding(64, "docker", "warning", "CUDA 12.5")],
    ),
    (
        "driver CUDA 12.6",
        _nccl("2.28.9", driver={**H200["driver"], "cuda_version": "12.6"}),
        [_shm_finding(64)],
    ),
    (
        "vLLM 0.10.1.1 planned: sets cuMem off",
        _nccl("2.28.9", plan=VLLM_PLAN, packages=_vllm("0.10.1.1")),
        [_shm_finding(64, "docker", "error", "vLLM 0.10.1.1", "NCCL_CUMEM_ENABLE=0")],
    ),
    (
        "vLLM 0.10.1.1 installed, not planned",
        _nccl("2.28.9", plan={"num_processes": 2}, packages=_vllm("0.10.1.1")),
        [_shm_finding(64)],
    ),
    (
        "vLLM 0.10.2 planned",
        _nccl("2.28.9", plan=VLLM_PLAN, packages=_vllm("0.10.2")),
        [_shm_finding(64)],
    ),
    (
        "vLLM 0.10.1.1 planned, NCCL_CUMEM_ENABLE=1",
        _nccl("2.28.9", {"NCCL_CUMEM_ENABLE": "1"}, plan=VLLM_PLAN, packages=_vllm("0.10.1.1")),
        [_shm_finding(64)],
    ),
]
# unknown NCCL: today's error, whatever the settings
SHM_ROWS = [
    (c, s, w if w is not None else [_shm_finding(64, "docker", "error", "NCCL version unknown")])
    for c, s, w in SHM_ROWS
]


@pytest.mark.parametrize(("case", "snap", "want"), SHM_ROWS, ids=[r[0] for r in SHM_ROWS])
def test_docker_shm_row(case, snap, want):
    assert_row(docker_shm, snap, want)


# ----------------------------------------------------------------- GeForce P2P
def _p2p(title: str) -> list[tuple]:
    return [("NCCL_P2P_HANG_CONSUMER_GPUS", "warning", f"{title} with NCCL P2P enabled")]


P2P_ROWS = [
    (
        "2x RTX 4090, env probed",
        {"gpus": RTX4090x3[:2], "env": {}},
        _p2p("2x NVIDIA GeForce RTX 4090"),
    ),
    (
        "a 4090 and a 5090",
        {"gpus": [RTX4090, RTX5090], "env": {}},
        _p2p("NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 5090"),
    ),
    ("NCCL_P2P_DISABLE=1", {"gpus": RTX4090x3[:2], "env": {"NCCL_P2P_DISABLE": "1"}}, []),
    # 0 keeps P2P on: NCCL reads the variable as a number
    (
        "NCCL_P2P_DISABLE=0",
        {"gpus": RTX4090x3[:2], "env": {"NCCL_P2P_DISABLE": "0"}},
        _p2p("2x NVIDIA GeForce RTX 4090"),
    ),
    ("environment not probed", {"gpus": RTX4090x3[:2]}, []),
    # a pasted dump lists some variables only: the others are unknown
    (
        "a dump that does not list it",
        {
            "gpus": RTX4090x3[:2],
            "env": {"CUDA_HOME": "/usr/local/cuda"},
            "source": {"kind": "dump"},
        },
        [],
    ),
    ("one 4090", {"gpus": RTX4090x3[:1], "env": {}}, []),
    ("2x H200", {"gpus": H200_GPUS, "env": {}}, []),
    ("a 4090 and an H200", {"gpus": [RTX4090, {**H200_GPUS[1]}], "env": {}}, []),
    (
        "3 cards, 2 visible",
        {"gpus": RTX4090x3, "env": {"CUDA_VISIBLE_DEVICES": "0,2"}},
        _p2p("2x NVIDIA GeForce RTX 4090"),
    ),
    ("3 cards, 1 visible", {"gpus": RTX4090x3, "env": {"CUDA_VISIBLE_DEVICES": "2"}}, []),
    ("plan: 1 process", {"gpus": RTX4090x3[:2], "env": {}, "plan": {"num_processes": 1}}, []),
    (
        "plan: 2 processes",
        {"gpus": RTX4090x3[:2], "env": {}, "plan": {"num_processes": 2}},
        _p2p("2x NVIDIA GeForce RTX 4090"),
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), P2P_ROWS, ids=[r[0] for r in P2P_ROWS])
def test_consumer_p2p_row(case, snap, want):
    assert_row(consumer_p2p, snap, want)


# ----------------------------------------------------------------- InfiniBand
def _ib(ib: Any, env: dict | None = None, **snap: Any) -> dict:
    host = {**H200["host"], "infiniband": ib}
    return {**H200, "host": host, "env": {**H200["env"], **(env or {})}, **snap}


def _ib_finding(why: str) -> list[tuple]:
    return [("NCCL_IB_UNUSABLE", "warning", f"({why})")]


HCA = {"sys_devices": ["mlx5_0", "mlx5_1"], "dev_present": True, "memlock_bytes": -1}
NO_DEV = "no /dev/infiniband in this container"
IB_ROWS = [
    ("usable: device and unlimited memlock", _ib(HCA), []),
    ("no /dev/infiniband", _ib({**HCA, "dev_present": False}), _ib_finding(NO_DEV)),
    (
        "docker's 64 KiB memlock",
        _ib({**HCA, "memlock_bytes": 65536}),
        _ib_finding("memlock limited to 65536 bytes"),
    ),
    ("memlock 0", _ib({**HCA, "memlock_bytes": 0}), _ib_finding("memlock limited to 0 bytes")),
    ("memlock exactly 1 GiB", _ib({**HCA, "memlock_bytes": GIB}), []),
    (
        "memlock one byte under 1 GiB",
        _ib({**HCA, "memlock_bytes": GIB - 1}),
        _ib_finding(f"memlock limited to {GIB - 1} bytes"),
    ),
    ("memlock unknown", _ib({**HCA, "memlock_bytes": None}), []),
    ("device presence unknown", _ib({**HCA, "dev_present": None}), []),
    (
        "both: the device is named",
        _ib({**HCA, "dev_present": False, "memlock_bytes": 65536}),
        _ib_finding(NO_DEV),
    ),
    ("no HCA listed", _ib({**HCA, "sys_devices": [], "dev_present": False}), []),
    ("no infiniband class", _ib(None), []),
    ("NCCL_IB_DISABLE=1", _ib({**HCA, "dev_present": False}, {"NCCL_IB_DISABLE": "1"}), []),
    (
        "NCCL_IB_DISABLE=0",
        _ib({**HCA, "dev_present": False}, {"NCCL_IB_DISABLE": "0"}),
        _ib_finding(NO_DEV),
    ),
    ("one GPU in play", _ib({**HCA, "dev_present": False}, plan={"num_processes": 1}), []),
]


@pytest.mark.parametrize(("case", "snap", "want"), IB_ROWS, ids=[r[0] for r in IB_ROWS])
def test_infiniband_row(case, snap, want):
    assert_row(infiniband, snap, want)


# ----------------------------------------------------------------- NCCL cuMem and the vLLM server
SERVER = {"use_vllm": True, "vllm_mode": "server"}


def _cumem(nccl: str, env: str = "NCCL_CUMEM_ENABLE unset") -> list[tuple]:
    return [("NCCL_CUMEM_WEIGHT_SYNC_MISMATCH", "warning", f"NCCL {nccl} (< 2.22.3)", env)]


def _torch(
    version: str, nccl: str | None = None, env: dict | None = None, plan: dict = SERVER
) -> dict:
    t: dict = {"version": version, "cuda": "12.4"}
    if nccl is not None:
        t["nccl"] = nccl
    return {"torch": t, "plan": plan, "env": env or {}}


CUMEM_ROWS = [
    ("torch says 2.21.5", _torch("2.6.0+cu124", "2.21.5"), _cumem("2.21.5")),
    ("2.22.2", _torch("2.6.0+cu124", "2.22.2"), _cumem("2.22.2")),
    ("exactly 2.22.3", _torch("2.6.0+cu124", "2.22.3"), []),
    ("the H200 box's 2.28.9", {**H200, "plan": SERVER}, []),
    ("NCCL_CUMEM_ENABLE=0", _torch("2.6.0+cu124", "2.21.5", {"NCCL_CUMEM_ENABLE": "0"}), []),
    (
        "NCCL_CUMEM_ENABLE=1",
        _torch("2.6.0+cu124", "2.21.5", {"NCCL_CUMEM_ENABLE": "1"}),
        _cumem("2.21.5", "NCCL_CUMEM_ENABLE=1"),
    ),
    (
        "colocated vLLM",
        _torch("2.6.0+cu124", "2.21.5", plan={"use_vllm": True, "vllm_mode": "colocate"}),
        [],
    ),
    (
        "no vLLM",
        _torch("2.6.0+cu124", "2.21.5", plan={"use_vllm": False, "vllm_mode": "server"}),
        [],
    ),
    ("mode unset", _torch("2.6.0+cu124", "2.21.5", plan={"use_vllm": True}), []),
    # the torch probe did not report NCCL: torch's bundled one from compat.yaml
    ("2.6 wheel, from the table", _torch("2.6.0+cu124"), _cumem("2.21.5")),
    ("unparseable NCCL, from the table", _torch("2.6.0+cu124", "n/a"), _cumem("2.21.5")),
    ("2.7 wheel bundles 2.26.2", _torch("2.7.1+cu126"), []),
    ("2.4 wheel: not in the table", _torch("2.4.1+cu124"), []),
    (
        "torch from the package list only",
        {"packages": {"torch": {"version": "2.5.1"}}, "plan": SERVER, "env": {}},
        _cumem("2.21.5"),
    ),
    ("torch unknown", {"plan": SERVER, "env": {}}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), CUMEM_ROWS, ids=[r[0] for r in CUMEM_ROWS])
def test_cumem_weight_sync_row(case, snap, want):
    assert_row(cumem_weight_sync, snap, want)


SNAPSHOTS = [
    (r[0], r[1])
    for r in DIST_ROWS + WINDOWS_ROWS + WSL_ROWS + SHM_ROWS + P2P_ROWS + IB_ROWS + CUMEM_ROWS
]
