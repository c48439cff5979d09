"""A distributed run stopped from outside by SIGTERM (a scheduler's time limit or preemption).

torchrun runs 2 CPU ranks (gloo) of a training loop that prints each step; once both
ranks have printed steps, the driver sends SIGTERM as a scheduler does: Kubernetes to the
container's first process (torchrun itself), Slurm at a time limit or `scancel` to every
process of the job step (here: torchrun's process group). What torchrun and the ranks
print is the recording; torchrun's exit status is the driver's. No code in codes.yaml
names a stop from outside by SIGTERM: JOB_TIME_LIMIT_OR_PREEMPTION.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "preempted"
PORT = 29527
CASES = (
    FaultCase(
        FAMILY,
        "sigterm_torchrun",
        ("JOB_TIME_LIMIT_OR_PREEMPTION",),
        "torchrun --nproc-per-node 2 of a gloo training loop, sent SIGTERM (to torchrun, as"
        " Kubernetes stops a pod) after both ranks printed steps",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "sigterm_process_group",
        ("JOB_TIME_LIMIT_OR_PREEMPTION",),
        "torchrun --nproc-per-node 2 of a gloo training loop, SIGTERM sent to every process of"
        " the job (torchrun's process group, as Slurm at a time limit) after steps",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "rank_raises_mid_run",
        (),
        "torchrun --nproc-per-node 2 of the same loop, no signal; rank 1 raises ValueError at"
        " step 3 from the user's own loss check (the user's own bug)",
        timeout=60,
    ),
)

LOOP = """\
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank()
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(1, 200):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    opt.zero_grad()
    print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
    if sys.argv[1:] == ["--fail"] and rank == 1 and step == 3:
        raise ValueError(f"loss went negative at step {step}: check the reward scaling")
    time.sleep(0.5)
"""


def _torchrun(work: Path, *args: str) -> subprocess.Popen[bytes]:
    (work / "train.py").write_text(LOOP, encoding="utf-8")
    argv = ["torchrun", "--nproc-per-node", "2", "--master-port", str(PORT), "train.py", *args]
    print("$", " ".join(argv), flush=True)
    return subprocess.Popen(argv, cwd=work, start_new_session=True)


def _after_steps(proc: subprocess.Popen[bytes], seconds: float = 8.0) -> None:
    # both ranks start, rendezvous and print a few steps within this on 2 cores
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)


def _exit_as_shell(code: int) -> None:
    # a launcher killed by a signal exits as a shell reports it: 128 + the signal
    sys.exit(128 - code if code < 0 else code)


def sigterm_torchrun(work: Path) -> None:
    proc = _torchrun(work)
    _after_steps(proc)
    proc.send_signal(signal.SIGTERM)
    _exit_as_shell(proc.wait(timeout=40))


def sigterm_process_group(work: Path) -> None:
    proc = _torchrun(work)
    _after_steps(proc)
    os.killpg(proc.pid, signal.SIGTERM)
    _exit_as_shell(proc.wait(timeout=40))


def rank_raises_mid_run(work: Path) -> None:
    proc = _torchrun(work, "--fail")
    _exit_as_shell(proc.wait(timeout=50))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
