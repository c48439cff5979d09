"""SIGKILL / exit 137 judged against the memory evidence: recorded files, then for real
under a memory cgroup (root only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from shop_r1_doctor.memwatch import (
    CgroupMemory,
    MemoryEvidence,
    memory_finding,
    parse_counters,
    parse_limit,
    parse_mountinfo,
    parse_proc_cgroup,
)

# Recorded on the development container (cgroup v1 memory controller, v2 mounted beside it).
PROC_CGROUP = "9:name=systemd:/\n4:memory:/process_api/066bbc95\n1:cpu:/\n0::/\n"
MOUNTINFO = (
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)
OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
EVENTS_V2 = "low 0\nhigh 0\nmax 31\noom 1\noom_kill 1\noom_group_kill 0\n"


def test_recorded_files_parse():
    assert parse_proc_cgroup(PROC_CGROUP) == {"v1": "/process_api/066bbc95", "v2": "/"}
    assert parse_mountinfo(MOUNTINFO) == {
        "v1": ("/sys/fs/cgroup/memory", "/"),
        "v2": ("/sys/fs/cgroup/unified", "/"),
    }
    assert parse_counters(OOM_CONTROL)["oom_kill"] == 1
    assert parse_counters(EVENTS_V2)["oom"] == 1
    assert parse_limit("9223372036854771712\n") is None  # v1's "no limit"
    assert parse_limit("max\n") is None
    assert parse_limit("268435456\n") == 256 << 20


def _level(oom_kill, limit=256 << 20, path="/job"):
    return CgroupMemory(path=path, version=2, limit=limit, oom=oom_kill, oom_kill=oom_kill)


def test_counter_that_rose_is_an_error_naming_limit_and_counter():
    ev = MemoryEvidence((_level(0),), (_level(1),), kernel_lines=None, pid=42)
    f = memory_finding(ev, killed=True, signal="SIGKILL")
    assert f is not None and (f.code, f.severity) == ("HOST_OOM_KILLED", "error")
    assert "256.0 MiB" in f.title and "oom_kill 0 -> 1" in f.detail


def test_kernel_line_for_the_child_is_evidence():
    line = "Memory cgroup out of memory: Killed process 42 (python) total-vm:953096kB"
    ev = MemoryEvidence((_level(0),), (_level(0),), kernel_lines=(line,), pid=42)
    f = memory_finding(ev, killed=True, signal="SIGKILL")
    assert f is not None and f.severity == "error"
    other = MemoryEvidence((_level(0),), (_level(0),), kernel_lines=(line,), pid=7)
    f = memory_finding(other, killed=True, signal="SIGKILL")  # another process's OOM
    assert f is not None and (f.code, f.severity) == ("KILLED_WITHOUT_OOM_EVIDENCE", "info")


# Recorded on the development machine (tests/faults/container_limits.py, docker run
# --memory 64m): the kernel names the container's cgroup, not the command's.
CONTAINER_OOM = (
    "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=7aa1aa30fb15,mems_allowed=0,"
    "oom_memcg=/docker/7aa1aa30fb15,task_memcg=/docker/7aa1aa30fb15,task=python3,pid=8499,uid=0"
)
DOCKER_RUN = ("docker", "run", "--memory", "64m", "img", "python3", "train.py")


def test_an_oom_kill_in_the_container_the_command_started_is_an_error():
    ev = MemoryEvidence((_level(0),), (_level(0),), kernel_lines=(CONTAINER_OOM,), pid=42)
    f = memory_finding(ev, killed=True, signal=None, argv=DOCKER_RUN)
    assert f is not None and (f.code, f.severity) == ("HOST_OOM_KILLED", "error")
    assert "/docker/7aa1aa30fb15" in f.detail
    sudo = ("/usr/bin/sudo", "/usr/bin/podman", "run", "-m", "2g", "img")
    f = memory_finding(ev, killed=True, signal=None, argv=sudo)
    assert f is not None and f.severity == "error"


def test_an_oom_kill_in_a_container_beside_a_script_is_a_warning():
    # a script that runs docker itself: the kill is likely its container's, not surely
    ev = MemoryEvidence((_level(0),), (_level(0),), kernel_lines=(CONTAINER_OOM,), pid=42)
    f = memory_finding(ev, killed=True, signal=None, argv=("bash", "launch.sh"))
    assert f is not None and (f.code, f.severity) == ("HOST_OOM_KILLED", "warning")


def test_an_oom_kill_outside_any_container_is_not_this_runs():
    line = CONTAINER_OOM.replace("/docker/7aa1aa30fb15", "/user.slice/user-1000.slice")
    ev = MemoryEvidence((_level(0),), (_level(0),), kernel_lines=(line,), pid=42)
    f = memory_finding(ev, killed=True, signal=None, argv=DOCKER_RUN)
    assert f is not None and f.code == "KILLED_WITHOUT_OOM_EVIDENCE"
    # and a run that was not killed claims no kill
    ev = MemoryEvidence((_level(0),), (_level(0),), kernel_lines=(CONTAINER_OOM,), pid=42)
    assert memory_finding(ev, killed=False, signal=None, argv=DOCKER_RUN) is None


@pytest.mark.parametrize("ev", [None, MemoryEvidence((), (), None)])
def test_sigkill_without_evidence_is_only_a_hint(ev):
    f = memory_finding(ev, killed=True, signal=None)
    assert f is not None and (f.code, f.severity) == ("KILLED_WITHOUT_OOM_EVIDENCE", "info")
    assert memory_finding(ev, killed=False, signal=None) is None


# --- for real ---------------------------------------------------------------------------

SHOP_R1 = [sys.executable, "-m", "shop_r1.cli"]
ALLOCATE = "x = []\nwhile True:\n    x.append(b'x' * (16 << 20))\n"


def _limited_cgroup(limit: int) -> Path:
    """A new memory cgroup with `limit`, where this machine lets root make one; else skip."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("needs root to create a memory cgroup")
    where = parse_proc_cgroup(Path("/proc/self/cgroup").read_text())
    mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    name = f"shop-r1-test-{uuid.uuid4().hex[:8]}"
    v2 = mounts.get("v2")
    if v2 and "memory" in _read(Path(v2[0], "cgroup.subtree_control")).split():
        # a child of the v2 root: the root may hold processes and delegates memory
        cg = Path(v2[0], name)
        cg.mkdir()
        Path(cg, "memory.max").write_text(str(limit))
        if Path(cg, "memory.swap.max").exists():
            Path(cg, "memory.swap.max").write_text("0")
        return cg
    if "v1" in mounts and "v1" in where:
        mount, root = mounts["v1"]
        rel = where["v1"][len(root) :] if where["v1"].startswith(root) else where["v1"]
        cg = Path(mount, *[p for p in rel.split("/") if p], name)
        try:
            cg.mkdir()
        except OSError as exc:
            pytest.skip(f"cannot create a v1 memory cgroup here: {exc.strerror}")
        Path(cg, "memory.limit_in_bytes").write_text(str(limit))
        return cg
    pytest.skip("no cgroup v2 hierarchy with the memory controller, nor a v1 memory hierarchy")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _run_in(cg: Path, tmp_path: Path, *command: str) -> tuple[int, dict]:
    argv = [*SHOP_R1, "run", "--fast", "--json", "--report-dir", str(tmp_path / "run"), "--"]
    # shop-r1 itself joins the cgroup (as a container's or a job's processes do) and its
    # child inherits it.
    wrapper = f'echo $$ > {cg}/cgroup.procs && exec "$@"'
    proc = subprocess.run(
        ["sh", "-c", wrapper, "sh", *argv, *command],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)


