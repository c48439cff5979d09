"""A multi-node launch started on one node only: the other node never joins.

torchrun is told the job has 2 nodes and is started here as node 0 (gloo, CPU, one worker a
node). With the static rendezvous (`--node-rank 0 --master-addr`) rank 0's agent hosts the
TCPStore and waits for the other node's agent; with the c10d rendezvous backend the agent
waits for the second participant. Both waits are shortened from their defaults (600 s) to
10 s with `--rdzv-conf`. A server told to listen on an address that is not this machine's
(a reward server with `--host` naming another node) fails to bind with EADDRNOTAVAIL; it
runs in a network namespace with only the loopback up, so the address is surely no local
one. The negative is a 1-node launch that rendezvouses and then fails in the user's code.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "rendezvous_incomplete"
CASES = (
    FaultCase(
        FAMILY,
        "static_second_node_missing",
        ("NODE_COUNT_MISMATCH",),
        "torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.1"
        " --rdzv-conf timeout=10 of a gloo script (static rendezvous), node 1 never started",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "c10d_second_node_missing",
        ("NODE_COUNT_MISMATCH",),
        "torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint"
        " 127.0.0.1:29542 --rdzv-conf join_timeout=10 of a gloo script, the other node never"
        " started",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "reward_server_foreign_host",
        ("BIND_ADDRESS_NOT_LOCAL",),
        "the user's aiohttp reward server started with --host 10.77.0.5 (another node's address)"
        " in a network namespace with only the loopback up",
        no_network=True,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "one_node_user_keyerror",
        (),
        "torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d: the rendezvous completes,"
        " gloo initialises, then each rank reads a key its batch lacks (the user's own bug)",
        timeout=90,
    ),
)

TRAIN = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {int(t.item())}", flush=True)
"""

TRAIN_KEYERROR = (
    TRAIN
    + """
batch = {"input_ids": torch.ones(2, 8, dtype=torch.long)}
labels = batch["labels"]
"""
)

SERVER = """\
import argparse

from aiohttp import web

parser = argparse.ArgumentParser()
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=8011)
args = parser.parse_args()


async def score(request):
    body = await request.json()
    return web.json_response({"rewards": [float("<answer>" in c) for c in body["completions"]]})


app = web.Application()
app.add_routes([web.post("/score", score)])
web.run_app(app, host=args.host, port=args.port)
"""


def _torchrun(work: Path, args: list[str], script: str = TRAIN) -> None:
    (work / "train.py").write_text(script, encoding="utf-8")
    argv = ["torchrun", *args, "train.py"]
    print("$", " ".join(argv), flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def static_second_node_missing(work: Path) -> None:
    args = ["--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "1"]
    args += ["--master-addr", "127.0.0.1", "--master-port", "29541", "--rdzv-conf", "timeout=10"]
    _torchrun(work, args)


def c10d_second_node_missing(work: Path) -> None:
    args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d"]
    args += ["--rdzv-endpoint", "127.0.0.1:29542", "--rdzv-id", "job7"]
    args += ["--rdzv-conf", "join_timeout=10"]
    _torchrun(work, args)


def reward_server_foreign_host(work: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    (work / "reward_server.py").write_text(SERVER, encoding="utf-8")
    argv = [sys.executable, "reward_server.py", "--host", "10.77.0.5", "--port", "8011"]
    print("$ python reward_server.py --host 10.77.0.5 --port 8011", flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def one_node_user_keyerror(work: Path) -> None:
    args = ["--nnodes", "1", "--nproc-per-node", "2", "--rdzv-backend", "c10d"]
    args += ["--rdzv-endpoint", "127.0.0.1:29543"]
    _torchrun(work, args, TRAIN_KEYERROR)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
