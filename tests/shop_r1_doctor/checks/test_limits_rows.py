"""Decision rows for the limits checks (shop_r1_doctor/checks/limits.py): each row's codes,
severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/limits.txt.

Hand-worked rules and thresholds:
- open files: soft RLIMIT_NOFILE < 4096 warns unless the plan runs no DataLoader workers;
  the fix raises the soft limit to min(hard, 65535), or names the hard limit when it is
  below 4096;
- processes: a run needs ranks x (2 x usable cores + workers (plan, else 2) + 16); on 2
  cores and no GPU that is 22. The pids cgroup warns when max - current < need; RLIMIT_NPROC
  when soft < need for a non-root user (root is exempt);
- address space: a finite soft RLIMIT_AS warns; below the visible GPUs' total memory it is
  an error;
- caches: not writable or on a read-only mount is an error, the fix names the variable to
  set (HF_HOME for a Hub/datasets/modules cache not set on its own);
- NCCL_SOCKET_IFNAME: prefixes, = exact, ^ excludes; no interface left is an error. A bare
  ^ excludes nothing. GLOO_SOCKET_IFNAME names must exist exactly;
- PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF: an unknown key, an entry without ':', a
  boolean that is not True/False, an unknown backend: error; a key newer than this torch
  (compat.yaml `since`): info.
"""

from __future__ import annotations

import pytest
from check_wording import assert_row

from shop_r1_doctor.checks.limits import (
    address_space_limit,
    alloc_conf,
    cache_not_writable,
    fd_limit,
    process_limit,
    socket_ifname,
)

GIB = 1024**3
H100 = {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "compute_capability": "9.0",
    "memory_total_bytes": 85520809984,
}
HOST = {"os": "linux", "cpu_count": 2, "cpu_usable": 2}


def _rl(soft: int, hard: int | None = None) -> dict:
    return {"soft": soft, "hard": soft if hard is None else hard}


# ----------------------------------------------------------------- open files
# (case, soft, hard, plan workers, expected)
FD_ROWS = [
    (
        "ulimit -n 128 (recorded failure)",
        128,
        128,
        None,
        [("warning", "128", "nofile=65535:65535")],
    ),
    ("default 1024, hard 1M", 1024, 1048576, None, [("warning", "1024", "ulimit -n 65535")]),
    ("1024, hard 8192: raise to the hard limit", 1024, 8192, None, [("warning", "ulimit -n 8192")]),
    ("4095: just below", 4095, 4095, 4, [("warning", "4095")]),
    ("4096: enough", 4096, 4096, None, []),
    ("unlimited", -1, -1, None, []),
    ("1024 but the plan runs no workers", 1024, 1024, 0, []),
]


def _fd_snap(soft, hard, workers) -> dict:
    snap: dict = {"host": HOST, "limits": {"rlimits": {"nofile": _rl(soft, hard)}}}
    if workers is not None:
        snap["plan"] = {"dataloader_num_workers": workers}
    return snap


@pytest.mark.parametrize(
    ("soft", "hard", "workers", "expected"), [r[1:] for r in FD_ROWS], ids=[r[0] for r in FD_ROWS]
)
def test_fd_limit_rows(soft, hard, workers, expected) -> None:
    want = [("DATALOADER_FD_LIMIT", sev, *facts) for sev, *facts in expected]
    assert_row(fd_limit, _fd_snap(soft, hard, workers), want)


def test_fd_limit_not_probed_is_quiet() -> None:
    assert_row(fd_limit, {"host": HOST}, [])
    assert_row(fd_limit, {"limits": {"rlimits": {"nofile": {"soft": "x"}}}}, [])


