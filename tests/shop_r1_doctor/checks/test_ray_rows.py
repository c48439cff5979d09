"""Decision rows for the Ray checks (shop_r1_doctor/checks/ray.py): on this host (Windows,
/dev/shm, the temp dir) and on the cluster ray.init() would use (a stale, remote or
unhealthy head, RAY_ADDRESS, the head's Ray version against this Python's). Each row is a
snapshot with the facts the Ray probe writes (shop_r1_doctor/probes/ray_probe.py: the same
keys, `cluster` one of none/running/unhealthy/unreachable/stale), the codes, severities and
facts of its findings; the wording is in tests/fixtures/golden/checks/ray.txt.

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
from check_wording import assert_row
from machines import machine_snapshot
from ray_rows_facts import DOCKER_SHM, GIB, RAM, ray_facts

from shop_r1_doctor.checks.ray import (
    ray_client_address,
    ray_cluster,
    ray_shm,
    ray_tmp,
    ray_version_match,
    ray_windows,
)


# ----------------------------------------------------------------- where Ray's version comes from
def _win(version: str, severity: str = "warning") -> list[tuple]:
    return [("RAY_WINDOWS_AGENT_CRASH", severity, f"Ray {version} on native Windows", "WSL2")]


# (case, snapshot, expected findings)
WINDOWS_ROWS = [
    ("probe section on Windows", {"host": {"os": "windows"}, "ray": ray_facts()}, _win("2.51.1")),
    (
        "the plan uses Ray: an error",
        {"host": {"os": "windows"}, "ray": ray_facts(), "plan": {"use_ray": True}},
        _win("2.51.1", "error"),
    ),
    (
        "the plan does not use Ray",
        {"host": {"os": "windows"}, "ray": ray_facts(), "plan": {"use_ray": False}},
        _win("2.51.1"),
    ),
    # a pasted `pip list` (no Ray probe): the version comes from the package list
    (
        "from the package list only",
        {"host": {"os": "windows"}, "packages": {"ray": {"version": "2.40.0"}}},
        _win("2.40.0"),
    ),
    (
        "probe found no Ray (null) but the package list has it",
        {"host": {"os": "windows"}, "ray": None, "packages": {"ray": {"version": "2.40.0"}}},
        _win("2.40.0"),
    ),
    (
        "a probe section without a version",
        {"host": {"os": "windows"}, "ray": {"cluster": "none"}},
        _win(""),
    ),
    ("Ray not installed", {"host": {"os": "windows"}, "ray": None, "packages": {"ray": None}}, []),
    ("version unparseable", {"host": {"os": "windows"}, "packages": {"ray": {"version": "x"}}}, []),
    ("Linux", {"host": {"os": "linux"}, "ray": ray_facts()}, []),
    ("OS unknown", {"ray": ray_facts()}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), WINDOWS_ROWS, ids=[r[0] for r in WINDOWS_ROWS])
def test_ray_windows_row(case, snap, want):
    assert_row(ray_windows, snap, want)


# ----------------------------------------------------------------- /dev/shm for the object store
def _shm(shm: str, ram: str, size: str) -> list[tuple]:
    return [
        ("RAY_OBJECT_STORE_SMALL_SHM", "warning", f"/dev/shm is {shm}", f"{ram} RAM", "/tmp", size)
    ]


def _shm_host(shm: Any, ram: Any = RAM, container: Any = "docker") -> dict:
    host = machine_snapshot("h200x2")["host"]
    return {**host, "container": container, "shm_bytes": shm, "ram_bytes": ram}


SHM_ROWS = [
    (
        "docker's default 64 MiB on the H200 box",
        {"host": _shm_host(DOCKER_SHM), "ray": ray_facts()},
        # int(0.3 * 270334464000) = 81100339200 = 75.5 GiB -> 75 + 1
        _shm("0.1 GiB", "251.8 GiB", "--shm-size=76g"),
    ),
    (
        "Ray only in the package list",
        {"host": _shm_host(DOCKER_SHM), "packages": {"ray": {"version": "2.40.0"}}},
        _shm("0.1 GiB", "251.8 GiB", "--shm-size=76g"),
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
        _shm("3.0 GiB", "10.0 GiB", "--shm-size=4g"),
    ),
    ("bare metal", {"host": _shm_host(DOCKER_SHM, container=None), "ray": ray_facts()}, []),
    ("no Ray", {"host": _shm_host(DOCKER_SHM), "ray": None}, []),
    ("shm unknown", {"host": _shm_host(None), "ray": ray_facts()}, []),
    ("RAM unknown", {"host": _shm_host(DOCKER_SHM, None), "ray": ray_facts()}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), SHM_ROWS, ids=[r[0] for r in SHM_ROWS])
def test_ray_shm_row(case, snap, want):
    assert_row(ray_shm, snap, want)


# ----------------------------------------------------------------- Ray's temp dir
DIR47 = "/scratch/slurm/job_1234567/" + "u" * 16 + "/tmp"  # 47 characters
DIR48 = DIR47 + "2"


def _full(free: str, where: str) -> tuple:
    return (
        "RAY_TMP_DISK_FULL",
        "warning",
        f"{free} free at {where}",
        f"rm -rf {where}/ray/session_2*",
    )


def _long(where: str) -> tuple:
    return ("RAY_AF_UNIX_PATH_TOO_LONG", "error", f"{where} ({len(where)} chars)", "107 bytes")


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
    assert_row(ray_tmp, snap, want)


def test_ray_tmp_needs_ray():
    snap = _tmp_snap({"/tmp": 0}, {"TMPDIR": DIR48})
    assert_row(ray_tmp, {**snap, "ray": None}, [])


# ----------------------------------------------------------------- the cluster ray.init() would use
STALE_FILE = "/tmp/ray/ray_current_cluster"
STALE = ray_facts(
    version="2.60.0",
    cluster="stale",
    address="192.0.2.2:6379",
    source="cluster_file",
    cluster_file=STALE_FILE,
    nodes=None,
    error="nothing answers at 192.0.2.2:6379 (GCS)",
    client={"ray_address": None, "action": "connect", "address": "192.0.2.2:6379", "error": None},
)
REMOTE = ray_facts(
    cluster="unreachable",
    address="10.0.0.1:6379",
    source="RAY_ADDRESS",
    nodes=None,
    error="nothing answers at 10.0.0.1:6379 (GCS) nor http://10.0.0.1:8265",
    client={
        "ray_address": "10.0.0.1:6379",
        "action": "connect",
        "address": "10.0.0.1:6379",
        "error": None,
    },
)
UNHEALTHY = ray_facts(
    cluster="unhealthy",
    address="127.0.0.1:6379",
    source="process",
    dashboard="http://127.0.0.1:8265",
    gcs_healthy=False,
    nodes=1,
    error="http://127.0.0.1:8265/api/gcs_healthz answered 503",
    local_heads=["127.0.0.1:6379"],
    client={"ray_address": "auto", "action": "connect", "address": "127.0.0.1:6379", "error": None},
)


def _stale(severity: str = "warning") -> list[tuple]:
    return [("RAY_CLUSTER_STALE", severity, "192.0.2.2:6379", STALE_FILE, "ray stop")]


def _unreachable(title: str, error: str, severity: str = "warning") -> list[tuple]:
    return [("RAY_CLUSTER_UNREACHABLE", severity, title, error, "ray start --head")]


NO_GCS = "nothing answers at 10.0.0.1:6379 (GCS) nor http://10.0.0.1:8265"
CLUSTER_ROWS = [
    ("stale address file", {"ray": STALE}, _stale()),
    ("stale, the plan uses Ray", {"ray": STALE, "plan": {"use_ray": True}}, _stale("error")),
    (
        "stale, no error recorded",
        {"ray": {**STALE, "error": None}, "plan": {"use_ray": False}},
        _stale(),
    ),
    (
        "RAY_ADDRESS names a head that does not answer",
        {"ray": REMOTE},
        _unreachable("10.0.0.1:6379 (RAY_ADDRESS=10.0.0.1:6379) does not answer", NO_GCS),
    ),
    (
        "unreachable, the plan uses Ray",
        {"ray": REMOTE, "plan": {"use_ray": True}},
        _unreachable("10.0.0.1:6379 (RAY_ADDRESS=10.0.0.1:6379)", NO_GCS, "error"),
    ),
    (
        "a local head whose GCS is unhealthy",
        {"ray": UNHEALTHY},
        _unreachable(
            "127.0.0.1:6379 (process) reports an unhealthy GCS",
            "http://127.0.0.1:8265/api/gcs_healthz answered 503",
        ),
    ),
    (
        "unreachable, found through a process, no error",
        {"ray": {**UNHEALTHY, "cluster": "unreachable", "error": None}},
        _unreachable("127.0.0.1:6379 (process) does not answer", ""),
    ),
    # the probe always writes `client`; a section without it must still not raise
    (
        "RAY_ADDRESS source without a client view",
        {"ray": {**REMOTE, "client": None}},
        _unreachable("10.0.0.1:6379 (RAY_ADDRESS=None)", NO_GCS),
    ),
    ("a running head", {"ray": {**UNHEALTHY, "cluster": "running", "gcs_healthy": True}}, []),
    ("no head anywhere", {"ray": ray_facts()}, []),
    ("Ray only in the package list", {"packages": {"ray": {"version": "2.40.0"}}}, []),
    ("no Ray", {"ray": None}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), CLUSTER_ROWS, ids=[r[0] for r in CLUSTER_ROWS])
def test_ray_cluster_row(case, snap, want):
    assert_row(ray_cluster, snap, want)


# ----------------------------------------------------------------- what ray.init() does with RAY_ADDRESS
DASHBOARD_URL = {
    "ray_address": "http://127.0.0.1:8265",
    "action": "fail",
    "address": None,
    "error": "RAY_ADDRESS=http://127.0.0.1:8265 is a dashboard / Jobs API URL; ray.init() "
    "needs the GCS address (host:6379) or ray://host:10001",
}
# a head started with --temp-dir: its address file is not where ray.init() looks
MISSED = ray_facts(
    version="2.60.0",
    cluster="running",
    address="192.0.2.2:6379",
    source="process",
    temp_dir="/tmp/rt",
    nodes=1,
    local_heads=["192.0.2.2:6379"],
)


def _misses(where: str, severity: str = "warning", head: str = "192.0.2.2:6379") -> tuple:
    return ("RAY_INIT_MISSES_LOCAL_HEAD", severity, f"{head}{where}", f"export RAY_ADDRESS={head}")


def _invalid(error: str, severity: str = "warning") -> list[tuple]:
    return [("RAY_ADDRESS_INVALID", severity, f"ray.init() would fail: {error}", "RAY_ADDRESS=")]


CLIENT_ROWS = [
    (
        "a dashboard URL in RAY_ADDRESS",
        {"ray": ray_facts(client=DASHBOARD_URL)},
        _invalid(DASHBOARD_URL["error"]),
    ),
    (
        "auto with nothing running, the plan uses Ray",
        {
            "ray": ray_facts(
                client={
                    "ray_address": "auto",
                    "action": "fail",
                    "address": None,
                    "error": "Could not find any running Ray instance",
                }
            ),
            "plan": {"use_ray": True},
        },
        _invalid("Could not find any running Ray instance", "error"),
    ),
    ("a head with --temp-dir", {"ray": MISSED}, [_misses(" (started with --temp-dir /tmp/rt)")]),
    (
        "a head with --temp-dir, the plan uses Ray",
        {"ray": MISSED, "plan": {"use_ray": True}},
        [_misses(" (started with --temp-dir /tmp/rt)", "error")],
    ),
    ("a head, temp dir unknown", {"ray": {**MISSED, "temp_dir": None}}, [_misses("")]),
    (
        "the first head that is a string is named",
        {
            "ray": {
                **MISSED,
                "temp_dir": None,
                "local_heads": [None, "10.0.0.2:6380", "10.0.0.3:6379"],
            }
        },
        [_misses("", head="10.0.0.2:6380")],
    ),
    ("no local head", {"ray": ray_facts()}, []),
    ("local heads unknown", {"ray": {**MISSED, "local_heads": None}}, []),
    ("only junk in the head list", {"ray": {**MISSED, "local_heads": [None, 6379]}}, []),
    # the stale file is RAY_CLUSTER_STALE's finding, not this one
    ("the head is the stale one", {"ray": {**MISSED, "cluster": "stale"}}, []),
    (
        "ray.init() connects to the head",
        {
            "ray": {
                **MISSED,
                "client": {
                    "ray_address": None,
                    "action": "connect",
                    "address": "192.0.2.2:6379",
                    "error": None,
                },
            }
        },
        [],
    ),
    # RAY_ADDRESS=local asks for a new private instance on purpose
    (
        "RAY_ADDRESS=local",
        {
            "ray": {
                **MISSED,
                "client": {
                    "ray_address": "local",
                    "action": "start-local",
                    "address": None,
                    "error": None,
                },
            }
        },
        [],
    ),
    ("no client view", {"ray": {**MISSED, "client": None}}, []),
    ("Ray only in the package list", {"packages": {"ray": {"version": "2.40.0"}}}, []),
    ("no Ray", {"ray": None}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), CLIENT_ROWS, ids=[r[0] for r in CLIENT_ROWS])
def test_ray_client_address_row(case, snap, want):
    assert_row(ray_client_address, snap, want)


# ----------------------------------------------------------------- head vs this Python's Ray
def _mismatch(head: str, mine: str) -> tuple:
    return (
        "RAY_VERSION_MISMATCH",
        "error",
        f"10.0.0.1:6379 runs Ray {head}, this Python has Ray {mine}",
        f"'ray[default]=={head}'",
        f"restart the head with {mine}",
    )


RUNNING = ray_facts(version="2.60.0", cluster="running", address="10.0.0.1:6379")
VERSION_ROWS = [
    ("older head", {**RUNNING, "head_version": "2.51.1"}, [_mismatch("2.51.1", "2.60.0")]),
    ("newer head", {**RUNNING, "head_version": "2.61.0"}, [_mismatch("2.61.0", "2.60.0")]),
    ("same version", {**RUNNING, "head_version": "2.60.0"}, []),
    ("head version unknown (no dashboard)", {**RUNNING, "head_version": None}, []),
    ("own version unknown", {**RUNNING, "head_version": "2.51.1", "version": None}, []),
    ("unhealthy head", {**RUNNING, "head_version": "2.51.1", "cluster": "unhealthy"}, []),
    ("stale", {**RUNNING, "head_version": "2.51.1", "cluster": "stale"}, []),
]


@pytest.mark.parametrize(("case", "ray", "want"), VERSION_ROWS, ids=[r[0] for r in VERSION_ROWS])
def test_ray_version_match_row(case, ray, want):
    assert_row(ray_version_match, {"ray": ray}, want)


def test_ray_version_match_needs_ray():
    assert_row(ray_version_match, {"ray": None}, [])
    assert_row(ray_version_match, {"packages": {"ray": {"version": "2.40.0"}}}, [])


SNAPSHOTS = [
    *[(r[0], r[1]) for r in WINDOWS_ROWS + SHM_ROWS + TMP_ROWS + CLUSTER_ROWS + CLIENT_ROWS],
    *[(c, {"ray": ray}) for c, ray, _ in VERSION_ROWS],
]
