"""Docker refuses a training container: a GPU asked of an engine without NVIDIA's
runtime, the CLI with no engine running, a container whose /dev/shm is too small.

Each driver starts its own engine (dockerd, vfs storage, no iptables, no bridge, its data
root, exec root and socket in the case's dir) and stops it before it ends; no registry is
reached: the image is `docker import` of a rootfs tarball `prepare` builds from this
host's /bin/sh, dd and true and the libraries they load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "docker_engine"
IMAGE = "shop-r1-fault/base:1"
ENV = "SHOP_R1_FAULT_ROOTFS"  # the rootfs tarball
BINARIES = ("/bin/sh", "/bin/dd", "/bin/true")
CASES = (
    FaultCase(
        FAMILY,
        "gpus_without_nvidia_runtime",
        ("DOCKER_NO_GPU_SUPPORT", "DOCKER_GPU_RUNTIME_MISSING"),
        f"`docker run --gpus all {IMAGE} true` on an engine (dockerd, vfs) with no NVIDIA"
        " container runtime or toolkit installed",
        prepare="prepare",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "cli_without_engine",
        ("DOCKER_ENGINE_UNREACHABLE",),
        f"`docker run --rm {IMAGE} true` with no dockerd running (a tmpfs over /run in a"
        " private mount namespace: no /var/run/docker.sock)",
        tmpfs=("/run", "1m"),
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "shm_size_too_small",
        ("CONTAINER_SHM_TOO_SMALL", "NCCL_DOCKER_SHM_TOO_SMALL"),
        f"`docker run --shm-size=1m {IMAGE} dd if=/dev/zero of=/dev/shm/x bs=1M count=4`:"
        " 4 MB written into a container's 1 MB /dev/shm (CONTAINER_SHM_TOO_SMALL is a"
        " proposed code, not in codes.yaml: the container's /dev/shm is smaller than what"
        " the job puts there; --shm-size or --ipc=host)",
        prepare="prepare",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "container_input_missing",
        (),
        f"the user's own wrong path: `docker run {IMAGE} dd if=/data/train.bin of=/dev/null`"
        " on a running engine, no volume mounted at /data",
        prepare="prepare",
        timeout=90,
    ),
)


def _needed_files() -> set[str]:
    files = set(BINARIES)
    for binary in BINARIES:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
        for line in out.stdout.splitlines():
            parts = line.split()
            path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
            if path.startswith("/"):
                files.add(path)
    return files


def prepare(cache: Path) -> dict[str, str]:
    """The rootfs tarball, built once into `cache`; Unavailable without Docker."""
    for tool in ("docker", "dockerd", "ldd"):
        if shutil.which(tool) is None:
            raise Unavailable(f"no {tool} on PATH (apt-get install docker.io)")
    if os.geteuid() != 0:
        raise Unavailable("dockerd needs root")
    tarball = cache / "docker-rootfs.tar"
    if not tarball.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball, "w") as tar:
            for d in ("dev", "dev/shm", "tmp"):
                info = tarfile.TarInfo(d)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            for path in sorted(_needed_files()):
                tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
    return {ENV: str(tarball)}


class _Engine:
    """A private dockerd for one case; `stop` ends it (and the containerd it started)."""

    def __init__(self, work: Path) -> None:
        self.sock = work / "d.sock"
        argv = ["dockerd", "--storage-driver=vfs", "--iptables=false", "--ip6tables=false"]
        argv += ["--bridge=none", f"--data-root={work / 'data'}", f"--exec-root={work / 'x'}"]
        argv += [f"--pidfile={work / 'd.pid'}", f"-H=unix://{self.sock}"]
        self.log = open(work / "dockerd.log", "wb")  # closed in stop()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        os.environ["DOCKER_HOST"] = f"unix://{self.sock}"
        deadline = time.monotonic() + 30
        while subprocess.run(["docker", "version"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"dockerd did not start: see {work / 'dockerd.log'}")
            time.sleep(0.5)
        subprocess.run(
            ["docker", "import", os.environ[ENV], IMAGE], check=True, capture_output=True
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def _docker_run(work: Path, *args: str) -> None:
    engine = _Engine(work)
    try:
        code = subprocess.run(["docker", "run", "--rm", *args], check=False).returncode
    finally:
        engine.stop()
    sys.exit(code)


def gpus_without_nvidia_runtime(work: Path) -> None:
    _docker_run(work, "--gpus", "all", IMAGE, "true")


def cli_without_engine(work: Path) -> None:
    os.environ.pop("DOCKER_HOST", None)
    sys.exit(subprocess.run(["docker", "run", "--rm", IMAGE, "true"], check=False).returncode)


def shm_size_too_small(work: Path) -> None:
    _docker_run(
        work, "--shm-size=1m", IMAGE, "dd", "if=/dev/zero", "of=/dev/shm/x", "bs=1M", "count=4"
    )


def container_input_missing(work: Path) -> None:
    _docker_run(work, IMAGE, "dd", "if=/data/train.bin", "of=/dev/null")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
