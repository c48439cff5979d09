"""Replay a recorded GPU machine (tests/fixtures/machines/<machine>/) through every probe.

The recorded files stand in for the machine: nvml.json (FakeNVML), nvidia-smi outputs
(ReplayRunner), /proc and /etc files (a temp root), packages.json (installed dists),
env.txt (environment) and torch.json (pre-seeded into the torch cache under the key the
probe computes, so no child is started). Only host sizes that psutil reads from the
machine running the tests are then pinned to the recorded values.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from doctor_fakes import GPU, FakeNVML, make_deps, smi_runner

from shop_r1_doctor.probes.collect import collect_snapshot
from shop_r1_doctor.probes.deps import DistRecord, PlatformFacts
from shop_r1_doctor.probes.packages import _applicable, normalize
from shop_r1_doctor.probes.torch_probe import fingerprint, write_cache

TORCH_KEYS = (
    "version",
    "cuda",
    "cuda_available",
    "device_count",
    "arch_list",
    "nccl",
    "cxx11_abi",
    "bf16_supported",
)


def recorded_dists(folder: Path) -> dict[str, DistRecord]:
    data = json.loads((folder / "packages.json").read_text())
    return {
        normalize(name): DistRecord(
            normalize(name),
            d["version"],
            _applicable(d.get("requires") or []),
            f"/opt/torch/.venv/lib/python3.12/site-packages/{name}.dist-info",
            1.0,
        )
        for name, d in data.items()
    }


def recorded_env(folder: Path) -> dict[str, str]:
    env = {}
    for line in (folder / "env.txt").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            env[key] = value
    return env


def _df(folder: Path) -> dict[str, tuple[int, int]]:
    """df -B1 rows -> {mount: (total, available)}."""
    out = {}
    for line in (folder / "df.txt").read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 6:
            out[parts[5]] = (int(parts[1]), int(parts[3]))
    return out


def replay(machine: str, tmp_path: Path, *, fast: bool = False) -> dict[str, Any]:
    folder = GPU / machine
    deps = make_deps(
        tmp_path,
        nvml=FakeNVML.recorded(machine),
        runner=smi_runner(machine),
        dists=lambda: installed,
        environ=recorded_env(folder),
        platform=PlatformFacts(
            system="linux",
            release=(folder / "uname.txt").read_text().split()[2],
            machine="x86_64",
            python_version="3.12.3",
            executable="/opt/torch/.venv/bin/python3",
            prefix="/opt/torch/.venv",
            base_prefix="/usr",
        ),
        python=sys.executable,
        home="/root",
    )
    installed = recorded_dists(folder)
    for rel, name in (
        ("proc/version", "proc-version.txt"),
        ("etc/os-release", "os-release.txt"),
        ("proc/1/cgroup", "proc1-cgroup.txt"),
    ):
        target = deps.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((folder / name).read_text())
    # Not recorded: where the driver is loaded, the kernel module answers here (format of
    # /proc/driver/nvidia/version on 580.x); the torch probe keys its cache on it.
    driver = json.loads((folder / "nvml.json").read_text())["driver_version"]
    nvrm = deps.root / "proc" / "driver" / "nvidia" / "version"
    nvrm.parent.mkdir(parents=True)
    nvrm.write_text(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Release Build\n")
    if "/.dockerenv" in (folder / "container-markers.txt").read_text().split("cannot access")[-1]:
        (deps.root / ".dockerenv").write_text("")
    # The recorded toolkit lives under a fake root here (its nvcc answers with the recorded
    # `nvcc --version`); the paths are mapped back to the recorded ones afterwards.
    path, cuda_home = deps.environ.get("PATH", ""), deps.environ.get("CUDA_HOME", "")
    fake_cuda = tmp_path / "cuda-root" / "usr" / "local" / "cuda"
    (fake_cuda / "bin").mkdir(parents=True)
    (fake_cuda / "bin" / "nvcc").write_text("")
    (fake_cuda / "bin" / "nvcc").chmod(0o755)
    deps.environ["PATH"] = str(fake_cuda / "bin")
    deps.environ["CUDA_HOME"] = str(fake_cuda)
    deps.runner.answers[(str(fake_cuda / "bin" / "nvcc"), "--version")] = (0, "nvcc.txt")
    recorded_torch = json.loads((folder / "torch.json").read_text())
    torch_facts = {k: recorded_torch[k] for k in TORCH_KEYS}
    torch_facts["error"] = None
    key = fingerprint(installed, driver, deps.python, deps.environ)
    write_cache(deps.resolved_cache_dir(), key, torch_facts)

    snap = collect_snapshot(deps=deps, fast=fast, timeout=20)
    snap["env"]["PATH"], snap["env"]["CUDA_HOME"] = path, cuda_home
    text = json.dumps(snap).replace(str(tmp_path / "cuda-root"), "")
    return pin_volatile(json.loads(text), machine, tmp_path)


# CPUs and RAM of the lent machines (the recordings hold no psutil values).
MACHINE_SIZES = {"h100": (16, 128 * 1024**3), "h200x2": (32, 256 * 1024**3)}


def pin_volatile(snap: dict[str, Any], machine: str, tmp_path: Path) -> dict[str, Any]:
    """Values read from the machine running the tests -> the recorded machine's."""
    df = _df(GPU / machine)
    host = snap["host"]
    cpus, ram = MACHINE_SIZES[machine]
    host["cpu_count"] = host["cpu_usable"] = cpus
    host["ram_bytes"] = ram
    host["ram_available_bytes"] = ram - 4 * 1024**3
    host["libc"] = "glibc 2.39"
    host["shm_bytes"] = df["/dev/shm"][0]
    host["stdout_encoding"] = "utf-8"
    root_free = df["/"][1]
    host["paths"] = {"cwd": "/srv/shop-r1", "temp": "/tmp", "hf_cache": "~/.cache/huggingface/hub"}
    host["disk_free_bytes"] = {p: root_free for p in host["paths"].values()}
    # The recordings hold no rlimits, cgroups or cache states: what the limits probe reads
    # here is the test machine's (tests/shop_r1_doctor/probes/test_limits_probe.py covers it).
    snap.pop("limits", None)
    snap["created"] = "2026-11-21T19:30:00Z"
    for rec in snap["probes"].values():
        rec["seconds"] = 0.0
    snap["probes_seconds"] = 0.0
    text = json.dumps(snap).replace(str(tmp_path), "/srv/shop-r1")
    return json.loads(text)
