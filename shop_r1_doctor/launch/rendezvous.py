"""Check a multi-node launch's rendezvous before training: each node runs this on its own.

`accelerate launch` on several nodes uses torchrun's static rendezvous: node rank 0 serves a
c10d `TCPStore` on MAIN_PROCESS_IP:MAIN_PORT and the other nodes connect to it. When a node
cannot reach it, or the node count or ranks are wrong, that shows up as a 10-minute hang or
a c10d/NCCL error inside training. This module makes the same rendezvous first, on the same
address and port with the same `TCPStore`, within RDZV_TIMEOUT, and ends in one line naming
what is wrong, its diagnosis code and the fix:

- the main address resolves, is this node's own on rank 0, and its port is free there
  (DIST_PORT_IN_USE) and reachable from the others (NODE_NETWORK_UNREACHABLE);
- MACHINE_RANK is in [0, nodes) and unique, every node runs a script made for the same
  node count, and all of them joined (NODE_COUNT_MISMATCH);
- each node's GPUs match the plan: the per-node count fixed at generation (`--gpus`, a
  snapshot), else the same count on every node (NODE_GPU_COUNT_MISMATCH).

Rank 0 alone judges and publishes its verdict in the store, so every node that joined
ends with the same line. The checks are pure functions; `main` does the I/O.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

POLL = 0.2  # seconds between looks at the store / connection attempts


@dataclass(frozen=True)
class Problem:
    code: str
    message: str

    def line(self) -> str:
        return f"rendezvous: {self.message} [{self.code}]"


@dataclass(frozen=True)
class Node:
    """What a node tells the others: who it is and what it will run."""

    rank: int
    host: str
    nodes: int  # the node count its script was generated for
    uses: int  # training processes (GPUs) it will start
    has: int | None  # GPUs it can see (None: unknown)


class Failed(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.line())
        self.problem = problem


def check_rank(rank: int, nodes: int) -> Problem | None:
    if 0 <= rank < nodes:
        return None
    return Problem(
        "NODE_COUNT_MISMATCH",
        f"MACHINE_RANK={rank} is outside 0..{nodes - 1}: this script was generated for "
        f"{nodes} node(s); give each node its own rank 0..{nodes - 1}, or regenerate with "
        "--nodes set to the number of nodes you start",
    )


def duplicate_rank(rank: int, holder: str, host: str) -> Problem:
    return Problem(
        "NODE_COUNT_MISMATCH",
        f"MACHINE_RANK={rank} is used by two nodes ({holder} and {host}): give each node its "
        "own rank, 0 on the main node",
    )


def check_nodes(joined: Mapping[int, Node], nodes: int, waited: float) -> Problem | None:
    """Every node runs a script for the same node count, and all of them joined."""
    other = sorted({n.nodes for n in joined.values()} - {nodes})
    if other:
        which = ", ".join(f"rank {n.rank} ({n.host}): {n.nodes}" for n in _by_rank(joined))
        return Problem(
            "NODE_COUNT_MISMATCH",
            f"the nodes run scripts generated for different node counts ({which}): generate "
            "one script and run it on every node",
        )
    missing = [r for r in range(nodes) if r not in joined]
    if not missing:
        return None
    started = ", ".join(f"{n.rank} on {n.host}" for n in _by_rank(joined))
    ranks = ", ".join(map(str, missing))
    return Problem(
        "NODE_COUNT_MISMATCH",
        f"{len(joined)} of {nodes} node(s) joined within {waited:.0f} s; missing node "
        f"rank(s) {ranks} (joined: {started}): start the script there with MACHINE_RANK="
        f"{missing[0]}, or regenerate it with --nodes {len(joined)} if that is all the nodes",
    )


def check_gpus(joined: Mapping[int, Node], planned: int | None) -> Problem | None:
    """`planned`: the GPUs per node fixed at generation (None: each node's own count)."""
    for n in _by_rank(joined):
        if n.has is not None and n.has < n.uses:
            fix = (
                f"regenerate with --gpus {n.has} (or set TRAIN_GPUS), or run it on nodes with "
                f"{n.uses} GPUs"
                if planned is not None
                else "set TRAIN_GPUS to GPUs this node has"
            )
            return Problem(
                "NODE_GPU_COUNT_MISMATCH",
                f"node rank {n.rank} ({n.host}) has {n.has} GPU(s) but would start {n.uses} "
                f"process(es): {fix}",
            )
    if planned is not None:
        off = [n for n in _by_rank(joined) if n.uses != planned]
        if off:
            which = ", ".join(f"rank {n.rank} ({n.host}): {n.uses}" for n in off)
            return Problem(
                "NODE_GPU_COUNT_MISMATCH",
                f"the script was generated for {planned} GPU(s) per node, but TRAIN_GPUS "
                f"gives {which}: every node must run {planned} process(es); unset TRAIN_GPUS "
                "or regenerate with --gpus",
            )
        return None
    counts = {n.uses for n in joined.values()}
    if len(counts) > 1:
        which = ", ".join(f"rank {n.rank} ({n.host}): {n.uses}" for n in _by_rank(joined))
        least = min(counts)
        return Problem(
            "NODE_GPU_COUNT_MISMATCH",
            f"the nodes have different GPU counts ({which}); accelerate starts the same "
            f"number of processes on every node: set TRAIN_GPUS to {least} GPU(s) on each "
            f"node, or regenerate with --gpus {least}",
        )
    return None


def _by_rank(joined: Mapping[int, Node]) -> list[Node]:
    return [joined[r] for r in sorted(joined)]


def unreachable(addr: str, port: int, why: str) -> Problem:
    return Problem(
        "NODE_NETWORK_UNREACHABLE",
        f"cannot reach the main node at {addr}:{port} ({why}): check that node rank 0 is "
        f"running (it waits RDZV_TIMEOUT for the others), that MAIN_PROCESS_IP and MAIN_PORT "
        f"are the same on every node, and `nc -zv {addr} {port}` from this node (firewall)",
    )


# --- I/O: the network and the store -------------------------------------------------


def resolve(addr: str) -> str:
    try:
        return str(socket.getaddrinfo(addr, None, type=socket.SOCK_STREAM)[0][4][0])
    except (socket.gaierror, UnicodeError) as e:
        raise Failed(
            Problem(
                "NODE_NETWORK_UNREACHABLE",
                f"MAIN_PROCESS_IP={addr} does not resolve ({e}): set it to the main node's "
                "address or host name, the same on every node",
            )
        ) from e


def check_main_here(addr: str, ip: str, port: int) -> None:
    """Rank 0 serves the store: the address must be this machine's, the port free."""
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, 0))
        except OSError as e:
            raise Failed(
                Problem(
                    "NODE_NETWORK_UNREACHABLE",
                    f"MAIN_PROCESS_IP={addr} ({ip}) is not an address of this node "
                    f"({socket.gethostname()}), which runs MACHINE_RANK=0: run rank 0 on "
                    "the main node, or set MAIN_PROCESS_IP to this node's address",
                )
            ) from e
    # the store listens on every interface, as torchrun's does; SO_REUSEADDR as it does
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
            raise Failed(
                Problem(
                    "DIST_PORT_IN_USE",
                    f"MAIN_PORT={port} is in use on the main node ({socket.gethostname()}): "
                    "Address already in use (another run or a stale process: ss -ltnp | "
                    f"grep {port}); set MAIN_PORT to a free port on every node",
                )
            ) from e


