"""Processes and threads that cannot start: a pids cgroup limit (a container's
`--pids-limit`, a Kubernetes pod's pid limit) or `ulimit -u` for a non-root user.

Every thread counts against the limit, so DataLoader workers, the OpenMP pool torch
starts for its first parallel op and the tokenizers (Rayon) pool fail to start with
EAGAIN. No finding code names this cause; PROCESS_LIMIT_REACHED is a proposed one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .case import FaultCase, drive

FAMILY = "process_limit"
NEW = ("PROCESS_LIMIT_REACHED",)  # proposed: not in codes.yaml
CASES = (
    FaultCase(
        FAMILY,
        "dataloader_fork",
        NEW,
        "pids cgroup with pids.max 4 (proposed code PROCESS_LIMIT_REACHED): DataLoader with"
        " 4 workers cannot fork them",
        pids_limit=4,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "dataloader_worker_threads",
        NEW,
        "pids cgroup with pids.max 8 (proposed code PROCESS_LIMIT_REACHED): DataLoader with"
        " 4 workers, which start but cannot start their threads",
        pids_limit=8,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "torch_openmp_threads",
        NEW,
        "pids cgroup with pids.max 8 (proposed code PROCESS_LIMIT_REACHED):"
        " torch.set_num_threads(16), then a matmul; OpenMP cannot create its threads",
        pids_limit=8,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "tokenizers_thread_pool",
        NEW,
        "pids cgroup with pids.max 16, RAYON_NUM_THREADS=32 as on a 32-core node (proposed code"
        " PROCESS_LIMIT_REACHED): tokenizers trains and encodes in parallel; its Rayon pool"
        " cannot start",
        pids_limit=16,
        # RUST_BACKTRACE=0: what users see by default (this machine sets 1)
        env={"TOKENIZERS_PARALLELISM": "true", "RAYON_NUM_THREADS": "32", "RUST_BACKTRACE": "0"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "nproc_ulimit_user",
        NEW,
        "ulimit -u 6, the driver run as nobody (proposed code PROCESS_LIMIT_REACHED): DataLoader"
        " with 4 workers",
        ulimits={"u": "6"},
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "dataset_value_error",
        (),
        "pids cgroup with pids.max 64 (not reached): DataLoader with 2 workers; the user's"
        " dataset raises ValueError on a malformed row",
        pids_limit=64,
        timeout=60,
    ),
)


def _loop(workers: int) -> None:
    from torch.utils.data import DataLoader

    for batch in DataLoader(_any(list(range(256))), batch_size=4, num_workers=workers):
        batch.sum()
    print("done")


def dataloader_fork(work: Path) -> None:
    _loop(4)


def dataloader_worker_threads(work: Path) -> None:
    _loop(4)


def nproc_ulimit_user(work: Path) -> None:
    _loop(4)


def torch_openmp_threads(work: Path) -> None:
    import torch

    torch.set_num_threads(16)  # e.g. from os.cpu_count() of the node, not the container
    a = torch.randn(2000, 2000)
    print(float((a @ a).sum()))


def tokenizers_thread_pool(work: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.trainers import BpeTrainer

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    rows = [f"search for running shoes size {i % 13} under {i % 97} dollars" for i in range(2000)]
    tok.train_from_iterator(rows, BpeTrainer(vocab_size=200, special_tokens=["[UNK]"]))
    print(len(tok.encode_batch(rows)))


class _Rows:
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int):
        import torch

        price = "n/a" if i == 37 else f"{i}.99"
        return torch.tensor([float(price)])


def dataset_value_error(work: Path) -> None:
    from torch.utils.data import DataLoader

    for batch in DataLoader(_any(_Rows()), batch_size=4, num_workers=2):
        batch.sum()


def _any(dataset: object) -> Any:
    """A map-style dataset (__len__, __getitem__) as DataLoader takes it; torch's stubs
    want a Dataset subclass, which would import torch when the suite lists the cases."""
    return dataset


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
