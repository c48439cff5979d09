"""Decision rows for the Ray checks on this host (shop_r1_doctor/checks/ray.py): Windows,
/dev/shm, the temp dir (the cluster rows: test_ray_rows_cluster.py). Each row is a snapshot
with the facts the Ray probe writes (shop_r1_doctor/probes/ray_probe.py: the same keys,
`cluster` one of none/running/unhealthy/unreachable/stale) and the exact findings.

Thresholds, worked out by hand:
- object store: /dev/shm must be >= 30% of RAM inside a container (Ray's own rule,
  failure-modes.md); the fix asks for int(0.3 x RAM) // GiB + 1 GiB.
- Ray's temp dir (RAY_TMPDIR, else TMPDIR, else /tmp) needs 10 GiB free, and its length
  (trailing "/" dropped) + 60 characters of session socket path must fit in 107 bytes:
  47 characters pass, 48 fail.
- a plan with use_ray raises the cluster findings to errors; use_ray false or no plan keeps
  the catalog's severity."""

from __future__ import annotations

from typing import Any

import pytest
from machines import machine_snapshot
from ray_rows_facts import DOCKER_SHM, GIB, RAM, _all, ray_facts

from shop_r1_doctor.checks.ray import (
    ray_shm,
    ray_tmp,
    ray_windows,
)

# ----------------------------------------------------------------- where Ray's version comes from
WIN_DETAIL = (
    "'The raylet exited immediately because one Ray agent failed, agent_name = dashboard_agent'."
)
WIN_FIX = "WSL2/Linux; on Windows ray.init(include_dashboard=False) on one node"

# (case, snapshot, expected findings)
WINDOWS_ROWS = [
    (
        "probe section on Windows",
        {"host": {"os": "windows"}, "ray": ray_facts()},
        [
            (
                "RAY_WINDOWS_AGENT_CRASH",
                "warning",
                "Ray 2.51.1 on native Windows: the raylet can exit at start (SIGSEGV)",
                WIN_DETAIL,
                WIN_FIX,
            )
        ],
    ),
    (
        "the plan uses Ray: an error",
        {"host": {"os": "windows"}, "ray": ray_facts(), "plan": {"use_ray": True}},
        [
            (
                "RAY_WINDOWS_AGENT_CRASH",
                "error",
                "Ray 2.51.1 on native Windows: the raylet can exit at start (SIGSEGV)",
                WIN_DETAIL,
                WIN_FIX,
            )
        ],
    ),
    (
        "the plan does not use Ray",
        {"host": {"os": "windows"}, "ray": ray_facts(), "plan": {"use_ray": False}},
        [
            (
                "RAY_WINDOWS_AGENT_CRASH",
                "warning",
                "Ray 2.51.1 on native Windows: the raylet can exit at start (SIGSEGV)",
                WIN_DETAIL,
                WIN_FIX,
            )
        ],
    ),
    # a pasted `pip list` (no Ray probe): the version comes from the package list
    (
        "from the package list only",
        {"host": {"os": "windows"}, "packages": {"ray": {"version": "2.40.0"}}},
        [
            (
                "RAY_WINDOWS_AGENT_CRASH",
                "warning",
                "Ray 2.40.0 on native Windows: the raylet can exit at start (SIGSEGV)",
                WIN_DETAIL,
                WIN_FIX,
            )
        ],
    ),
    (
        "probe found no Ray (null) but the package list has it",
        {"host": {"os": "windows"}, "ray": None, "packages": {"ray": {"version": "2.40.0"}}},
        [
            (
                "RAY_WINDOWS_AGENT_CRASH",
                "warning",
                "Ray 2.40.0 on native Windows: the raylet can exit at start (SIGSEGV)",
                WIN_DETAIL,
                WIN_FIX,
            )
        ],
    ),
    (
        "a probe section without a version",
        {"host": {"os": "windows"}, "ray": {"cluster": "none"}},
        [
            (
                "RAY_WINDOWS_AGENT_CRASH",
                "warning",
                "Ray  on native Windows: the raylet can exit at start (SIGSEGV)",
                WIN_DETAIL,
                WIN_FIX,
            )
        ],
    ),
    ("Ray not installed", {"host": {"os": "windows"}, "ray": None, "packages": {"ray": None}}, []),
    ("version unparseable", {"host": {"os": "windows"}, "packages": {"ray": {"version": "x"}}}, []),
    ("Linux", {"host": {"os": "linux"}, "ray": ray_facts()}, []),
    ("OS unknown", {"ray": ray_facts()}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), WINDOWS_ROWS, ids=[r[0] for r in WINDOWS_ROWS])
