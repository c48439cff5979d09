"""The limits probe: on this machine (real rlimits, cgroups, caches, interfaces), from a
fake root (pids cgroups v1 and v2, read-only and foreign caches), and never a traceback on
odd environments."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest
from doctor_fakes import make_deps

from shop_r1_doctor.facts import Facts
from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.probes.limits import cache_dirs, cache_state, pids_cgroup, probe_limits

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="Linux only")


@linux_only
def test_this_machine_values_are_the_real_ones():
    section = probe_limits(ProbeDeps())["limits"]
    facts = Facts({"limits": section}).limits
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert (facts.rlimits.nofile.soft, facts.rlimits.nofile.hard) == (soft, hard)
    inf = resource.RLIM_INFINITY
    as_soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    assert facts.rlimits.address_space.soft == (-1 if as_soft == inf else as_soft)
    assert facts.euid == os.geteuid()
    assert sorted(facts.net_interfaces) == sorted(os.listdir("/sys/class/net"))
    by_name = {c.name: c for c in facts.caches}
    assert set(by_name) == {
        "HF_HOME",
        "HF_HUB_CACHE",
        "HF_DATASETS_CACHE",
        "HF_MODULES_CACHE",
        "TRITON_CACHE_DIR",
        "TORCHINDUCTOR_CACHE_DIR",
        "TMPDIR",
    }
    import tempfile

    tmp = by_name["TMPDIR"]
    assert tmp.path == tempfile.gettempdir()
    assert (tmp.writable, tmp.read_only_mount) == (os.access(tmp.path, os.W_OK), False)


@linux_only
def test_a_child_under_ulimit_sees_its_own_limits(tmp_path):
    """The probe reads the process it runs in: `ulimit -n 256 -v 4000000` in the shell."""
    code = (
        "import json; from shop_r1_doctor.probes.limits import probe_limits;"
        "from shop_r1_doctor.probes.deps import ProbeDeps;"
        "print(json.dumps(probe_limits(ProbeDeps())['limits']['rlimits']))"
    )
    out = subprocess.run(
        ["bash", "-c", f'ulimit -n 256 && ulimit -v 4000000 && {sys.executable} -c "{code}"'],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    ).stdout
    import json

    got = json.loads(out)
    assert got["nofile"] == {"soft": 256, "hard": 256}
    assert got["address_space"]["soft"] == 4000000 * 1024


def _cgroup_root(tmp_path, proc_cgroup: str, mountinfo: str, files: dict[str, str]):
    root = tmp_path / "root"
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/cgroup").write_text(proc_cgroup)
    (root / "proc/self/mountinfo").write_text(mountinfo)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
V1_MOUNT = "35 29 0:31 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n"


def test_pids_v2_tightest_level_wins(tmp_path):
    root = _cgroup_root(
        tmp_path,
        "0::/kubepods/pod1/ctr\n",
        V2_MOUNT,
        {
            "sys/fs/cgroup/kubepods/pod1/ctr/pids.max": "max\n",
            "sys/fs/cgroup/kubepods/pod1/ctr/pids.current": "7\n",
            "sys/fs/cgroup/kubepods/pod1/pids.max": "1024\n",
            "sys/fs/cgroup/kubepods/pod1/pids.current": "1000\n",
            "sys/fs/cgroup/kubepods/pids.max": "4096\n",
            "sys/fs/cgroup/kubepods/pids.current": "1010\n",
        },
    )
    got = pids_cgroup(make_deps(tmp_path, root=root))
    assert got == {"version": "v2", "path": "/kubepods/pod1", "max": 1024, "current": 1000}


def test_pids_v1_and_no_limit(tmp_path):
    root = _cgroup_root(
        tmp_path,
        "8:pids:/docker/abc\n4:memory:/docker/abc\n",
        V1_MOUNT,
        {
            "sys/fs/cgroup/pids/docker/abc/pids.max": "64\n",
            "sys/fs/cgroup/pids/docker/abc/pids.current": "3\n",
        },
    )
    assert pids_cgroup(make_deps(tmp_path, root=root)) == {
        "version": "v1",
        "path": "/docker/abc",
        "max": 64,
        "current": 3,
    }
    bare = _cgroup_root(tmp_path / "b", "8:pids:/\n", V1_MOUNT, {})
    assert pids_cgroup(make_deps(tmp_path / "b", root=bare))["max"] == -1  # visible, no limit
    (tmp_path / "c").mkdir()
    assert pids_cgroup(make_deps(tmp_path / "c")) is None  # no /proc at all


@pytest.mark.parametrize(
    "garbage",
    ["0::\n", "nonsense", "8:pids\n", ""],
)
def test_odd_cgroup_files_never_raise(tmp_path, garbage):
    root = _cgroup_root(tmp_path, garbage, "garbage - line\n" + V2_MOUNT, {})
    got = pids_cgroup(make_deps(tmp_path, root=root))
    assert got is None or got["max"] == -1


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write where the mode says not")
def test_a_directory_of_another_mode_is_not_writable(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    state = cache_state(str(locked / "hf" / "hub"))
    assert (state["exists"], state["checked"], state["writable"]) == (False, str(locked), False)


def test_nearest_existing_parent_and_a_file_in_the_way(tmp_path):
    state = cache_state(str(tmp_path / "a" / "b"))
    assert (state["exists"], state["checked"], state["writable"]) == (False, str(tmp_path), True)
    (tmp_path / "file").write_text("x")
    assert cache_state(str(tmp_path / "file"))["writable"] is False


def test_cache_paths_follow_the_variables_the_libraries_read():
    env = {
        "HF_HOME": "/data/hf",
        "HF_DATASETS_CACHE": "/scratch/ds",
        "TMPDIR": "/scratch/tmp",
        "USER": "alice",
    }
    got = dict(cache_dirs(env, "/home/alice"))
    assert got == {
        "HF_HOME": "/data/hf",
        "HF_HUB_CACHE": "/data/hf/hub",
        "HF_DATASETS_CACHE": "/scratch/ds",
        "HF_MODULES_CACHE": "/data/hf/modules",
        "TRITON_CACHE_DIR": "/home/alice/.triton/cache",
        "TORCHINDUCTOR_CACHE_DIR": "/scratch/tmp/torchinductor_alice",
        "TMPDIR": "/scratch/tmp",
    }
    assert dict(cache_dirs({"XDG_CACHE_HOME": "/x"}, "/h"))["HF_HUB_CACHE"] == "/x/huggingface/hub"


def test_a_probe_thread_that_cannot_start_runs_inline(tmp_path, monkeypatch):
    """Under the pids limit this probe reports, `can't start new thread`: the snapshot is
    still made, the probe run in the collecting thread."""
    import threading

    from shop_r1_doctor.probes.collect import collect_snapshot

    start = threading.Thread.start

    def refuse(self):
        if self.name in ("probe-limits", "probe-env"):
            raise RuntimeError("can't start new thread")
        return start(self)

    monkeypatch.setattr(threading.Thread, "start", refuse)
    snap = collect_snapshot(fast=True, deps=make_deps(tmp_path), timeout=5)
    assert snap["probes"]["limits"]["status"] == "ok"
    assert snap["probes"]["env"]["status"] == "ok"
    assert isinstance(snap["limits"]["caches"], list)
