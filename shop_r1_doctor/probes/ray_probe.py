"""Ray: installed version and whether a cluster answers, over HTTP/TCP only.

Never `ray.init()` here: it can hang when the GCS is not ready, and importing ray costs
seconds. The address comes from RAY_ADDRESS, else the file Ray writes for the last
cluster started on this machine (`<tmp>/ray/ray_current_cluster`). The dashboard's
`/api/gcs_healthz` says whether the head is healthy; its node list gives the count.
Without a dashboard (plain `pip install ray`), a TCP connect to the GCS port tells
"running" with the node count unknown.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps
from shop_r1_doctor.probes.host import temp_dir

DASHBOARD_PORT = 8265
GCS_PORT = 6379


def cluster_address(deps: ProbeDeps) -> str | None:
    address = deps.environ.get("RAY_ADDRESS", "").strip()
    if address and address not in ("auto", "local"):
        return address
    ray_tmp = deps.environ.get("RAY_TMPDIR") or temp_dir(deps.environ)
    try:
        with open(os.path.join(ray_tmp, "ray", "ray_current_cluster"), encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _split(address: str) -> tuple[str, int | None, str]:
    """-> (host, port, scheme) for `ray://h:10001`, `http://h:8265`, `h:6379`."""
    parsed = urlparse(address if "://" in address else f"gcs://{address}")
    return parsed.hostname or "127.0.0.1", parsed.port, parsed.scheme


def count_nodes(body: str) -> int | None:
    """`/nodes?view=summary` (Ray 2.x dashboard) -> number of ALIVE nodes."""
    try:
        data = json.loads(body)
        summary = data["data"]["summary"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(summary, list):
        return None
    alive = [n for n in summary if (n.get("raylet") or {}).get("state", "ALIVE") == "ALIVE"]
    return len(alive)


def _tcp_open(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe_ray(
    deps: ProbeDeps, dists: Mapping[str, DistRecord], timeout: float = 1.0
) -> dict[str, Any]:
    rec = dists.get("ray")
    if rec is None:
        return {"ray": None}
    facts: dict[str, Any] = {
        "version": rec.version,
        "cluster": "none",
        "address": None,
        "nodes": 0,
        "error": None,
    }
    address = cluster_address(deps)
    if address is None:
        return {"ray": facts}
    facts["address"] = address
    host, port, scheme = _split(address)
    dashboard = f"http://{host}:{port if scheme in ('http', 'https') and port else DASHBOARD_PORT}"
    health = deps.http(f"{dashboard}/api/gcs_healthz", timeout)
    if health is not None and health[0] == 200:
        facts["cluster"] = "running"
        nodes = deps.http(f"{dashboard}/nodes?view=summary", timeout)
        facts["nodes"] = count_nodes(nodes[1]) if nodes and nodes[0] == 200 else None
        return {"ray": facts}
    gcs_port = port if scheme == "gcs" and port else GCS_PORT
    if scheme in ("gcs",) and _tcp_open(host, gcs_port, timeout):
        facts["cluster"] = "running"
        facts["nodes"] = None  # no dashboard to ask
        return {"ray": facts}
    facts["cluster"] = "unreachable"
    facts["nodes"] = None
    facts["error"] = f"no answer from {dashboard}/api/gcs_healthz" + (
        f" nor {host}:{gcs_port}" if scheme == "gcs" else ""
    )
    return {"ray": facts}
