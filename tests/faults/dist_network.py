"""torch.distributed (gloo, c10d's TCPStore) started with a network setting that is wrong here.

Each rank calls `init_process_group("gloo")` from the env:// variables a launcher or a
job script sets, with a 10 s timeout (the default is 30 min). An address of no
interface is made unroutable for real: a network namespace whose only interface is the
loopback (no route leaves the machine). The master's TCPStore binds the wildcard address
and gloo falls back to the loopback when the host name resolves to no local address, so
a MASTER_ADDR of another host makes no bind failure on the master; the rank's connect to
it is what fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "dist_network"
PORT = 29525
CASES = (
    FaultCase(
        FAMILY,
        "gloo_socket_ifname_missing",
        ("NCCL_SOCKET_IFNAME_NO_MATCH", "NODE_NETWORK_UNREACHABLE"),
        "torchrun --nproc-per-node 2 of a gloo script with GLOO_SOCKET_IFNAME=nosuch0, an"
        " interface this host lacks",
        env={"GLOO_SOCKET_IFNAME": "nosuch0"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "master_addr_unresolvable",
        ("NODE_NETWORK_UNREACHABLE",),
        "rank 1 of 2 with MASTER_ADDR=node-17.invalid, a name no resolver knows ",
        env={"MASTER_ADDR": "node-17.invalid", "RANK": "1", "WORLD_SIZE": "2"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "master_addr_no_route",
        ("NODE_NETWORK_UNREACHABLE",),
        "rank 0 of 1 with MASTER_ADDR=10.77.0.5, an address of no interface, in a network"
        " namespace with only the loopback up (no route to it)",
        env={"MASTER_ADDR": "10.77.0.5", "RANK": "0", "WORLD_SIZE": "1"},
        no_network=True,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "master_not_listening",
        ("NODE_NETWORK_UNREACHABLE",),
        "rank 1 of 2 with MASTER_ADDR=127.0.0.1 where no rank 0 was started (nothing listens"
        " on MASTER_PORT)",
        env={"MASTER_ADDR": "127.0.0.1", "RANK": "1", "WORLD_SIZE": "2"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "broadcast_bad_src",
        (),
        "gloo initialises (world size 1), then the script broadcasts from src=1, a rank that"
        " does not exist (the user's own bug)",
        env={"MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1"},
        timeout=60,
    ),
)

GLOO_SCRIPT = """\
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=10))
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()}: world {int(t.item())}", flush=True)
"""


def _init() -> None:
    import os
    from datetime import timedelta

    import torch.distributed as dist

    os.environ.setdefault("MASTER_PORT", str(PORT))
    print(
        f"MASTER_ADDR={os.environ['MASTER_ADDR']} MASTER_PORT={os.environ['MASTER_PORT']}"
        f" RANK={os.environ['RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']}",
        flush=True,
    )
    dist.init_process_group("gloo", timeout=timedelta(seconds=10))


def gloo_socket_ifname_missing(work: Path) -> None:
    (work / "train.py").write_text(GLOO_SCRIPT, encoding="utf-8")
    argv = ["torchrun", "--nproc-per-node", "2", "--master-port", str(PORT), "train.py"]
    print("$ GLOO_SOCKET_IFNAME=nosuch0", " ".join(argv), flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def master_addr_unresolvable(work: Path) -> None:
    _init()


def master_addr_no_route(work: Path) -> None:
    # the namespace's loopback, as a container's: the rendezvous address is elsewhere
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    _init()


def master_not_listening(work: Path) -> None:
    _init()


def broadcast_bad_src(work: Path) -> None:
    import torch
    import torch.distributed as dist

    _init()
    t = torch.zeros(4)
    dist.broadcast(t, src=1)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
