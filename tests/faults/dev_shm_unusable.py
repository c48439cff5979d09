"""/dev/shm that a process cannot create files in: mounted read-only, a directory only root
may write (mode 755), or absent from a minimal /dev, as some sandboxes, function runtimes
and hand-made chroots have it. POSIX semaphores (sem_open) and shared memory (shm_open)
are files there, so every multiprocessing lock and queue, DataLoader workers, datasets'
map(num_proc=...) and torch's shared tensors fail at once; a size problem (a full /dev/shm)
is another family (shm).

Each condition is built in a private mount namespace: a read-only tmpfs over /dev/shm; a
tmpfs of mode 755 there, the driver run as nobody; a tmpfs /dev holding only null, zero,
full, random, urandom and tty (bound from the real ones) and an fd link, without shm.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "dev_shm_unusable"
EXPECTED = ("DEV_SHM_UNUSABLE",)  # proposed: not in codes.yaml
# A /dev without shm: a tmpfs with the few device nodes a Python program opens, bound over
# the real /dev in the case's mount namespace.
DEV_WITHOUT_SHM = (
    "mkdir -p {work}/dev && mount -t tmpfs -o size=1m,mode=755 tmpfs {work}/dev",
    "for n in null zero full random urandom tty; do touch {work}/dev/$n &&"
    " mount --bind /dev/$n {work}/dev/$n; done",
    "ln -s /proc/self/fd {work}/dev/fd && mount --bind {work}/dev /dev",
)
CASES = (
    FaultCase(
        FAMILY,
        "mp_queue_readonly",
        EXPECTED,
        "/dev/shm a read-only tmpfs: a multiprocessing.Queue between a tokenizing producer"
        " process and the trainer (DEV_SHM_UNUSABLE is a proposed code, not in codes.yaml:"
        " /dev/shm is read-only, not writable by the user or absent, so sem_open and shm_open"
        " fail)",
        readonly=("/dev/shm",),
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "dataloader_workers_no_access",
        EXPECTED,
        "/dev/shm a tmpfs of mode 755 owned by root, the run as nobody: a torch DataLoader"
        " with 2 workers",
        namespace_setup=("mount -t tmpfs -o size=64m,mode=755 tmpfs /dev/shm",),
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "shared_tensor_readonly",
        EXPECTED,
        "/dev/shm a read-only tmpfs: a torch.multiprocessing Process handed a tensor moved to"
        " shared memory with share_memory_() (Hogwild-style)",
        readonly=("/dev/shm",),
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "datasets_map_no_dev_shm",
        EXPECTED,
        "/dev a tmpfs holding null, zero, full, random, urandom, tty and fd but no shm (a"
        " minimal /dev): datasets' Dataset.map(num_proc=2) over 64 prompts",
        namespace_setup=DEV_WITHOUT_SHM,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "pool_worker_missing_shard",
        (),
        "/dev/shm as the machine has it: a multiprocessing Pool tokenizing shards, one of which"
        " the user's shard list names but was never written (FileNotFoundError in a worker)",
        timeout=60,
    ),
)


def mp_queue_readonly(work: Path) -> None:
    import multiprocessing as mp

    queue = mp.Queue(maxsize=8)
    producer = mp.Process(target=_produce, args=(queue,))
    producer.start()
    print("batch:", queue.get())
    producer.join()


def _produce(queue) -> None:
    queue.put([101, 2023, 2003, 102])


class _Prompts:
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int):
        import torch

        return torch.full((8,), float(i))


def dataloader_workers_no_access(work: Path) -> None:
    from torch.utils.data import DataLoader

    for batch in DataLoader(_Prompts(), batch_size=4, num_workers=2):
        print("batch", tuple(batch.shape))


def _add_one(t) -> None:
    t += 1


def shared_tensor_readonly(work: Path) -> None:
    import torch
    import torch.multiprocessing as mp

    weights = torch.zeros(1024)
    weights.share_memory_()
    worker = mp.Process(target=_add_one, args=(weights,))
    worker.start()
    worker.join()
    print("weights[0] =", weights[0].item())


def datasets_map_no_dev_shm(work: Path) -> None:
    from datasets import Dataset

    ds = Dataset.from_dict({"prompt": [f"What is {i} + {i}?" for i in range(64)]})
    ds = ds.map(lambda row: {"n_chars": len(row["prompt"])}, num_proc=2)
    print(ds)


def _tokenize_shard(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(len(line.split()) for line in f)


def pool_worker_missing_shard(work: Path) -> None:
    import multiprocessing as mp

    shards = []
    for i in range(3):
        shard = work / f"shard-{i}.jsonl"
        shard.write_text('{"prompt": "2 + 2 ?"}\n', encoding="utf-8")
        shards.append(str(shard))
    shards.append(str(work / "shard-3.jsonl"))  # the user's list names a fourth shard
    with mp.Pool(2) as pool:
        print("tokens:", sum(pool.map(_tokenize_shard, shards)))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
