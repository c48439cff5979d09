"""A rendezvous port another process already listens on."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "ports"
PORT = 29511
CASES = (
    FaultCase(
        FAMILY,
        "tcpstore_busy",
        ("DIST_PORT_IN_USE",),
        "torch.distributed.TCPStore(is_master=True) on a port a socket listens on",
    ),
    FaultCase(
        FAMILY,
        "init_process_group_busy",
        ("DIST_PORT_IN_USE",),
        "init_process_group('gloo', env://) with MASTER_PORT taken by another listener",
    ),
)


def _listen():
    import socket

    # A fixed port keeps the recording stable; if another process holds it, it is busy too.
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", PORT))
        s.listen()
    except OSError:
        pass
    return s


def tcpstore_busy(work: Path) -> None:
    from datetime import timedelta

    import torch.distributed as dist

    _busy = _listen()  # held open for the whole call
    dist.TCPStore("127.0.0.1", PORT, 1, True, timedelta(seconds=5))


def init_process_group_busy(work: Path) -> None:
    import os
    from datetime import timedelta

    import torch.distributed as dist

    _busy = _listen()  # held open for the whole call
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(PORT), RANK="0", WORLD_SIZE="1")
    dist.init_process_group("gloo", timeout=timedelta(seconds=5))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
