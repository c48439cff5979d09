"""Host memory exhausted: a memory cgroup's limit (the kernel kills the process)."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "host_memory"
CASES = (
    FaultCase(
        FAMILY,
        "cgroup_oom_kill",
        ("HOST_OOM_KILLED",),
        "torch allocates 64 MB tensors in a loop inside a 400 MB memory cgroup",
        memory_limit_mb=400,
        timeout=60,
        log_shows_cause=False,
    ),
    FaultCase(
        FAMILY,
        "cgroup_oom_kill_loading",
        ("HOST_OOM_KILLED",),
        "32 MB shards loaded under a progress bar in a 300 MB cgroup, from a launch script",
        memory_limit_mb=300,
        timeout=60,
        shell_reports=True,
    ),
)


def cgroup_oom_kill(work: Path) -> None:
    import torch

    held = []
    for step in range(1000):
        held.append(torch.ones(16 * 1024 * 1024))  # 64 MB, touched so it is resident
        print(f"step {step}: holding {64 * len(held)} MB", flush=True)


def cgroup_oom_kill_loading(work: Path) -> None:
    import torch
    from tqdm import tqdm

    shards = []
    for _ in tqdm(range(40), desc="Loading checkpoint shards"):
        shards.append(torch.ones(8 * 1024 * 1024))  # 32 MB a shard


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
