"""Decision rows for the Ray checks on the cluster ray.init() would use
(shop_r1_doctor/checks/ray.py): a stale, remote or unhealthy head, RAY_ADDRESS, and the
head's Ray version against this Python's. Rows use the facts the Ray probe writes
(tests/ray_rows_facts.py). A plan with use_ray raises the cluster findings to errors;
use_ray false or no plan keeps the catalog's severity."""

from __future__ import annotations

import pytest
from ray_rows_facts import _all, ray_facts

from shop_r1_doctor.checks.ray import (
    ray_client_address,
    ray_cluster,
    ray_version_match,
)

# ----------------------------------------------------------------- the cluster ray.init() would use
STALE_FILE = "/tmp/ray/ray_current_cluster"
STALE_FIX = "ray stop (removes the stale file and leftover Ray processes), then ray start --head"
UNREACHABLE_FIX = (
    "start the cluster (ray start --head) or fix RAY_ADDRESS (the GCS host:6379, not the "
    "dashboard's 8265)"
)
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
STALE_DETAIL = (
    f"{STALE_FILE} was left by a head that is gone (killed, or the machine restarted); "
    "ray.init() would try it and fail."
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

CLUSTER_ROWS = [
    (
        "stale address file",
        {"ray": STALE},
        [
            (
                "RAY_CLUSTER_STALE",
                "warning",
                "Ray's cluster file names 192.0.2.2:6379, but no head answers there",
                f"{STALE_DETAIL} nothing answers at 192.0.2.2:6379 (GCS)",
                STALE_FIX,
            )
        ],
    ),
    (
        "stale, the plan uses Ray",
        {"ray": STALE, "plan": {"use_ray": True}},
        [
            (
                "RAY_CLUSTER_STALE",
                "error",
                "Ray's cluster file names 192.0.2.2:6379, but no head answers there",
                f"{STALE_DETAIL} nothing answers at 192.0.2.2:6379 (GCS)",
                STALE_FIX,
            )
        ],
    ),
    (
        "stale, no error recorded",
        {"ray": {**STALE, "error": None}, "plan": {"use_ray": False}},
        [
            (
                "RAY_CLUSTER_STALE",
                "warning",
                "Ray's cluster file names 192.0.2.2:6379, but no head answers there",
                STALE_DETAIL,
                STALE_FIX,
            )
        ],
    ),
    (
        "RAY_ADDRESS names a head that does not answer",
        {"ray": REMOTE},
        [
            (
                "RAY_CLUSTER_UNREACHABLE",
                "warning",
                "Ray cluster at 10.0.0.1:6379 (RAY_ADDRESS=10.0.0.1:6379) does not answer",
                "nothing answers at 10.0.0.1:6379 (GCS) nor http://10.0.0.1:8265",
                UNREACHABLE_FIX,
            )
        ],
    ),
    (
        "unreachable, the plan uses Ray",
        {"ray": REMOTE, "plan": {"use_ray": True}},
        [
            (
                "RAY_CLUSTER_UNREACHABLE",
                "error",
                "Ray cluster at 10.0.0.1:6379 (RAY_ADDRESS=10.0.0.1:6379) does not answer",
                "nothing answers at 10.0.0.1:6379 (GCS) nor http://10.0.0.1:8265",
                UNREACHABLE_FIX,
            )
        ],
    ),
    (
        "a local head whose GCS is unhealthy",
        {"ray": UNHEALTHY},
        [
            (
                "RAY_CLUSTER_UNREACHABLE",
                "warning",
                "Ray cluster at 127.0.0.1:6379 (process) reports an unhealthy GCS",
                "http://127.0.0.1:8265/api/gcs_healthz answered 503",
                UNREACHABLE_FIX,
            )
        ],
    ),
    (
        "unreachable, found through a process, no error",
        {"ray": {**UNHEALTHY, "cluster": "unreachable", "error": None}},
        [
            (
                "RAY_CLUSTER_UNREACHABLE",
                "warning",
                "Ray cluster at 127.0.0.1:6379 (process) does not answer",
                "",
                UNREACHABLE_FIX,
            )
        ],
    ),
    # the probe always writes `client`; a section without it must still not raise
    (
        "RAY_ADDRESS source without a client view",
        {"ray": {**REMOTE, "client": None}},
        [
            (
                "RAY_CLUSTER_UNREACHABLE",
                "warning",
                "Ray cluster at 10.0.0.1:6379 (RAY_ADDRESS=None) does not answer",
                "nothing answers at 10.0.0.1:6379 (GCS) nor http://10.0.0.1:8265",
                UNREACHABLE_FIX,
            )
        ],
    ),
    ("a running head", {"ray": {**UNHEALTHY, "cluster": "running", "gcs_healthy": True}}, []),
    ("no head anywhere", {"ray": ray_facts()}, []),
    ("Ray only in the package list", {"packages": {"ray": {"version": "2.40.0"}}}, []),
    ("no Ray", {"ray": None}, []),
]


@pytest.mark.parametrize(("case", "snap", "want"), CLUSTER_ROWS, ids=[r[0] for r in CLUSTER_ROWS])
def test_ray_cluster_row(case, snap, want):
    assert _all(ray_cluster, snap) == want


# ----------------------------------------------------------------- what ray.init() does with RAY_ADDRESS
INVALID_FIX = (
    "export RAY_ADDRESS=<head>:6379 (GCS) or ray://<head>:10001 (Ray Client); "
    "RAY_API_SERVER_ADDRESS takes the dashboard URL"
)
MISSES_DETAIL = (
    "RAY_ADDRESS is unset and ray.init() finds no address file where it looks "
    "(<RAY_TMPDIR|TMPDIR|/tmp>/ray/ray_current_cluster)."
)
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
    return (
        "RAY_INIT_MISSES_LOCAL_HEAD",
        severity,
        f"ray.init() would start a new private Ray, not join the head at {head}{where}",
        MISSES_DETAIL,
        f"export RAY_ADDRESS={head}",
    )


CLIENT_ROWS = [
    (
        "a dashboard URL in RAY_ADDRESS",
        {"ray": ray_facts(client=DASHBOARD_URL)},
        [
            (
                "RAY_ADDRESS_INVALID",
                "warning",
                f"ray.init() would fail: {DASHBOARD_URL['error']}",
                "",
                INVALID_FIX,
            )
        ],
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
        [
            (
                "RAY_ADDRESS_INVALID",
                "error",
                "ray.init() would fail: Could not find any running Ray instance",
                "",
                INVALID_FIX,
            )
        ],
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
    assert _all(ray_client_address, snap) == want


# ----------------------------------------------------------------- head vs this Python's Ray
def _mismatch(head: str, mine: str) -> tuple:
    return (
        "RAY_VERSION_MISMATCH",
        "error",
        f"the head at 10.0.0.1:6379 runs Ray {head}, this Python has Ray {mine}",
        "ray.init() refuses to connect: 'Version mismatch: The cluster was started with ...'",
        f"python3 -m pip install 'ray[default]=={head}' (or restart the head with {mine})",
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
    assert _all(ray_version_match, {"ray": ray}) == want


def test_ray_version_match_needs_ray():
    assert _all(ray_version_match, {"ray": None}) == []
    assert _all(ray_version_match, {"packages": {"ray": {"version": "2.40.0"}}}) == []