def test_ray_windows_row(case, snap, want):
    assert _all(ray_windows, snap) == want


# ----------------------------------------------------------------- /dev/shm for the object store
SHM_TITLE = "/dev/shm is 0.1 GiB (< 30% of 251.8 GiB RAM): Ray's object store falls back to /tmp"
SHM_DETAIL = "'The object store is using /tmp instead of /dev/shm' - slower, and fills the disk."


def _shm_host(shm: Any, ram: Any = RAM, container: Any = "docker") -> dict:
    host = machine_snapshot("h200x2")["host"]
    return {**host, "container": container, "shm_bytes": shm, "ram_bytes": ram}


SHM_ROWS = [
    (
        "docker's default 64 MiB on the H200 box",
        {"host": _shm_host(DOCKER_SHM), "ray": ray_facts()},
        # int(0.3 * 270334464000) = 81100339200 = 75.5 GiB -> 75 + 1
        [
            (
                "RAY_OBJECT_STORE_SMALL_SHM",
                "warning",
                SHM_TITLE,
                SHM_DETAIL,
                "docker run --shm-size=76g ...",
            )
        ],
    ),
    (
        "Ray only in the package list",
        {"host": _shm_host(DOCKER_SHM), "packages": {"ray": {"version": "2.40.0"}}},
        [
            (
                "RAY_OBJECT_STORE_SMALL_SHM",
                "warning",
                SHM_TITLE,
                SHM_DETAIL,
                "docker run --shm-size=76g ...",
            )
        ],
    ),
    (
        "the H200 box as recorded (256 GiB /dev/shm)",
        {"host": _shm_host(256 * GIB), "ray": ray_facts()},
        [],
    ),
    # 0.3 x 10 GiB is exactly 3 GiB: at the line is enough
    ("exactly 30%", {"host": _shm_host(3 * GIB, 10 * GIB), "ray": ray_facts()}, []),
    (
        "one byte under 30%",
        {"host": _shm_host(3 * GIB - 1, 10 * GIB), "ray": ray_facts()},
        [
            (
                "RAY_OBJECT_STORE_SMALL_SHM",
                "warning",
                "/dev/shm is 3.0 GiB (< 30% of 10.0 GiB RAM): Ray's object store falls back to /tmp",
                SHM_DETAIL,
                "docker run --shm-size=4g ...",
            )
        ],
    ),
    ("bare metal", {"host": _shm_host(DOCKER_SHM, container=None), "ray": ray_facts()}, []),
    ("no Ray", {"host": _shm_host(DOCKER_SHM), "ray": None}, []),
    ("shm unknown", {"host": _shm_host(None), "ray": ray_facts()}, []),
    ("RAM unknown", {"host": _shm_host(DOCKER_SHM, None), "ray": ray_facts()}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), SHM_ROWS, ids=[r[0] for r in SHM_ROWS])
def test_ray_shm_row(case, snap, want):
    assert _all(ray_shm, snap) == want


# ----------------------------------------------------------------- Ray's temp dir
FULL_DETAIL = "Ray stops with '/tmp/ray/session_... is over 95% full' as logs and spills grow."
LONG_DETAIL = "'OSError: AF_UNIX path length cannot exceed 107 bytes' at ray.init()."
LONG_FIX = 'export TMPDIR=/tmp (or ray.init(_temp_dir="/tmp/ray"))'
DIR47 = "/scratch/slurm/job_1234567/" + "u" * 16 + "/tmp"  # 47 characters
DIR48 = DIR47 + "2"


