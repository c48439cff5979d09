"""Ray's head cannot listen on its port, and a driver connects to a head that is not there.

Ray waits 30 s for its GCS client by default, with up to 20 retries; the cases shorten
both (RAY_py_gcs_connect_timeout_s, RAY_gcs_server_port_wait_time_s), which changes how
long the failure takes, not what it prints.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "ray_cluster"
HEAD_PORT = 29521  # held by a plain socket while `ray start --head` asks for it
NO_HEAD_PORT = 29523  # nothing listens here
_QUICK = {"RAY_py_gcs_connect_timeout_s": "5", "RAY_gcs_server_port_wait_time_s": "1"}
CASES = (
    FaultCase(
        FAMILY,
        "head_port_busy",
        ("RAY_PORT_IN_USE",),
        f"`ray start --head --port {HEAD_PORT} --temp-dir /tmp/ray-<random>` while another"
        f" socket listens on {HEAD_PORT}"
        f" ({', '.join(f'{k}={v}' for k, v in _QUICK.items())})",
        env=_QUICK,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "init_no_head",
        ("RAY_CLUSTER_UNREACHABLE",),
        f"ray.init(address='127.0.0.1:{NO_HEAD_PORT}') with no Ray head started"
        f" ({', '.join(f'{k}={v}' for k, v in _QUICK.items())})",
        env=_QUICK,
        timeout=90,
    ),
)


def _listen(port: int):
    import socket

    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        s.listen()
    except OSError:
        pass  # another process holds it: busy all the same
    return s


def _end_leftovers(work: Path) -> None:
    """Ray daemons this case started (their command lines name its temp dir)."""
    me = os.getpid()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if str(work) in cmdline:
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except OSError:
                pass


def head_port_busy(work: Path) -> None:
    _busy = _listen(HEAD_PORT)  # held open for the whole call
    # Ray's temp dir on a short path: under the case's work dir its socket paths could pass
    # AF_UNIX's 107 bytes (a longer TMPDIR, a 7-digit pid) before the port is ever tried.
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    argv = ["ray", "start", "--head", f"--port={HEAD_PORT}", f"--temp-dir={temp}"]
    argv += ["--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats"]
    try:
        code = subprocess.run(argv, check=False).returncode
    finally:
        _end_leftovers(temp)
        shutil.rmtree(temp, ignore_errors=True)
    sys.exit(code)


def init_no_head(work: Path) -> None:
    import ray

    ray.init(address=f"127.0.0.1:{NO_HEAD_PORT}")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