def reach(addr: str, port: int, deadline: float) -> None:
    """Connect until the deadline: rank 0 may start later than this node."""
    why = "no attempt"
    while True:
        try:
            socket.create_connection(
                (addr, port), timeout=max(0.5, min(3.0, _left(deadline)))
            ).close()
            return
        except ConnectionRefusedError:
            why = "connection refused: nothing listens there"
        except TimeoutError:
            why = "no answer: a firewall, or not the main node's address"
        except OSError as e:
            why = e.strerror or str(e)
        if _left(deadline) <= 0:
            raise Failed(unreachable(addr, port, f"{why}, for {_waited():.0f} s"))
        time.sleep(POLL)


_START = time.monotonic()  # the check's own start: what "waited N s" counts from


def _left(deadline: float) -> float:
    return deadline - time.monotonic()


def _waited() -> float:
    return time.monotonic() - _START


def _node(raw: bytes) -> Node:
    return Node(**json.loads(raw))


def rendezvous(me: Node, addr: str, port: int, timeout: float, planned: int | None) -> str:
    """Join the others through a TCPStore on addr:port; return the success line or raise."""
    problem = check_rank(me.rank, me.nodes)
    if problem:
        raise Failed(problem)
    ip = resolve(addr)
    deadline = _START + timeout
    main = me.rank == 0
    if main:
        check_main_here(addr, ip, port)
    else:
        reach(addr, port, deadline)

    from torch.distributed import TCPStore  # the store torchrun's static rendezvous serves

    try:
        store = TCPStore(
            addr,
            port,
            None,
            main,
            timedelta(seconds=max(_left(deadline), 5.0)),
            wait_for_workers=False,
        )
    except Exception as e:  # a refused or reset connection: c10d's own words as the reason
        raise Failed(unreachable(addr, port, str(e).splitlines()[0])) from e
    # host and pid: two "nodes" may share a host (and a host name)
    claim = f"{me.host} pid {os.getpid()}"
    held = store.compare_set(f"rank/{me.rank}", "", claim).decode()
    if held != claim:
        problem = duplicate_rank(me.rank, held, claim)
        store.set("verdict/error", json.dumps(asdict(problem)))
        raise Failed(problem)
    store.set(f"node/{me.rank}", json.dumps(asdict(me)))
    store.add("joined", 1)
    if main:
        verdict = _judge(store, me, deadline, planned)
        store.set("verdict", json.dumps(asdict(verdict) if verdict else {}))
        _wait_readers(store)
    else:
        verdict = _read_verdict(store, deadline + 15.0, addr, port)
        store.add("read", 1)
    if verdict is not None:
        raise Failed(verdict)
    joined = _joined(store, me.nodes)
    gpus = ", ".join(str(n.uses) for n in _by_rank(joined))
    return (
        f"rendezvous: {me.nodes} of {me.nodes} node(s) joined at {addr}:{port} in "
        f"{_waited():.1f} s; training process(es) per node: {gpus}"
    )


