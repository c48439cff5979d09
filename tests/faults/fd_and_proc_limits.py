"""Per-process limits a shell or a scheduler sets (ulimit), reached by what a run opens and
starts besides the DataLoader's own descriptors and worker processes (fd_limit and
process_limit hold those): token shards a streaming dataset keeps open, the threads of a
thread pool and of torch's intra-op pool.

RLIMIT_NOFILE (`ulimit -n`) binds root too; RLIMIT_NPROC (`ulimit -u`) does not bind root,
so those cases run as nobody (setpriv), as a job started as a user whose process count a
login limit caps.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "fd_and_proc_limits"
CASES = (
    FaultCase(
        FAMILY,
        "streaming_shards_worker_nofile",
        ("DATALOADER_FD_LIMIT",),
        "ulimit -n 64: an IterableDataset that opens all 96 token shards of its split at once"
        " (round-robin interleaving) inside each of 2 DataLoader workers: the first worker's"
        " open() fails with [Errno 24] Too many open files",
        ulimits={"n": "64"},
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "main_process_shards_nofile",
        ("DATALOADER_FD_LIMIT",),
        "ulimit -n 64: a data-mixing script keeps 96 shard files open in the main process"
        " (one reader per shard, as a weighted mixture does), no DataLoader: open() fails with"
        " [Errno 24] Too many open files",
        ulimits={"n": "64"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "thread_pool_nproc_user",
        ("PROCESS_LIMIT_REACHED",),
        "ulimit -u 12, the driver run as nobody: a ThreadPoolExecutor(max_workers=32) scoring"
        " rollouts with a reward function (Python threads): can't start new thread",
        ulimits={"u": "12"},
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "torch_threads_nproc_user",
        ("PROCESS_LIMIT_REACHED",),
        "ulimit -u 6, the driver run as nobody: torch.set_num_threads(16), then a 512x512"
        " matmul (torch's OpenMP pool cannot create its threads)",
        ulimits={"u": "6"},
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "shard_list_names_missing_file",
        (),
        "ulimit -n 64 (not reached): the IterableDataset opens 8 shards in each of 2 DataLoader"
        " workers, one of which the user's shard list names but was never written"
        " (FileNotFoundError in a worker)",
        ulimits={"n": "64"},
        timeout=90,
    ),
)


def _shards(work: Path, count: int) -> list[Path]:
    d = work / "shards"
    d.mkdir(exist_ok=True)
    paths = []
    for i in range(count):
        p = d / f"train-{i:05d}-of-{count:05d}.bin"
        p.write_bytes(bytes(range(256)) * 16)
        paths.append(p)
    return paths


def _loader(paths: list[Path]) -> None:
    import torch
    from torch.utils.data import DataLoader, IterableDataset

    class Interleaved(IterableDataset):
        def __iter__(self):
            readers = [open(p, "rb") for p in paths]  # kept open, interleaved
            while True:
                for r in readers:
                    chunk = r.read(64)
                    if not chunk:
                        return
                    yield torch.tensor(list(chunk))

    for step, batch in enumerate(DataLoader(Interleaved(), batch_size=8, num_workers=2)):
        if step % 50 == 0:
            print(f"step {step}: batch {tuple(batch.shape)}", flush=True)


def streaming_shards_worker_nofile(work: Path) -> None:
    _loader(_shards(work, 96))


def shard_list_names_missing_file(work: Path) -> None:
    paths = _shards(work, 8)
    paths[5] = paths[5].with_name("train-00005-of-00009.bin")  # the user's list, not the files
    _loader(paths)


def main_process_shards_nofile(work: Path) -> None:
    paths = _shards(work, 96)
    readers = {}
    for p in paths:
        readers[p.name] = open(p, "rb")  # one reader per shard, kept open
    print(f"mixing {len(readers)} shards", flush=True)


def thread_pool_nproc_user(work: Path) -> None:
    import time
    from concurrent.futures import ThreadPoolExecutor

    def reward(i: int) -> float:
        time.sleep(0.5)
        return float(i % 3 == 0)

    with ThreadPoolExecutor(max_workers=32) as pool:
        scores = list(pool.map(reward, range(64)))
    print(f"mean reward {sum(scores) / len(scores):.3f}", flush=True)


def torch_threads_nproc_user(work: Path) -> None:
    import torch

    torch.set_num_threads(16)
    x = torch.randn(512, 512)
    print(f"matmul sum {float((x @ x).sum()):.1f}", flush=True)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
