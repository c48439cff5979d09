"""A training-like child killed by a signal, as each launcher that runs it reports the death.

The deaths are real: SIGKILL from the kernel's OOM killer inside a memory cgroup, SIGBUS
from reading a memory-mapped token file (nanoGPT's `np.memmap` of train.bin) after another
process truncated it (a data-preparation job rewriting the shard the run maps). The
launchers are Python's `subprocess.run(..., check=True)` (CalledProcessError's `died with
<Signals.SIGKILL: 9>`), a `bash -c` launch line (the shell's `Bus error` and 128 + N) and
torchrun with 2 gloo CPU ranks (its ChildFailedError's `Signal N (SIGX) received by PID`).
MAPPED_FILE_TRUNCATED is a proposed code, not in codes.yaml: a file the process had
memory-mapped (token shards, Arrow files, safetensors) was truncated or replaced under it,
so the next read of a page past its new end gets SIGBUS.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "signal_deaths"
PORT = 29551
MAPPED = "MAPPED_FILE_TRUNCATED"
# The log shows a bare SIGBUS and nothing of the mapping: the SIGBUS hint (whose advice
# names a mapped file cut short beside /dev/shm) is the most it can say
SIGBUS_HINT = ("DATALOADER_SHM_BUS_ERROR",)
CASES = (
    FaultCase(
        FAMILY,
        "subprocess_check_oom_kill",
        ("HOST_OOM_KILLED",),
        "a pipeline script runs `subprocess.run([python, 'tokenize_shards.py'], check=True)` in a"
        " 300 MB memory cgroup; the child holds 32 MB token buffers until the kernel's OOM killer"
        " ends it (SIGKILL): the parent's CalledProcessError",
        memory_limit_mb=300,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "bash_c_memmap_sigbus",
        (MAPPED,),
        "`bash -c 'python train.py; ...'` where train.py np.memmap's an 8 MB train.bin and reads"
        " batches; after step 3 a data-preparation process truncates train.bin to 0 bytes (as"
        " prepare.py rewriting it) and the next batch's read gets SIGBUS (proposed code"
        f" {MAPPED}): the shell's `Bus error` line and status 135",
        log_reads_as=SIGBUS_HINT,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "torchrun_worker_memmap_sigbus",
        (MAPPED,),
        "torchrun --nproc-per-node 2 (gloo, CPU) of a loop whose ranks np.memmap train.bin; after"
        " step 3 rank 1 truncates the file (as a re-run of the data preparation) and both ranks'"
        " next reads get SIGBUS: torchrun's ChildFailedError",
        log_reads_as=SIGBUS_HINT,
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "torchrun_worker_oom_kill",
        ("HOST_OOM_KILLED",),
        "torchrun --nproc-per-node 2 (gloo, CPU) in a 700 MB memory cgroup; rank 1 keeps 64 MB"
        " activation buffers per step until the kernel's OOM killer ends it (SIGKILL):"
        " torchrun's ChildFailedError",
        memory_limit_mb=700,
        timeout=150,
    ),
    FaultCase(
        FAMILY,
        "subprocess_check_user_keyerror",
        (),
        "the same pipeline script's `subprocess.run([python, 'tokenize_shards.py'], check=True)`;"
        " the child raises KeyError on a record without its 'text' field (the user's own bug):"
        " exit status 1",
        memory_limit_mb=300,
        timeout=90,
    ),
)

TOKENIZE = """\
import sys
import json

records = [{"text": "a blue shirt"}, {"txt": "a red hat"}]
buffers = []
if sys.argv[1:] == ["--user-bug"]:
    for i, rec in enumerate(records):
        print(f"record {i}: {len(rec['text'])} chars", flush=True)
for shard in range(1000):
    buffers.append(bytearray(32 * 1024 * 1024))  # a 32 MB token buffer, zero-filled, resident
    print(f"shard {shard}: {32 * len(buffers)} MB of tokens held", flush=True)
"""

PIPELINE = """\
import subprocess
import sys

print("stage 1/2: tokenize shards", flush=True)
subprocess.run([sys.executable, "tokenize_shards.py", *sys.argv[1:]], check=True)
print("stage 2/2: train", flush=True)
"""

MEMMAP_TRAIN = """\
import os
import sys

import numpy as np

path = "train.bin"
rank = int(os.environ.get("RANK", "0"))
data = np.memmap(path, dtype=np.uint16, mode="r")
print(f"[rank {rank}] train.bin: {len(data)} tokens", flush=True)
block = 1024
for step in range(1, 50):
    if step == 4 and rank == int(os.environ.get("TRUNCATER", "0")):
        # what a re-run of the data preparation does to the file the run maps
        with open(path, "r+b") as f:
            f.truncate(0)
        print(f"[rank {rank}] train.bin rewritten by prepare.py", flush=True)
    elif step == 4:
        import time
        time.sleep(1.0)
    start = (step * 97 * block) % (len(data) - block)
    x = np.asarray(data[start : start + block]).astype(np.int64)
    print(f"[rank {rank}] step {step} batch sum {int(x.sum())}", flush=True)
"""

MEMMAP_DIST = """\
import os
from datetime import timedelta

import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
os.environ["TRUNCATER"] = "1"
exec(open("memmap_train.py").read())
"""

OOM_DIST = """\
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank = dist.get_rank()
held = []
for step in range(1, 1000):
    if rank == 1:
        held.append(torch.ones(16 * 1024 * 1024))  # 64 MB of activations kept by mistake
    print(f"[rank {rank}] step {step} holding {64 * len(held)} MB", flush=True)
    import time
    time.sleep(0.2)
"""


def _write_shard(work: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    rng.integers(0, 50000, size=4 * 1024 * 1024, dtype=np.uint16).tofile(work / "train.bin")


def _run(argv: list[str], work: Path) -> None:
    print("$", " ".join(argv), flush=True)
    code = subprocess.run(argv, cwd=work, check=False).returncode
    sys.exit(128 - code if code < 0 else code)


def _pipeline(work: Path, *args: str) -> None:
    (work / "tokenize_shards.py").write_text(TOKENIZE, encoding="utf-8")
    (work / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    _run([sys.executable, "pipeline.py", *args], work)


def subprocess_check_oom_kill(work: Path) -> None:
    _pipeline(work)


def subprocess_check_user_keyerror(work: Path) -> None:
    _pipeline(work, "--user-bug")


def bash_c_memmap_sigbus(work: Path) -> None:
    _write_shard(work)
    (work / "train.py").write_text(MEMMAP_TRAIN, encoding="utf-8")
    line = 'python train.py; status=$?; echo "train.py exited with status $status"; exit $status'
    _run(["bash", "-c", line], work)


def _torchrun(work: Path, script: str) -> None:
    argv = ["torchrun", "--nproc-per-node", "2", "--master-port", str(PORT), script]
    _run(argv, work)


def torchrun_worker_memmap_sigbus(work: Path) -> None:
    _write_shard(work)
    (work / "memmap_train.py").write_text(MEMMAP_TRAIN, encoding="utf-8")
    (work / "train.py").write_text(MEMMAP_DIST, encoding="utf-8")
    _torchrun(work, "train.py")


def torchrun_worker_oom_kill(work: Path) -> None:
    (work / "train.py").write_text(OOM_DIST, encoding="utf-8")
    _torchrun(work, "train.py")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
