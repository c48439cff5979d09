"""The Ray probe and checks against real local Ray heads (`ray start --head`).

Each test starts its own head on free ports with a short temp dir (AF_UNIX paths stay
under 107 bytes) and stops it afterwards. "Default temp dir" heads get their default from
TMPDIR, exactly as Ray computes it (RAY_TMPDIR, else TMPDIR, else /tmp), so they never
touch another Ray's /tmp/ray. Heads are stopped by their own processes (found by their
session directory), never by a machine-wide `ray stop`, except where the test is about
`ray stop` itself and no other Ray runs on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")

from shop_r1_doctor.checks import run_checks  # noqa: E402
from shop_r1_doctor.facts import Facts  # noqa: E402
from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps  # noqa: E402
from shop_r1_doctor.probes.ray_probe import probe_ray, ray_cmdlines  # noqa: E402

pytestmark = pytest.mark.ray
RAY = [sys.executable, "-m", "ray.scripts.scripts"]
DISTS = {"ray": DistRecord("ray", ray.__version__)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _short_dir() -> str:
    return tempfile.mkdtemp(prefix="r", dir="/tmp")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    return {**env, "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _listening(port: int) -> list[str]:
    """Who listens on `port` (any address), as "pid name"; [] when nobody does."""
    import psutil

    out = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            with contextlib.suppress(psutil.Error, TypeError):
                out.append(f"{conn.pid} {psutil.Process(conn.pid).name()}")
            if conn.pid is None:
                out.append("?")
    return out


def _pids_of(marker: str) -> list[int]:
    import psutil

    out = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(marker in a for a in proc.info.get("cmdline") or []):
            out.append(proc.pid)
    return out


def _kill(marker: str, sig: int = signal.SIGTERM, wait: float = 10.0) -> None:
    """Signal every process of one head (its session dir is in each command line)."""
    for pid in _pids_of(marker):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait
    while _pids_of(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in _pids_of(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Head:
    def __init__(self, temp_dir: str | None, tmpdir: str) -> None:
        self.tmpdir = tmpdir  # TMPDIR: where a head without --temp-dir puts /ray
        self.root = temp_dir or os.path.join(tmpdir, "ray")
        self.port, self.dash = _free_port(), _free_port()
        args = [*RAY, "start", "--head", "--num-cpus", "1", "--port", str(self.port)]
        args += ["--dashboard-port", str(self.dash), "--ray-client-server-port"]
        args += [str(_free_port()), "--disable-usage-stats"]
        if temp_dir:
            args += ["--temp-dir", temp_dir]
        proc = subprocess.run(
            args, env=_env(TMPDIR=tmpdir), capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            self.stop()
            pytest.fail(f"ray start failed: {proc.stderr[-1500:]}")

    def stop(self) -> None:
        _kill(self.root)
        # the Ray client server names the head only by its address: it outlives the head
        # and would pile up over a test session
        _kill(f":{self.port}")


@pytest.fixture
def dirs():
    made = [_short_dir() for _ in range(2)]
    yield made
    for d in made:
        _kill(d)
        shutil.rmtree(d, ignore_errors=True)


def _probe(**environ: str) -> dict:
    deps = ProbeDeps(environ={"PATH": os.environ.get("PATH", ""), **environ})
    return probe_ray(deps, DISTS, timeout=2.0)["ray"]


def _codes(ray_facts: dict, plan: dict | None = None) -> dict[str, object]:
    snap = {"schema": "shop-r1.snapshot/1", "ray": ray_facts}
    if plan is not None:
        snap["plan"] = plan
    return {f.code: f for f in run_checks(Facts(snap))}


def test_head_with_temp_dir_is_seen_and_ray_init_would_miss_it(dirs):
    temp, empty = dirs
    head = Head(temp, empty)
    try:
        facts = _probe(TMPDIR=empty)  # no address file where ray.init() looks
        assert facts["cluster"] == "running", facts
        assert facts["address"].endswith(f":{head.port}") and facts["source"] == "process"
        assert facts["temp_dir"] == temp
        assert facts["dashboard"] == f"http://127.0.0.1:{head.dash}"
        assert facts["gcs_healthy"] is True and facts["nodes"] == 1
        assert facts["head_version"] == ray.__version__
        assert facts["client"]["action"] == "start-local"
        finding = _codes(facts)["RAY_INIT_MISSES_LOCAL_HEAD"]
        assert finding.fix == f"export RAY_ADDRESS={facts['address']}"
        assert _codes(facts, {"use_ray": True})["RAY_INIT_MISSES_LOCAL_HEAD"].severity == "error"

        auto = _probe(TMPDIR=empty, RAY_ADDRESS="auto")
        assert auto["client"] == {**auto["client"], "action": "connect"}
        assert "RAY_INIT_MISSES_LOCAL_HEAD" not in _codes(auto)
        # What Ray itself does with RAY_ADDRESS=auto: the same address.
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import ray; ray.init(logging_level='ERROR', log_to_driver=False); "
                "print(ray.get_runtime_context().gcs_address)",
            ],
            env=_env(TMPDIR=empty, RAY_ADDRESS="auto"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-1500:]
        assert proc.stdout.strip().splitlines()[-1] == auto["client"]["address"]
    finally:
        head.stop()
    gone = _probe(TMPDIR=empty)
    assert head.port not in [int(h.rsplit(":", 1)[1]) for h in gone["local_heads"]]
    if not _other_ray_running(temp):  # another test run's head on this box is not ours
        assert gone["cluster"] == "none", gone


def _other_ray_running(mine: str) -> bool:
    return any(mine not in " ".join(args) for args in ray_cmdlines())


def test_head_in_default_temp_dir_then_ray_stop(dirs):
    tmpdir, _ = dirs
    head = Head(None, tmpdir)
    try:
        facts = _probe(TMPDIR=tmpdir)
        # The address file names the GCS on the node IP; the dashboard listens on
        # 127.0.0.1 (its own process says where): health and nodes come from there.
        assert facts["source"] == "cluster_file" and facts["cluster"] == "running", facts
        assert facts["address"] == Path(tmpdir, "ray", "ray_current_cluster").read_text().strip()
        assert facts["dashboard"] == f"http://127.0.0.1:{head.dash}"
        assert facts["gcs_healthy"] is True and facts["nodes"] == 1
        assert facts["client"] == {**facts["client"], "action": "connect", "ray_address": None}
        assert not [c for c in _codes(facts) if c.startswith("RAY_")]
        # The whole doctor, as a user runs it.
        proc = subprocess.run(
            [sys.executable, "-m", "shop_r1_doctor.cli.main", "doctor", "--fast", "--json"],
            env=_env(TMPDIR=tmpdir),
            capture_output=True,
            text=True,
            timeout=120,
        )
        report = json.loads(proc.stdout)
        assert report["snapshot"]["ray"]["address"] == facts["address"]
        if _other_ray_running(tmpdir):
            pytest.skip("another Ray runs on this machine: a machine-wide `ray stop` would kill it")
        stop = subprocess.run(
            [*RAY, "stop"], env=_env(TMPDIR=tmpdir), capture_output=True, text=True, timeout=120
        )
        assert stop.returncode == 0, stop.stderr[-1000:]
    finally:
        head.stop()
    gone = _probe(TMPDIR=tmpdir)
    assert gone["cluster"] == "none" and gone["address"] is None
    assert not [c for c in _codes(gone) if c.startswith("RAY_")]


def test_head_killed_with_sigkill_leaves_a_stale_file_and_ray_stop_is_the_fix(dirs):
    tmpdir, _ = dirs
    head = Head(None, tmpdir)
    _kill(head.root, signal.SIGKILL)
    _kill(f":{head.port}", signal.SIGKILL)
    # The probe asks the GCS port; wait until the kernel has closed it (a killed process's
    # sockets go with its exit, which a loaded box may not have finished).
    deadline = time.monotonic() + 30
    while _listening(head.port) and time.monotonic() < deadline:
        time.sleep(0.2)
    facts = _probe(TMPDIR=tmpdir)
    assert facts["cluster"] == "stale", (facts, _listening(head.port), ray_cmdlines())
    assert facts["cluster_file"] == os.path.join(tmpdir, "ray", "ray_current_cluster")
    finding = _codes(facts)["RAY_CLUSTER_STALE"]
    assert finding.fix.startswith("ray stop") and "RAY_ADDRESS" not in finding.fix
    assert "RAY_CLUSTER_UNREACHABLE" not in _codes(facts)
    assert _codes(facts, {"use_ray": True})["RAY_CLUSTER_STALE"].severity == "error"
