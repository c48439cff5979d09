"""Fakes of the outside world for the doctor's probe tests.

`ReplayRunner` answers commands with outputs recorded on real machines
(tests/fixtures/machines/<machine>/); `FakeNVML` is a pynvml-shaped object built from the
`nvml.json` recorded there. Neither knows anything about the probes under test.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from repo_paths import FIXTURES

from shop_r1_doctor.isolate import CommandResult
from shop_r1_doctor.probes.deps import DistRecord, PlatformFacts, ProbeDeps

GPU = FIXTURES / "machines"  # the recorded machines (raw outputs + snapshot)
FAKEPKGS = FIXTURES / "fakepkgs"

QUERY_GPU = (
    "nvidia-smi",
    "--query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,driver_version",
    "--format=csv",
)
QUERY_GPU_NOCC = (
    "nvidia-smi",
    "--query-gpu=index,name,uuid,pci.bus_id,memory.total,memory.used,driver_version",
    "--format=csv",
)
QUERY_APPS = (
    "nvidia-smi",
    "--query-compute-apps=pid,process_name,used_memory,gpu_uuid",
    "--format=csv,noheader,nounits",
)


class ReplayRunner:
    """argv -> recorded (returncode, file); unknown argv fails the test loudly."""

    def __init__(self, folder: Path, answers: Mapping[tuple[str, ...], tuple[int, str]]):
        self.folder = folder
        self.answers = dict(answers)
        self.calls: list[tuple[str, ...]] = []

    def __call__(
        self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None
    ) -> CommandResult | None:
        key = tuple(argv)
        self.calls.append(key)
        if key not in self.answers:
            raise AssertionError(f"unexpected command {key}")
        code, name = self.answers[key]
        return CommandResult(code, (self.folder / name).read_text(encoding="utf-8"), "")


def smi_runner(machine: str, *, busy: bool = False) -> ReplayRunner:
    """The recorded answers of one machine to the commands the gpu probe runs."""
    suffix = "-busy" if busy else ""
    return ReplayRunner(
        GPU / machine,
        {
            QUERY_GPU: (0, "query-gpu-header.csv"),
            ("nvidia-smi",): (0, f"nvidia-smi{suffix}.txt"),
            QUERY_APPS: (0, f"query-compute-apps{suffix}.csv"),
            ("nvidia-smi", "topo", "-m"): (0, "topo-m.txt"),
            ("nvidia-smi", "topo", "-p2p", "r"): (0, "topo-p2p-r.txt"),
        },
    )


def missing_runner(argv: Sequence[str], timeout: float, env: Any = None) -> None:
    """No executable of that name on this machine (nvidia-smi missing, no nvcc)."""
    return None


class NVMLError(Exception):
    pass


class FakeNVML:
    """pynvml-shaped, from a recorded nvml.json. Handles are device indices."""

    NVML_P2P_CAPS_INDEX_READ = (0,)  # nvidia-ml-py 13.x really defines 1-tuples
    NVML_P2P_CAPS_INDEX_NVLINK = 2
    NVML_P2P_STATUS_OK = 0
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(
        self, data: dict[str, Any], processes: dict[int, list[tuple[int, int]]] | None = None
    ):
        self.data = data
        self.processes = processes or {}
        self.inited = 0

    @classmethod
    def recorded(cls, machine: str, **kw: Any) -> FakeNVML:
        return cls(json.loads((GPU / machine / "nvml.json").read_text()), **kw)

    def nvmlInit(self) -> None:
        self.inited += 1

    def nvmlShutdown(self) -> None:
        self.inited -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.data["driver_version"]

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.data["cuda_driver_version"]

    def nvmlDeviceGetCount(self) -> int:
        return len(self.data["devices"])

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.data["devices"][h]["name"]

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return tuple(self.data["devices"][h]["cc"])  # type: ignore[return-value]

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        d = self.data["devices"][h]
        return SimpleNamespace(total=d["memory_total"], used=d["memory_used"])

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        recorded = [(p["pid"], p["used_bytes"]) for p in self.data["devices"][h]["processes"]]
        return [
            SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in recorded + self.processes.get(h, [])
        ]

    def nvmlDeviceGetP2PStatus(self, a: int, b: int, index: int) -> int:
        entry = self.data["p2p"][f"{a}-{b}"]
        if isinstance(entry, dict):
            return entry[{0: "read", 1: "write", 2: "nvlink", 3: "atomics"}[index]]
        return entry

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:
        raise NVMLError("Not Supported")  # not recorded

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        raise NVMLError("Not Supported")

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: int, link: int) -> SimpleNamespace:
        raise NVMLError("Not Supported")


class BrokenNVML(FakeNVML):
    """The library loads but the driver does not answer (container without GPUs)."""

    def __init__(self) -> None:
        super().__init__({})

    def nvmlInit(self) -> None:
        raise NVMLError("Driver Not Loaded")


def dists(**versions: str) -> Any:
    """A fixed set of installed distributions: dists(torch="2.11.0+cu130")."""
    records = {
        name.replace("_", "-"): DistRecord(
            name.replace("_", "-"), v, (), f"/site/{name}-{v}.dist-info", 1.0
        )
        for name, v in versions.items()
    }
    return lambda: records


def make_deps(tmp_path: Path, **overrides: Any) -> ProbeDeps:
    """Deps that touch nothing of the real machine unless a test says so."""
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    defaults: dict[str, Any] = {
        "runner": missing_runner,
        "nvml": None,
        "dists": dists(),
        "environ": {"PATH": ""},
        "root": root,
        "platform": PlatformFacts(
            system="linux",
            release="6.8.0",
            machine="x86_64",
            python_version="3.12.3",
            executable=sys.executable,
            prefix=sys.prefix,
            base_prefix=sys.base_prefix,
        ),
        "cache_dir": tmp_path / "cache",
        "http": lambda url, timeout: None,
        "proc_name": lambda pid: None,
        "ray_cmdlines": lambda: [],  # no Ray head runs here unless a test says so
        "cwd": tmp_path,
        "home": "/home/tester",
    }
    defaults.update(overrides)
    return ProbeDeps(**defaults)
