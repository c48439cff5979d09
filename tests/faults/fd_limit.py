"""DataLoader workers under a small open-files limit (`ulimit -n 128`, as in containers
and on clusters whose default nofile is low).

With the file_descriptor sharing strategy (Linux's default) every tensor a worker hands
back travels as a file descriptor: the main process runs out while it keeps batches, a
worker runs out while it builds a batch of many tensors.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .case import FaultCase, drive

FAMILY = "fd_limit"
_NOFILE = {"n": "128"}
CASES = (
    FaultCase(
        FAMILY,
        "main_keeps_batches",
        ("DATALOADER_FD_LIMIT",),
        "ulimit -n 128; DataLoader, 2 workers, set_sharing_strategy('file_descriptor'), samples"
        " of 2 small tensors; the loop keeps every batch (main process runs out of descriptors)",
        ulimits=_NOFILE,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "worker_many_tensors",
        ("DATALOADER_FD_LIMIT",),
        "ulimit -n 128; DataLoader, 2 workers, default sharing strategy, each sample a list of"
        " 128 small tensors (a worker runs out of descriptors building the batch)",
        ulimits=_NOFILE,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "collate_key_error",
        (),
        "ulimit -n 128 (not reached); DataLoader, 2 workers: the user's collate_fn reads a key"
        " the samples lack (KeyError)",
        ulimits=_NOFILE,
        timeout=60,
    ),
)


class _Pairs:
    def __len__(self) -> int:
        return 4000

    def __getitem__(self, i: int):
        import torch

        return {"input_ids": torch.full((8,), i), "labels": torch.full((8,), i)}


class _ManyTensors:
    def __len__(self) -> int:
        return 400

    def __getitem__(self, i: int):
        import torch

        return [torch.full((8,), float(i)) for _ in range(128)]


def _as_list(rows):
    return rows


def main_keeps_batches(work: Path) -> None:
    import torch.multiprocessing
    from torch.utils.data import DataLoader

    torch.multiprocessing.set_sharing_strategy("file_descriptor")
    kept = []
    for batch in DataLoader(_any(_Pairs()), batch_size=2, num_workers=2, collate_fn=_as_list):
        kept.append(batch)  # e.g. gathered for an evaluation at the end of the epoch
    print(f"{len(kept)} batches")


def worker_many_tensors(work: Path) -> None:
    from torch.utils.data import DataLoader

    total = 0.0
    for batch in DataLoader(_any(_ManyTensors()), batch_size=4, num_workers=2):
        total += float(sum(t.sum() for t in batch))
    print(total)


def _collate_prompts(rows):
    import torch

    return {
        "input_ids": torch.stack([r["input_ids"] for r in rows]),
        "attention_mask": torch.stack([r["attention_mask"] for r in rows]),
    }


def collate_key_error(work: Path) -> None:
    from torch.utils.data import DataLoader

    for batch in DataLoader(
        _any(_Pairs()), batch_size=2, num_workers=2, collate_fn=_collate_prompts
    ):
        batch["input_ids"].sum()


def _any(dataset: object) -> Any:
    """A map-style dataset (__len__, __getitem__) as DataLoader takes it; torch's stubs
    want a Dataset subclass, which would import torch when the suite lists the cases."""
    return dataset


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
