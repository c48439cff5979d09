"""A real Docker engine for the tests: `dockerd`, started once per test session.

Storage: overlay2 where this kernel mounts overlayfs on the cache directory (each layer
is a diff: a CPU-torch image builds in minutes), else vfs (every layer is a full copy of
the file system: the same build takes far longer; $SHOP_R1_TEST_DOCKER_STORAGE forces one).

Where the engine can start (root, `dockerd` on PATH: `apt-get install docker.io`), the
tests run against it; elsewhere they skip with the reason. The engine's data root lives
in a cache directory ($SHOP_R1_TEST_DOCKER_CACHE, default ~/.cache/shop-r1/test-docker)
so image layers (the base image, the torch layer) survive between sessions: the first
session builds everything, later ones reuse the layers.

The base image is made here, not pulled (no registry): a minimal Debian root file system
with python3 and venv from `mmdebstrap`, plus this machine's CA bundle (so pip inside a
build trusts the same TLS as the host), imported with `docker import`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

BASE_IMAGE = "shop-r1-test/base:bookworm-py3"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
INDEX_PORT = 38265  # the local torch index (torch_wheel_index / serve)
MIRROR = os.environ.get("SHOP_R1_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")


class Unavailable(Exception):
    """Why no engine could be had (the skip reason)."""


def cache_dir() -> Path:
    base = os.environ.get("SHOP_R1_TEST_DOCKER_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "shop-r1" / "test-docker"


def _ping(sock: str, timeout: float) -> bool:
    import docker

    try:
        docker.DockerClient(base_url=f"unix://{sock}", timeout=timeout).ping()
        return True
    except Exception:
        return False


def storage_driver() -> str:
    forced = os.environ.get("SHOP_R1_TEST_DOCKER_STORAGE")
    if forced:
        return forced
    probe = Path(tempfile.mkdtemp(prefix="ovl", dir=cache_dir()))
    dirs = [probe / d for d in ("l", "u", "w", "m")]
    for d in dirs:
        d.mkdir()
    opts = f"lowerdir={dirs[0]},upperdir={dirs[1]},workdir={dirs[2]}"
    ok = subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", opts, str(dirs[3])], capture_output=True
    )
    if ok.returncode == 0:
        subprocess.run(["umount", str(dirs[3])], capture_output=True)
    shutil.rmtree(probe, ignore_errors=True)
    return "overlay2" if ok.returncode == 0 else "vfs"


@contextlib.contextmanager
def engine() -> Iterator[str]:
    """Start dockerd; yield its DOCKER_HOST; stop it (only it) afterwards. An engine that
    already answers ($SHOP_R1_TEST_DOCKER_HOST, e.g. a CI runner's) is used as it is."""
    given = os.environ.get("SHOP_R1_TEST_DOCKER_HOST")
    if given:
        if not _ping(given.removeprefix("unix://"), 5) and given.startswith("unix://"):
            raise Unavailable(f"SHOP_R1_TEST_DOCKER_HOST={given} does not answer")
        yield given
        return
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise Unavailable("no dockerd on PATH (apt-get install docker.io)")
    if os.geteuid() != 0:
        raise Unavailable("dockerd needs root here (the tests start their own engine)")
    cache_dir().mkdir(parents=True, exist_ok=True)
    driver = storage_driver()
    data = cache_dir() / f"data-{driver}"
    data.mkdir(parents=True, exist_ok=True)
    # exec-root and socket: short paths (containerd's sockets live there; AF_UNIX <= 107).
    run = Path(tempfile.mkdtemp(prefix="srd", dir="/tmp"))
    sock = str(run / "docker.sock")
    log = (cache_dir() / "dockerd.log").open("wb")
    proc = subprocess.Popen(
        [
            dockerd,
            f"--storage-driver={driver}",
            "--iptables=false",
            "--bridge=none",
            "--data-root",
            str(data),
            "--exec-root",
            str(run / "x"),
            "--pidfile",
            str(run / "dockerd.pid"),
            "--host",
            f"unix://{sock}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not _ping(sock, 2):
            if proc.poll() is not None:
                tail = (cache_dir() / "dockerd.log").read_text(errors="replace")[-400:]
                raise Unavailable(f"dockerd exited with status {proc.returncode}: {tail}")
            if time.monotonic() > deadline:
                raise Unavailable("dockerd did not answer within 60 s")
            time.sleep(0.5)
        yield f"unix://{sock}"
        # Keep the cache to what the next session reuses: rebuilt steps leave the old
        # image untagged.
        import docker

        with contextlib.suppress(Exception):
            docker.DockerClient(base_url=f"unix://{sock}", timeout=120).images.prune(
                filters={"dangling": True}
            )
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        # dockerd leaves its default network namespace bind-mounted in the exec root.
        subprocess.run(["umount", str(run / "x" / "netns" / "default")], capture_output=True)
        shutil.rmtree(run, ignore_errors=True)


def base_image(docker_host: str) -> str:
    """The local base image (made once; the engine's data root keeps it between sessions)."""
    import docker
    from docker.errors import ImageNotFound

    client = docker.DockerClient(base_url=docker_host, timeout=600)
    try:
        client.images.get(BASE_IMAGE)
        return BASE_IMAGE
    except ImageNotFound:
        pass
    if shutil.which("mmdebstrap") is None:
        raise Unavailable("no mmdebstrap to make the base image (apt-get install mmdebstrap)")
    rootfs = cache_dir() / "rootfs.tar"
    partial = cache_dir() / "rootfs-partial.tar"  # mmdebstrap picks the format by suffix
    if not rootfs.is_file():
        partial.unlink(missing_ok=True)
        hooks = [
            f"--customize-hook=copy-in {CA_BUNDLE} /etc/ssl/certs" if CA_BUNDLE.is_file() else "",
            '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
        ]
        proc = subprocess.run(
            [
                "mmdebstrap",
                "--variant=minbase",
                "--include=python3,python3-venv",
                "--dpkgopt=path-exclude=/usr/share/{doc,man,locale,info}/*",
                *[h for h in hooks if h],
                "bookworm",
                str(partial),
                MIRROR,
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise Unavailable(f"mmdebstrap failed: {proc.stderr.strip()[-300:]}")
        os.replace(partial, rootfs)
    changes = ['CMD ["/bin/bash"]']
    if CA_BUNDLE.is_file():
        changes += [f"ENV PIP_CERT={CA_BUNDLE}", f"ENV SSL_CERT_FILE={CA_BUNDLE}"]
    repo, tag = BASE_IMAGE.rsplit(":", 1)
    client.api.import_image(src=str(rootfs), repository=repo, tag=tag, changes=changes)
    return BASE_IMAGE


def torch_wheel_index(tmp: Path, python_tag: str = "cp311") -> str | None:
    """A one-package PEP 503 index of a local torch 2.13.0+cpu wheel, or None.

    Where download.pytorch.org cannot be reached (this project's machines reach only PyPI
    and Debian) but a CPU wheel for the base image's Python is on disk
    ($SHOP_R1_TEST_WHEELS, default /opt/wheels), the build's TORCH_INDEX_URL points here.
    """
    source = Path(os.environ.get("SHOP_R1_TEST_WHEELS", "/opt/wheels"))
    wheels = sorted(source.glob(f"torch-2.13.0+cpu-{python_tag}-*.whl"))
    if not wheels:
        return None
    page = tmp / "torch"
    page.mkdir(parents=True, exist_ok=True)
    os.link(wheels[0], page / wheels[0].name) if not (page / wheels[0].name).exists() else None
    quoted = wheels[0].name.replace("+", "%2B")
    (page / "index.html").write_text(f'<a href="{quoted}">{wheels[0].name}</a>\n')
    return str(tmp)


@contextlib.contextmanager
def serve(directory: str) -> Iterator[str]:
    """Serve `directory` as a package index on 127.0.0.1 (the build's RUN steps use the host
    network); a project it lacks (torch's own dependencies) redirects to PyPI's page."""
    import functools
    import http.server
    import threading

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self.path.strip("/").split("/")[0]
            if name and not (Path(directory) / name).exists():
                self.send_response(302)
                self.send_header("Location", f"https://pypi.org/simple/{name}/")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Handler, directory=directory)
    # A fixed port when free: the URL is a build arg, part of every later step's cache key.
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", INDEX_PORT), handler)
    except OSError:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