# ----------------------------------------------------------------- processes and threads
# (case, pids cgroup, nproc soft, euid, gpus, cores, expected)
PIDS_ROWS = [
    (
        "pids.max 4 (recorded failure)",
        {"max": 4, "current": 1, "path": "/job"},
        -1,
        0,
        [],
        2,
        [("warning", "4", "22", "/job")],
    ),
    (
        "headroom 21 of 22",
        {"max": 30, "current": 9, "path": "/"},
        -1,
        0,
        [],
        2,
        [("warning", "30")],
    ),
    ("headroom 22: enough", {"max": 31, "current": 9, "path": "/"}, -1, 0, [], 2, []),
    ("no pids limit", {"max": -1, "current": 9, "path": "/"}, -1, 0, [], 2, []),
    (
        "8 H100s, 64 cores, pod limit 1024: needs 1168",
        {"max": 1024, "current": 40, "path": "/kubepods/p"},
        -1,
        0,
        [dict(H100, index=i) for i in range(8)],
        64,
        [("warning", "1024", "1168")],
    ),
    (
        "ulimit -u 6 as nobody",
        None,
        6,
        65534,
        [],
        2,
        [("warning", "6", "uid 65534", "limits.conf nproc")],
    ),
    ("ulimit -u 6 as root: exempt", None, 6, 0, [], 2, []),
    ("nproc 4096 as a user", None, 4096, 1000, [], 2, []),
]


def _pids_snap(pids, nproc, euid, gpus, cores) -> dict:
    limits: dict = {"rlimits": {"nproc": _rl(nproc)}, "euid": euid}
    if pids is not None:
        limits["pids_cgroup"] = {"version": "v2", **pids}
    return {"host": {**HOST, "cpu_usable": cores}, "gpus": gpus, "limits": limits}


@pytest.mark.parametrize(
    ("pids", "nproc", "euid", "gpus", "cores", "expected"),
    [r[1:] for r in PIDS_ROWS],
    ids=[r[0] for r in PIDS_ROWS],
)
def test_process_limit_rows(pids, nproc, euid, gpus, cores, expected) -> None:
    want = [("PROCESS_LIMIT_REACHED", sev, *facts) for sev, *facts in expected]
    assert_row(process_limit, _pids_snap(pids, nproc, euid, gpus, cores), want)


# ----------------------------------------------------------------- address space
AS_ROWS = [
    ("ulimit -v 2000000, no GPU", 2048000000, [], [("warning", "1.9 GiB", "ulimit -v unlimited")]),
    ("64 GiB with an 80 GB H100", 64 * GIB, [H100], [("error", "64.0 GiB", "79.6 GiB")]),
    ("128 GiB with an 80 GB H100", 128 * GIB, [H100], [("warning", "128.0 GiB")]),
    ("unlimited with an H100", -1, [H100], []),
]


@pytest.mark.parametrize(
    ("soft", "gpus", "expected"), [r[1:] for r in AS_ROWS], ids=[r[0] for r in AS_ROWS]
)
def test_address_space_rows(soft, gpus, expected) -> None:
    snap = {"gpus": gpus, "limits": {"rlimits": {"address_space": _rl(soft, -1)}}}
    want = [("ADDRESS_SPACE_LIMIT", sev, *facts) for sev, *facts in expected]
    assert_row(address_space_limit, snap, want)


def test_address_space_hard_limit_names_the_scheduler() -> None:
    snap = {"limits": {"rlimits": {"address_space": _rl(4 * GIB, 4 * GIB)}}}
    assert_row(address_space_limit, snap, [("ADDRESS_SPACE_LIMIT", "warning", "Slurm --mem")])


# ----------------------------------------------------------------- caches
TMP_OK = {
    "name": "TMPDIR",
    "path": "/tmp",
    "checked": "/tmp",
    "writable": True,
    "read_only_mount": False,
}


def _cache(name, path, checked=None, writable=True, ro=False) -> dict:
    return {
        "name": name,
        "path": path,
        "checked": checked or path,
        "writable": writable,
        "read_only_mount": ro,
    }