def _joined(store: Any, nodes: int) -> dict[int, Node]:
    keys = [f"node/{r}" for r in range(nodes)]
    return {r: _node(store.get(k)) for r, k in enumerate(keys) if store.check([k])}


def _judge(store: Any, me: Node, deadline: float, planned: int | None) -> Problem | None:
    while True:
        if store.check(["verdict/error"]):
            return Problem(**json.loads(store.get("verdict/error")))
        if store.add("joined", 0) >= me.nodes or _left(deadline) <= 0:
            break
        time.sleep(POLL)
    joined = _joined(store, me.nodes)
    return check_nodes(joined, me.nodes, _waited()) or check_gpus(joined, planned)


def _read_verdict(store: Any, deadline: float, addr: str, port: int) -> Problem | None:
    while True:
        try:
            if store.check(["verdict"]):
                raw = json.loads(store.get("verdict"))
                return Problem(**raw) if raw else None
        except Exception as e:  # rank 0 gave up and closed its store
            raise Failed(unreachable(addr, port, f"rank 0 closed the rendezvous: {e}")) from e
        if _left(deadline) <= 0:
            raise Failed(unreachable(addr, port, f"rank 0 gave no verdict in {_waited():.0f} s"))
        time.sleep(POLL)


def _wait_readers(store: Any) -> None:
    """Keep the store up until the nodes that joined read the verdict (bounded)."""
    end = time.monotonic() + 15.0
    while store.add("read", 0) < store.add("joined", 0) - 1 and time.monotonic() < end:
        time.sleep(POLL)


def write_summary(path: str, me: Node, problem: Problem) -> None:
    """The node's summary says why it never trained (the launch script judges by it)."""
    from shop_r1_doctor.atomic import write_text

    summary = {
        "node_rank": str(me.rank),
        "steps": 0,
        "stage": "rendezvous",
        "code": problem.code,
        "error": problem.message,
    }
    write_text(Path(path), json.dumps(summary, indent=2) + "\n")


def _count(text: str) -> int | None:
    return len([x for x in text.split(",") if x.strip()]) if text.strip() else None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m shop_r1_doctor.launch.rendezvous")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--rank", required=True)
    p.add_argument("--addr", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--uses", type=int, required=True, help="processes this node starts")
    p.add_argument("--has", default="", help="GPU ids this node sees, comma-separated")
    p.add_argument("--planned", type=int, default=None, help="GPUs per node fixed at generation")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--summary", default="")
    a = p.parse_args(argv)
    try:
        rank = int(a.rank)
    except ValueError:
        rank = -1
    me = Node(rank, socket.gethostname(), a.nodes, a.uses, _count(a.has))
    try:
        if rank < 0 and a.rank.strip() != "-1":
            raise Failed(
                Problem(
                    "NODE_COUNT_MISMATCH",
                    f"MACHINE_RANK={a.rank!r} is not a number: 0 on the main node, "
                    f"1..{a.nodes - 1} on the others",
                )
            )
        print(rendezvous(me, a.addr, a.port, a.timeout, a.planned), flush=True)
        return 0
    except Failed as e:
        if a.summary:
            write_summary(a.summary, me, e.problem)
        print(e.problem.line(), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