def _full(free: str, where: str) -> tuple[str, str, str, str, str]:
    return (
        "RAY_TMP_DISK_FULL",
        "warning",
        f"{free} free at {where}, Ray's session directory",
        FULL_DETAIL,
        f"rm -rf {where}/ray/session_2*  (old sessions), or ray start --temp-dir=<big disk>",
    )


def _long(where: str) -> tuple[str, str, str, str, str]:
    return (
        "RAY_AF_UNIX_PATH_TOO_LONG",
        "error",
        f"temp dir {where} ({len(where)} chars) makes Ray's socket paths exceed 107 bytes",
        LONG_DETAIL,
        LONG_FIX,
    )


def _tmp_snap(free: dict | None, env: dict | None = None) -> dict:
    snap: dict = {"host": {"os": "linux", "disk_free_bytes": free}, "ray": ray_facts()}
    if env is not None:
        snap["env"] = env
    return snap


TMP_ROWS = [
    ("plenty free on /tmp (the H200 box)", _tmp_snap({"/tmp": 137_390_272_512}), []),
    ("exactly 10 GiB free", _tmp_snap({"/tmp": 10 * GIB}), []),
    ("one byte under 10 GiB", _tmp_snap({"/tmp": 10 * GIB - 1}), [_full("10.0 GiB", "/tmp")]),
    ("2 GiB free", _tmp_snap({"/tmp": 2 * GIB}), [_full("2.0 GiB", "/tmp")]),
    ("0 bytes free", _tmp_snap({"/tmp": 0}), [_full("0.0 GiB", "/tmp")]),
    ("free space unknown", _tmp_snap({"/tmp": None}), []),
    ("no disk table", _tmp_snap(None), []),
    ("the table lists other paths only", _tmp_snap({"/srv": GIB}), []),
    # TMPDIR moves Ray's session dir: its free space counts, /tmp's does not
    (
        "TMPDIR full, /tmp fine",
        _tmp_snap({"/tmp": 100 * GIB, "/scratch": GIB}, {"TMPDIR": "/scratch"}),
        [_full("1.0 GiB", "/scratch")],
    ),
    (
        "TMPDIR fine, /tmp full",
        _tmp_snap({"/tmp": GIB, "/scratch": 100 * GIB}, {"TMPDIR": "/scratch"}),
        [],
    ),
    # RAY_TMPDIR wins over TMPDIR
    (
        "RAY_TMPDIR over TMPDIR",
        _tmp_snap(
            {"/fast": GIB, "/scratch": 100 * GIB}, {"RAY_TMPDIR": "/fast", "TMPDIR": "/scratch"}
        ),
        [_full("1.0 GiB", "/fast")],
    ),
    (
        "RAY_TMPDIR alone",
        _tmp_snap({"/fast": GIB, "/tmp": 100 * GIB}, {"RAY_TMPDIR": "/fast"}),
        [_full("1.0 GiB", "/fast")],
    ),
    ("47 characters fit", _tmp_snap({}, {"TMPDIR": DIR47}), []),
    ("48 characters do not", _tmp_snap({}, {"TMPDIR": DIR48}), [_long(DIR48)]),
    ("a trailing slash is not counted", _tmp_snap({}, {"TMPDIR": DIR47 + "/"}), []),
    ("RAY_TMPDIR long", _tmp_snap({}, {"RAY_TMPDIR": DIR48, "TMPDIR": "/tmp"}), [_long(DIR48)]),
    ("RAY_TMPDIR short, TMPDIR long", _tmp_snap({}, {"RAY_TMPDIR": "/tmp", "TMPDIR": DIR48}), []),
    (
        "long and full: both",
        _tmp_snap({DIR48: GIB}, {"TMPDIR": DIR48}),
        [_full("1.0 GiB", DIR48), _long(DIR48)],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), TMP_ROWS, ids=[r[0] for r in TMP_ROWS])
def test_ray_tmp_row(case, snap, want):
    assert _all(ray_tmp, snap) == want


def test_ray_tmp_needs_ray():
    snap = _tmp_snap({"/tmp": 0}, {"TMPDIR": DIR48})
    assert _all(ray_tmp, {**snap, "ray": None}) == []
