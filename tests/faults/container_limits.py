"""A Python child inside a Docker container runs past the container's limits.

Each driver starts its own engine (docker_engine's: dockerd, vfs storage, no iptables, no
bridge) and imports docker_engine's rootfs image (/bin/sh, dd, true and their libraries);
the host's /usr is mounted read-only into the container (-v /usr:/usr:ro), which gives it
Debian's python3.11 and its standard library, and the script's dir as /app. No registry is reached. The drivers run
`docker run` without --rm, print what `docker inspect` recorded of the container's end
(State.OOMKilled, State.ExitCode), as an operator or a CI step does, then remove it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive
from .docker_engine import IMAGE, _Engine, prepare  # noqa: F401  (prepare: the case's)

FAMILY = "container_limits"
CASES = (
    FaultCase(
        FAMILY,
        "memory_limit_python_alloc",
        ("HOST_OOM_KILLED",),
        f"`docker run --memory 64m --memory-swap 64m -v /usr:/usr:ro -v <case dir>/app:/app:ro -w /app {IMAGE} python3 train.py <keeps"
        " 8 MB token buffers per step>`: the container's cgroup OOM-kills python3 (exit 137),"
        " then `docker inspect` prints State.OOMKilled and State.ExitCode",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "shm_size_shared_memory_sigbus",
        ("CONTAINER_SHM_TOO_SMALL",),
        f"`docker run --shm-size 1m -v /usr:/usr:ro -v <case dir>/app:/app:ro -w /app {IMAGE} python3 train.py <...>`: a producer puts"
        " a 16 MB batch into multiprocessing.shared_memory.SharedMemory(create=True) (a /dev/shm"
        " file of 16 MB on a 1 MB tmpfs) and fills it: SIGBUS (exit 135)",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "shm_size_python_write",
        ("CONTAINER_SHM_TOO_SMALL",),
        f"`docker run --shm-size 1m -v /usr:/usr:ro -v <case dir>/app:/app:ro -w /app {IMAGE} python3 train.py <...>`: a feature cache"
        " written with open('/dev/shm/features.bin', 'wb') in 1 MB chunks, 8 MB in all: OSError"
        " [Errno 28] No space left on device",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "memory_limit_user_keyerror",
        (),
        f"`docker run --memory 64m --memory-swap 64m -v /usr:/usr:ro -v <case dir>/app:/app:ro -w /app {IMAGE} python3 train.py <...>`,"
        " the limit not reached: the user's script reads a key its record lacks (KeyError, exit"
        " 1); `docker inspect` prints State.OOMKilled and State.ExitCode",
        prepare="prepare",
        timeout=120,
    ),
)

ALLOC = """\
held = []
for step in range(1, 200):
    held.append(bytearray(8 * 1024 * 1024))
    print(f"step {step}: {8 * len(held)} MB of token buffers", flush=True)
"""

SHM_SIGBUS = """\
from multiprocessing import shared_memory
size = 16 * 1024 * 1024
shm = shared_memory.SharedMemory(create=True, size=size)
print(f"batch buffer {shm.name}: {size} bytes in /dev/shm", flush=True)
step = 1024 * 1024
for off in range(0, size, step):
    shm.buf[off:off + step] = bytes([1]) * step
    print(f"wrote {(off + step) >> 20} MB", flush=True)
"""

SHM_WRITE = """\
print("caching features to /dev/shm/features.bin", flush=True)
with open("/dev/shm/features.bin", "wb") as f:
    for mb in range(1, 9):
        f.write(bytes(1024 * 1024))
        f.flush()
        print(f"cached {mb} MB of features", flush=True)
"""

USER_BUG = """\
records = [{"prompt": "a blue shirt", "label": 1}, {"prompt": "a red hat"}]
for i, rec in enumerate(records):
    print(f"record {i}: label {rec['label']}", flush=True)
"""


def _container(work: Path, limits: list[str], code: str) -> None:
    engine = _Engine(work)
    name = "shop-r1-train"
    try:
        app = work / "app"
        app.mkdir()
        (app / "train.py").write_text(code, encoding="utf-8")
        argv = ["docker", "run", "--name", name, *limits, "-v", "/usr:/usr:ro"]
        argv += ["-v", f"{app}:/app:ro", "-w", "/app", IMAGE, "python3", "train.py"]
        print("$", " ".join(argv), flush=True)
        status = subprocess.run(argv, check=False).returncode
        print(f"docker run exited with status {status}", flush=True)
        fmt = "OOMKilled={{.State.OOMKilled}} ExitCode={{.State.ExitCode}}"
        print(f"$ docker inspect -f '{fmt}' {name}", flush=True)
        subprocess.run(["docker", "inspect", "-f", fmt, name], check=False)
        subprocess.run(["docker", "rm", name], check=False, capture_output=True)
    finally:
        engine.stop()
    sys.exit(status)


MEMORY = ["--memory", "64m", "--memory-swap", "64m"]


def memory_limit_python_alloc(work: Path) -> None:
    _container(work, MEMORY, ALLOC)


def shm_size_shared_memory_sigbus(work: Path) -> None:
    _container(work, ["--shm-size", "1m"], SHM_SIGBUS)


def shm_size_python_write(work: Path) -> None:
    _container(work, ["--shm-size", "1m"], SHM_WRITE)


def memory_limit_user_keyerror(work: Path) -> None:
    _container(work, MEMORY, USER_BUG)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
