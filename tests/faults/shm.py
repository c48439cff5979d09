"""DataLoader workers with a /dev/shm too small for the batches they hand back."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "shm"
CASES = (
    FaultCase(
        FAMILY,
        "dataloader_workers",
        ("DATALOADER_SHM_BUS_ERROR",),
        "torch DataLoader, 2 workers, 4 MB samples, /dev/shm a 256 kB tmpfs (Docker's default is 64 MB)",
        tmpfs=("/dev/shm", "256k"),
    ),
    FaultCase(
        FAMILY,
        "dataloader_workers_pin",
        ("DATALOADER_SHM_BUS_ERROR",),
        "the same with a file_system sharing strategy (/dev/shm files named by torch)",
        tmpfs=("/dev/shm", "256k"),
    ),
)


class _Big:
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int):
        import torch

        return torch.full((1024, 1024), float(i))  # 4 MB a sample


def _loop() -> None:
    from torch.utils.data import DataLoader

    for batch in DataLoader(_Big(), batch_size=2, num_workers=2):
        batch.sum()


def dataloader_workers(work: Path) -> None:
    _loop()


def dataloader_workers_pin(work: Path) -> None:
    import torch.multiprocessing

    torch.multiprocessing.set_sharing_strategy("file_system")
    _loop()


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
