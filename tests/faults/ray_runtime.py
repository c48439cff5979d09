"""Ray's runtime on this machine fails: its temp dir on a full disk, a temp dir whose
socket paths are too long, an object bigger than the object store, and a driver of an
older Ray release joining a head of the installed one.

Each driver points HOME at its own directory (Ray 2.60 writes ~/.ray/auth_token on a
first start) and ends only the Ray processes whose command line names its directory:
`ray stop --force` would end every Ray on the machine, other users' included.
`prepare` unpacks Ray 2.40.0's released wheel (pip download --no-deps) into the cache for
the version case; the driver puts it first on sys.path, as a second environment would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .case import FaultCase, download_wheel, drive
from .ray_cluster import _end_leftovers

FAMILY = "ray_runtime"
OLD_RAY = "ray==2.40.0"
ENV = "SHOP_R1_FAULT_OLD_RAY"  # the unpacked older Ray
FULL_PORT = 29541
SKEW_PORT = 29543
_QUICK = {"RAY_py_gcs_connect_timeout_s": "5", "RAY_gcs_server_port_wait_time_s": "1"}
_QUICK_TEXT = ", ".join(f"{k}={v}" for k, v in _QUICK.items())
# 107 bytes is sun_path's limit; TMPDIR plus Ray's session and socket names must exceed it
LONG_TMP = "/tmp/shop-r1-fault/" + "job-scratch-" * 6
# The case's own dir is too long a root for Ray's socket paths; a tmpfs over this short
# dir (made by `mount_point`) in the case's mount namespace, or a short dir under /tmp, is not.
SHORT = "/tmp/shop-r1-ray3"
CASES = (
    FaultCase(
        FAMILY,
        "head_temp_dir_full",
        ("RAY_TMP_DISK_FULL",),
        f"`ray start --head --port {FULL_PORT} --temp-dir {SHORT}/ray` with {SHORT} a 1 MB tmpfs"
        f" that a file already fills ({_QUICK_TEXT})",
        tmpfs=(SHORT, "1m"),
        prepare="mount_point",
        env=_QUICK,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "init_socket_path_too_long",
        ("RAY_AF_UNIX_PATH_TOO_LONG",),
        f"ray.init() with TMPDIR={LONG_TMP} ({len(LONG_TMP)} characters), as a scheduler's"
        " per-job scratch dir; Ray's plasma socket path under it exceeds AF_UNIX's 107 bytes",
        env={"TMPDIR": LONG_TMP},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "put_larger_than_object_store",
        ("RAY_TMP_DISK_FULL",),
        "ray.init(object_store_memory=80 MB, automatic object spilling off, _temp_dir on a"
        f" 120 MB tmpfs over {SHORT}) then ray.put of a 200 MB array: the store falls back to the temp"
        " dir's disk, which fills. A full object store alone is no failure on Ray 2.60: with"
        " spilling off and a temp dir with room, twelve 20 MB puts into an 80 MB store all"
        " succeed (fallback allocation on disk), so ObjectStoreFullError is not reached",
        tmpfs=(SHORT, "120m"),
        prepare="mount_point",
        env=_QUICK,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "driver_older_than_head",
        ("RAY_VERSION_MISMATCH",),
        f"`ray start --head --port {SKEW_PORT}` with the installed Ray, then ray.init(address=)"
        f" from a driver importing Ray 2.40.0 (its released wheel unpacked, first on sys.path)",
        env=_QUICK,
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "task_key_error",
        (),
        "the user's own KeyError raised in a Ray task (ray.init with a small object store,"
        f" _temp_dir on a 120 MB tmpfs over {SHORT}), surfaced by ray.get",
        tmpfs=(SHORT, "120m"),
        prepare="mount_point",
        env=_QUICK,
        timeout=90,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """Unpack the older Ray once into `cache`; the driver's environment to import it."""
    name, version = OLD_RAY.split("==")
    out = cache / f"{name}-{version}"
    if not (out / name / "__init__.py").exists():
        with zipfile.ZipFile(download_wheel(OLD_RAY, cache)) as zf:
            zf.extractall(out)
    return {ENV: str(out)}


def mount_point(cache: Path) -> dict[str, str]:
    """The tmpfs's mount point: it must exist before the case's namespace mounts over it."""
    Path(SHORT).mkdir(exist_ok=True)
    return {}


def _own_home(work: Path) -> None:
    home = work / "home"
    home.mkdir(exist_ok=True)
    os.environ["HOME"] = str(home)


def _ray_start(work: Path, port: int) -> list[str]:
    argv = ["ray", "start", "--head", f"--port={port}", f"--temp-dir={work / 'ray'}"]
    return [*argv, "--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats"]


def head_temp_dir_full(work: Path) -> None:
    _own_home(work)
    # The full disk is a short path: under the case's own work dir the session's socket
    # paths could pass AF_UNIX's 107 bytes first (a longer TMPDIR, a 7-digit pid), and Ray
    # would fail on that instead (init_socket_path_too_long's cause, not this one).
    full = Path(SHORT)
    with open(full / "checkpoint.bin", "wb") as f:  # what filled the disk before Ray came
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    try:
        code = subprocess.run(_ray_start(full, FULL_PORT), check=False).returncode
    finally:
        _end_leftovers(full)
    sys.exit(code)


def init_socket_path_too_long(work: Path) -> None:
    _own_home(work)
    Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    import ray

    try:
        ray.init(num_cpus=1, include_dashboard=False)
        print(ray.get(ray.put(1)))
    finally:
        ray.shutdown()
        _end_leftovers(Path(os.environ["TMPDIR"]))
        shutil.rmtree(os.environ["TMPDIR"], ignore_errors=True)


def _stop(root: Path) -> None:
    """Disconnect first: Ray's exception hook reports the driver's error to the GCS, and
    waits 60 s for one that is gone."""
    import ray

    ray.shutdown()
    _end_leftovers(root)


def _small_store():
    import ray

    ray.init(
        num_cpus=1,
        include_dashboard=False,
        object_store_memory=80 * 1024**2,
        _temp_dir=f"{SHORT}/ray",
        _system_config={"automatic_object_spilling_enabled": False},
    )
    return ray


def put_larger_than_object_store(work: Path) -> None:
    _own_home(work)
    import numpy as np

    try:
        ray = _small_store()
        batch = ray.put(np.zeros(200 * 1024**2 // 8))  # a 200 MB rollout batch
        print(ray.get(batch).nbytes)
    finally:
        _stop(Path(SHORT))


def driver_older_than_head(work: Path) -> None:
    _own_home(work)
    short = Path(tempfile.mkdtemp(prefix="r3v", dir="/tmp"))
    try:
        subprocess.run(_ray_start(short, SKEW_PORT), check=True, capture_output=True)
        # the driver of another environment: its own, older Ray
        sys.path.insert(0, os.environ[ENV])
        import ray

        ray.init(address=f"127.0.0.1:{SKEW_PORT}")
        print(ray.get(ray.put(1)))
    finally:
        _stop(short)
        shutil.rmtree(short, ignore_errors=True)


def task_key_error(work: Path) -> None:
    _own_home(work)
    try:
        ray = _small_store()

        @ray.remote
        def score(row: dict) -> float:
            return float(row["reward"])  # the rows carry "rewards"

        print(ray.get(score.remote({"rewards": 1.0})))
    finally:
        _stop(Path(SHORT))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