CACHE_ROWS = [
    (
        "HF_HOME on a read-only mount",
        [_cache("HF_HOME", "/mnt/hf", ro=True)],
        {},
        [("HF_HOME", "/mnt/hf", "read-only", "export HF_HOME=/tmp/hf_home")],
    ),
    (
        "hub cache of root, HF_HOME not set: fix HF_HOME",
        [_cache("HF_HUB_CACHE", "~/.cache/huggingface/hub", "~/.cache", writable=False)],
        {},
        [("HF_HUB_CACHE", "~/.cache", "export HF_HOME=")],
    ),
    (
        "datasets cache set on its own",
        [_cache("HF_DATASETS_CACHE", "/shared/ds", writable=False)],
        {"HF_DATASETS_CACHE": "/shared/ds"},
        [("/shared/ds", "export HF_DATASETS_CACHE=")],
    ),
    (
        "Triton's cache",
        [_cache("TRITON_CACHE_DIR", "~/.triton/cache", "~", writable=False)],
        {},
        [("~/.triton/cache", "export TRITON_CACHE_DIR=/tmp/triton_cache_dir")],
    ),
    (
        "three HF caches under one read-only HF_HOME: said once",
        [_cache(n, "/ro/hf", ro=True) for n in ("HF_HOME", "HF_HUB_CACHE", "HF_MODULES_CACHE")],
        {},
        [("/ro/hf",)],
    ),
    ("all writable", [_cache("HF_HOME", "/data/hf")], {}, []),
    ("writability unknown", [{"name": "HF_HOME", "path": "/x", "writable": None}], {}, []),
]


@pytest.mark.parametrize(
    ("caches", "env", "expected"), [r[1:] for r in CACHE_ROWS], ids=[r[0] for r in CACHE_ROWS]
)
def test_cache_rows(caches, env, expected) -> None:
    snap = {"limits": {"caches": [*caches, TMP_OK]}, "env": env}
    want = [("CACHE_DIR_NOT_WRITABLE", "error", *facts) for facts in expected]
    assert_row(cache_not_writable, snap, want)


def test_temp_dir_not_writable_asks_for_a_directory_you_own() -> None:
    snap = {"limits": {"caches": [_cache("TMPDIR", "/tmp", ro=True)]}, "env": {}}
    assert_row(
        cache_not_writable,
        snap,
        [("CACHE_DIR_NOT_WRITABLE", "error", "export TMPDIR=<a directory you own>")],
    )


# ----------------------------------------------------------------- socket interfaces
IFACES = ["eth0", "ib0", "lo"]
IFNAME_ROWS = [
    (
        "nosuch0 (recorded failure)",
        {"NCCL_SOCKET_IFNAME": "nosuch0"},
        IFACES,
        ["nosuch0", "eth0, ib0, lo"],
    ),
    ("eth: a prefix of eth0", {"NCCL_SOCKET_IFNAME": "eth"}, IFACES, None),
    ("=eth: exact, no such name", {"NCCL_SOCKET_IFNAME": "=eth"}, IFACES, ["=eth"]),
    ("=eth0: exact", {"NCCL_SOCKET_IFNAME": "=eth0"}, IFACES, None),
    ("ens,eth: one of two", {"NCCL_SOCKET_IFNAME": "ens,eth"}, IFACES, None),
    ("^eth,ib,lo: excludes all", {"NCCL_SOCKET_IFNAME": "^eth,ib,lo"}, IFACES, ["excludes every"]),
    ("^docker,lo: NCCL's default", {"NCCL_SOCKET_IFNAME": "^docker,lo"}, IFACES, None),
    ("^ alone: excludes nothing", {"NCCL_SOCKET_IFNAME": "^"}, IFACES, None),
    ("^= alone", {"NCCL_SOCKET_IFNAME": "^="}, IFACES, None),
    ("empty", {"NCCL_SOCKET_IFNAME": " "}, IFACES, None),
    ("gloo: eth0 exists", {"GLOO_SOCKET_IFNAME": "eth0"}, IFACES, None),
    ("gloo: eth is not a name", {"GLOO_SOCKET_IFNAME": "eth"}, IFACES, ["GLOO_SOCKET_IFNAME=eth"]),
    ("interfaces not probed", {"NCCL_SOCKET_IFNAME": "nosuch0"}, None, None),
]


