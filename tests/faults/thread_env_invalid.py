"""OMP_NUM_THREADS set to a value that is not a thread count, as launch scripts and
schedulers set it: `export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK` where the job asked for no
CPUs per task (empty), OpenMP's nested-list form `4,4`, or `0`.

libgomp (torch's OpenMP runtime on Linux) prints `libgomp: Invalid value for environment
variable OMP_NUM_THREADS` for an empty value, `0`, `auto` or `-1`, takes `4,4`, and the
program goes on with its default thread count: under `python train.py` nothing fails (so
no case here). `accelerate launch` reads the variable with int() before it starts
anything and stops on every value int() refuses (empty, `4,4`, `auto`), on GPU and CPU
launches alike.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "thread_env_invalid"
EXPECTED = ("THREAD_ENV_INVALID",)  # proposed: not in codes.yaml
CASES = (
    FaultCase(
        FAMILY,
        "accelerate_launch_empty",
        EXPECTED,
        "OMP_NUM_THREADS= (empty, as `export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK` with"
        " --cpus-per-task not given): `accelerate launch --cpu --num_processes 1 train.py`"
        " (THREAD_ENV_INVALID is a proposed code, not in codes.yaml: a thread-count variable"
        " holds a value the launcher or OpenMP runtime cannot read)",
        env={"OMP_NUM_THREADS": ""},
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "accelerate_launch_nested_list",
        EXPECTED,
        "OMP_NUM_THREADS=4,4 (OpenMP's per-nesting-level list, which libgomp takes):"
        " `accelerate launch --cpu --num_processes 1 train.py`",
        env={"OMP_NUM_THREADS": "4,4"},
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "omp_zero_user_keyerror",
        (),
        "OMP_NUM_THREADS=0: libgomp's invalid-value line from the launcher, which goes on"
        " (accelerate reads 0 and picks the thread count itself); the user's train.py then"
        " reads a key its batch does not have",
        env={"OMP_NUM_THREADS": "0"},
        timeout=90,
    ),
)

TRAIN = """import torch

batch = {"input_ids": torch.tensor([[1, 2, 3]]), "labels": torch.tensor([[2, 3, 4]])}
model = torch.nn.Embedding(8, 4)
print("threads:", torch.get_num_threads())
print(model(batch["input_ids"]).shape, batch["labels"].shape)
"""


def _launch(work: Path, script: str = TRAIN) -> None:
    (work / "train.py").write_text(script, encoding="utf-8")
    argv = ["accelerate", "launch", "--cpu", "--num_processes", "1", "train.py"]
    print("+", shlex.join(argv), flush=True)
    accelerate = str(Path(sys.executable).parent / "accelerate")
    sys.exit(subprocess.run([accelerate, *argv[1:]], cwd=work, check=False).returncode)


def accelerate_launch_empty(work: Path) -> None:
    _launch(work)


def accelerate_launch_nested_list(work: Path) -> None:
    _launch(work)


def omp_zero_user_keyerror(work: Path) -> None:
    # the user's batch has no "labels"
    _launch(work, TRAIN.replace(', "labels": torch.tensor([[2, 3, 4]])', ""))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
