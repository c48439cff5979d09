"""`launch --ray` scripts run for real against real Ray heads.

The interpreter is a stand-in for the doctor and the trainer only; every Ray command goes
to the real Python. The "training" connects with `ray.init()` the way a Ray trainer does
and prints the GCS address it got, so the tests see which cluster the run joined.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")

from test_script import _free_port  # noqa: E402

from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch  # noqa: E402
from shop_r1_doctor.profiles.model import get_profile  # noqa: E402

pytestmark = pytest.mark.ray

FAKE = r"""#!/usr/bin/env bash
case "$*" in
  *" doctor"*) echo "doctor ok"; exit 0 ;;
  *" train "*"--dry-run"*) echo "preflight args: $*"; exit 0 ;;  # the launch preflight
  *" train "*)
    echo "trainer RAY_ADDRESS=$RAY_ADDRESS"
    echo "trainer args: $*"
    echo '{"steps": 1}' > "$SHOP_R1_NODE_SUMMARY"  # as `shop-r1 train` writes it
    exec REAL -c 'import ray; ray.init(logging_level="ERROR", log_to_driver=False); print("joined", ray.get_runtime_context().gcs_address)' ;;
  *) exec REAL "$@" ;;
esac
"""


def _pids_of(marker: str) -> list[int]:
    import psutil

    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(marker in a for a in p.info.get("cmdline") or [])
    ]


def _kill(marker: str) -> None:
    for pid in _pids_of(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    return {**env, "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _script(tmp_path: Path, profile: str = "cpu", gpus: int = 0, nodes: int = 1) -> Path:
    fake = tmp_path / "fakepy"
    fake.write_text(FAKE.replace("REAL", sys.executable))
    fake.chmod(0o755)
    req = LaunchRequest(
        task="sft",
        profile=get_profile(profile),
        python=sys.executable,
        gpus=gpus,
        nodes=nodes,
        data="d.jsonl",
        ray=True,
    )
    for name, text in render_launch(plan_launch(req), "run.sh").files.items():
        (tmp_path / name).write_text(text)
    return tmp_path / "run.sh"


def _run(script: Path, **env: str) -> subprocess.CompletedProcess:
    full = _env(RUN_DIR=str(script.parent / "rundir"), PYTHON=str(script.parent / "fakepy"), **env)
    return subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=full, timeout=300
    )


@pytest.fixture
def short_dirs():
    made = [tempfile.mkdtemp(prefix="l", dir="/tmp") for _ in range(2)]
    yield made
    for d in made:
        _kill(d)
        shutil.rmtree(d, ignore_errors=True)


def _raylets(session_root: str) -> list[int]:
    """Raylets of one cluster: every node's raylet names the head's session directory."""
    return sorted(set(_pids_of(session_root)) & set(_pids_of("/raylet")))


def _start_head(head_dir: str, own_dir: str, port: int) -> None:
    start = subprocess.run(
        [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--head",
            "--num-cpus",
            "1",
            "--port",
            str(port),
            "--temp-dir",
            head_dir,
            "--dashboard-port",
            str(_free_port()),
            "--ray-client-server-port",
            str(_free_port()),
            "--disable-usage-stats",
        ],
        env=_env(TMPDIR=own_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert start.returncode == 0, start.stderr[-1500:]


def test_launch_ray_other_node_joins_serves_and_leaves_with_the_head(tmp_path, short_dirs):
    """MACHINE_RANK=1 of a two-node --ray script: it joins the head, trains nothing itself
    (no preflight, no `train`), stays while the head answers, then exits 0 and stops the
    raylet it started."""
    head_dir, own_dir = short_dirs
    port = _free_port()
    _start_head(head_dir, own_dir, port)
    script = _script(tmp_path, profile="hopper", gpus=1, nodes=2)
    env = _env(
        RUN_DIR=str(tmp_path / "rundir"),
        PYTHON=str(tmp_path / "fakepy"),
        TMPDIR=own_dir,
        MACHINE_RANK="1",
        MAIN_PROCESS_IP="127.0.0.1",
        RAY_PORT=str(port),
    )
    head_raylets = set(_raylets(head_dir))
    proc = subprocess.Popen(
        ["bash", str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    log = tmp_path / "rundir" / "launch.node1.log"
    try:
        deadline = time.monotonic() + 120
        while "this node serves the Ray cluster" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the node never joined"
            time.sleep(0.5)
        ours = set(_raylets(head_dir)) - head_raylets
        assert len(ours) == 1, "the node started no raylet of its own"
        time.sleep(2)
        assert proc.poll() is None, "the node left a cluster whose head still answers"
        # the head goes away (its GCS): the run is over for this node
        for pid in set(_pids_of("gcs_server")) & set(_pids_of(head_dir)):
            os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "the Ray head at 127.0.0.1:" in err and "is gone: the run is over" in err
    assert "stopping the Ray processes this script started" in err
    assert not (tmp_path / "rundir" / "preflight.node1.log").exists()
    assert not (tmp_path / "rundir" / "sft.node1.log").exists()
    assert not ours & set(_raylets(head_dir)), "the node's raylet outlived its script"


def test_launch_ray_joins_a_running_head_and_leaves_it_running(tmp_path, short_dirs):
    head_dir, own_dir = short_dirs
    port = _free_port()
    start = subprocess.run(
        [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--head",
            "--num-cpus",
            "1",
            "--port",
            str(port),
            "--temp-dir",
            head_dir,
            "--dashboard-port",
            str(_free_port()),
            "--ray-client-server-port",
            str(_free_port()),
            "--disable-usage-stats",
        ],
        env=_env(TMPDIR=own_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert start.returncode == 0, start.stderr[-1500:]
    head = _pids_of(head_dir)
    # TMPDIR: no /tmp/ray address file of another Ray is in the way; RAY_TEMP_DIR would
    # be where the script starts its own head (it must not).
    proc = _run(_script(tmp_path), TMPDIR=own_dir, RAY_TEMP_DIR=f"{own_dir}/ray")
    assert proc.returncode == 0, proc.stderr
    assert "joining the Ray cluster already running at" in proc.stderr
    log = (tmp_path / "rundir" / "sft.log").read_text()
    joined = next(line for line in log.splitlines() if " joined " in line).split()[-1]
    assert joined.endswith(f":{port}")
    assert f"trainer RAY_ADDRESS={joined}" in log
    # one command on the head trains on that cluster (Ray Train), its preflight too
    assert f"--ray {joined}" in next(line for line in log.splitlines() if "trainer args:" in line)
    preflight = (tmp_path / "rundir" / "preflight.log").read_text()
    assert f"--ray {joined} --dry-run" in preflight and "accelerate" not in log
    assert not _pids_of(f"{own_dir}/ray"), "a second head was started"
    assert set(head) <= set(_pids_of(head_dir)), "the cleanup stopped the cluster it joined"


def test_launch_ray_starts_its_own_head_and_stops_only_that(tmp_path, short_dirs):
    own_dir, _ = short_dirs
    port = _free_port()
    proc = _run(
        _script(tmp_path), TMPDIR=own_dir, RAY_TEMP_DIR=f"{own_dir}/ray", RAY_PORT=str(port)
    )
    assert proc.returncode == 0, proc.stderr
    assert f"starting a Ray head on port {port}" in proc.stderr
    assert "stopping the Ray processes this script started" in proc.stderr
    log = (tmp_path / "rundir" / "sft.log").read_text()
    assert any(line.endswith(f":{port}") and " joined " in line for line in log.splitlines())
    assert not _pids_of(f"{own_dir}/ray"), "the head the script started is still running"
    # its address file goes with it: left behind, the next run refused the dead head (2x H200)
    assert not os.path.exists(f"{own_dir}/ray/ray_current_cluster")


def test_launch_ray_unreachable_ray_address_fails_on_the_terminal(tmp_path, short_dirs):
    own_dir, _ = short_dirs
    proc = _run(
        _script(tmp_path),
        TMPDIR=own_dir,
        RAY_TEMP_DIR=f"{own_dir}/ray",
        RAY_ADDRESS=f"127.0.0.1:{_free_port()}",
    )
    assert proc.returncode == 1
    assert "error: RAY_ADDRESS=127.0.0.1:" in proc.stderr
    assert "no Ray cluster answers there" in proc.stderr
