"""Machine resources: disk for the Hub cache and temp files, shared memory for loaders."""

from __future__ import annotations

from collections.abc import Iterator

from shop_r1_doctor.checks._base import GIB, bytes_gib, finding
from shop_r1_doctor.facts import NOT_PROBED, Facts
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.memory import LOADER_SHM_MIN

DISK_LOW = 10 * GIB
SHM_SMALL = LOADER_SHM_MIN


def disk_low(facts: Facts) -> Iterator[Finding]:
    table = facts.host.disk_free_bytes
    if table is NOT_PROBED:
        return
    seen: set[int] = set()
    for path, free in sorted(table.items()):
        # paths on one file system report the same number: say it once
        if free >= DISK_LOW or free in seen:
            continue
        seen.add(free)
        yield finding(
            "DISK_LOW",
            f"only {bytes_gib(free)} free at {path}",
            detail="Model downloads, datasets and checkpoints of even a 0.5B model take several GB.",
            fix=f"free space at {path}, or export HF_HOME=<a bigger disk>",
        )


def loader_shm(facts: Facts) -> Iterator[Finding]:
    shm = facts.host.shm_bytes
    workers = facts.plan.dataloader_num_workers
    if not isinstance(shm, int) or shm >= SHM_SMALL or not workers:
        return
    yield finding(
        "DATALOADER_SHM_BUS_ERROR",
        f"/dev/shm is {shm // 2**20} MiB with dataloader_num_workers={workers}",
        detail="Worker batches travel through /dev/shm: 'DataLoader worker (pid N) is killed by signal: Bus error'.",
    )


CHECKS = (disk_low, loader_shm)