def test_child_past_a_real_memory_limit_is_an_oom_error(tmp_path):
    cg = _limited_cgroup(256 << 20)
    try:
        status, doc = _run_in(cg, tmp_path, sys.executable, "-c", ALLOCATE)
    finally:
        cg.rmdir()
    assert status == 137
    assert doc["run"]["signal"] == "SIGKILL" and doc["run"]["exit_status"] == 137
    lead = doc["causes"][0]
    assert (lead["code"], lead["severity"]) == ("HOST_OOM_KILLED", "error")
    assert "256.0 MiB" in lead["title"]
    assert any("oom_kill" in e["text"] for e in lead["evidence"])


def test_sigkill_with_no_memory_pressure_is_only_a_hint(tmp_path):
    cg = _limited_cgroup(1 << 30)
    kill = "import os, signal; print('up', flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    try:
        status, doc = _run_in(cg, tmp_path, sys.executable, "-c", kill)
    finally:
        cg.rmdir()
    assert status == 137
    codes = {c["code"]: c["severity"] for c in doc["causes"]}
    assert codes.get("KILLED_WITHOUT_OOM_EVIDENCE") == "info"
    assert "HOST_OOM_KILLED" not in codes
    assert not [c for c in doc["causes"] if c["severity"] == "error"]