@pytest.mark.parametrize(
    ("env", "ifaces", "facts"), [r[1:] for r in IFNAME_ROWS], ids=[r[0] for r in IFNAME_ROWS]
)
def test_socket_ifname_rows(env, ifaces, facts) -> None:
    snap = {"env": env, "limits": {} if ifaces is None else {"net_interfaces": ifaces}}
    want = [] if facts is None else [("NCCL_SOCKET_IFNAME_NO_MATCH", "error", *facts)]
    assert_row(socket_ifname, snap, want)


# ----------------------------------------------------------------- allocator config
ALLOC_ROWS = [
    (
        "misspelt key (recorded failure)",
        "expandable_segment:True",
        "2.11.0",
        [
            (
                "error",
                "expandable_segment",
                "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            )
        ],
    ),
    (
        "lower-case true",
        "expandable_segments:true",
        "2.13.0",
        [("error", "'true'", "expandable_segments:True")],
    ),
    ("garbage", "!!!", "2.13.0", [("error", "'!!!'", "unset PYTORCH_CUDA_ALLOC_CONF")]),
    (
        "unknown key, nothing close",
        "foo:1,max_split_size_mb:128",
        "2.13.0",
        [("error", "'foo'", "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128")],
    ),
    ("unknown backend", "backend:cudaMalloc", "2.13.0", [("error", "cudaMalloc")]),
    (
        "expandable_segments on torch 2.0: newer key",
        "expandable_segments:True",
        "2.0.1",
        [("info", "2.1", "2.0.1")],
    ),
    ("valid pair", "expandable_segments:True,max_split_size_mb:128", "2.13.0", []),
    ("valid list value with spaces", "roundup_power2_divisions:[256:1, 512:2, >:4]", "2.13.0", []),
    ("cudaMallocAsync", "backend:cudaMallocAsync", "2.13.0", []),
]


@pytest.mark.parametrize(
    ("value", "torch", "expected"), [r[1:] for r in ALLOC_ROWS], ids=[r[0] for r in ALLOC_ROWS]
)
def test_alloc_conf_rows(value, torch, expected) -> None:
    snap = {"env": {"PYTORCH_CUDA_ALLOC_CONF": value}, "packages": {"torch": {"version": torch}}}
    want = [("CUDA_ALLOC_CONF_INVALID", sev, *facts) for sev, *facts in expected]
    assert_row(alloc_conf, snap, want)


def test_alloc_conf_reads_the_new_name_too_and_needs_torch() -> None:
    snap = {
        "env": {"PYTORCH_ALLOC_CONF": "expandable_segment:True"},
        "packages": {"torch": {"version": "2.13.0"}},
    }
    assert_row(alloc_conf, snap, [("CUDA_ALLOC_CONF_INVALID", "error", "PYTORCH_ALLOC_CONF")])
    no_torch = {"env": {"PYTORCH_CUDA_ALLOC_CONF": "nonsense"}, "packages": {"torch": None}}
    assert_row(alloc_conf, no_torch, [])


SNAPSHOTS = [
    *[(r[0], _fd_snap(*r[1:4])) for r in FD_ROWS],
    *[(r[0], _pids_snap(*r[1:6])) for r in PIDS_ROWS],
    *[
        (r[0], {"gpus": r[2], "limits": {"rlimits": {"address_space": _rl(r[1], -1)}}})
        for r in AS_ROWS
    ],
    *[(r[0], {"limits": {"caches": [*r[1], TMP_OK]}, "env": r[2]}) for r in CACHE_ROWS],
    *[
        (r[0], {"env": r[1], "limits": {"net_interfaces": r[2]} if r[2] else {}})
        for r in IFNAME_ROWS
    ],
    *[
        (r[0], {"env": {"PYTORCH_CUDA_ALLOC_CONF": r[1]}, "packages": {"torch": {"version": r[2]}}})
        for r in ALLOC_ROWS
    ],
]
