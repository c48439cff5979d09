"""Ray: installed version, the local heads, and what `ray.init()` would connect to.

Never `ray.init()` or `import ray` here: it can hang when the GCS is not ready, starts a
cluster when none is found, and costs seconds. Instead, three sources, each cheap:

- this machine's Ray processes (`gcs_server` and the dashboard, from their command lines):
  every local head with its GCS address, temp dir and where its dashboard listens
  (`--dashboard-host` is 127.0.0.1 by default, not the GCS address);
- the address file `ray.init()` reads (`<RAY_TMPDIR|TMPDIR|/tmp>/ray/ray_current_cluster`),
  and a head's own file under its `--temp-dir`;
- RAY_ADDRESS, resolved the way Ray's `canonicalize_bootstrap_address` does (unset:
  the default file or start a new local instance; `auto`: the file, else any local GCS
  process; `ray://`: Ray Client; `host:port`: that GCS).

The head is then asked over TCP (the GCS port) and HTTP (the dashboard's
`/api/gcs_healthz`, `/api/version`, `/nodes?view=summary`), with a short timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps
from shop_r1_doctor.redact import redact_home

DASHBOARD_PORT = 8265
GCS_PORT = 6379
CLIENT_PORT = 10001


@dataclass(frozen=True)
class LocalHead:
    """A head whose processes run on this machine."""

    gcs: str  # host:port
    temp_dir: str | None
    dashboard: str | None  # http://host:port


def default_temp_dir(environ: Mapping[str, str]) -> str:
    """Ray's `get_default_ray_temp_dir()` on Linux/macOS: RAY_TMPDIR, TMPDIR, /tmp; + /ray."""
    base = environ.get("RAY_TMPDIR") or environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, "ray")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _flag(args: list[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if arg == name and i + 1 < len(args):
                return args[i + 1]
    return None


def local_heads(cmdlines: Iterable[list[str]]) -> list[LocalHead]:
    """Heads from `gcs_server` command lines, joined with their dashboards by GCS address."""
    dashboards: dict[str, str] = {}
    gcs: dict[str, str | None] = {}
    for args in cmdlines:
        if not args:
            continue
        exe = os.path.basename(args[0])
        if exe == "gcs_server":
            port = _flag(args, "--gcs_server_port")
            ip = _flag(args, "--node-ip-address", "--node_ip_address")
            session = _flag(args, "--session-dir", "--session_dir")
            if port and ip:
                gcs[f"{ip}:{port}"] = os.path.dirname(session) if session else None
        elif any(a.endswith(os.path.join("dashboard", "dashboard.py")) for a in args[:3]):
            address = _flag(args, "--gcs-address")
            host = _flag(args, "--host") or "127.0.0.1"
            port = _flag(args, "--port") or str(DASHBOARD_PORT)
            if address:
                host = "127.0.0.1" if host in ("0.0.0.0", "::", "localhost") else host
                dashboards[address] = f"http://{host}:{port}"
    return [LocalHead(a, t, dashboards.get(a)) for a, t in sorted(gcs.items())]


def ray_cmdlines() -> list[list[str]]:
    """Command lines of this machine's Ray head processes (gcs_server, dashboard)."""
    import psutil

    out = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        args = proc.info.get("cmdline") or []
        name = proc.info.get("name") or ""
        if name == "gcs_server" or any("dashboard.py" in a for a in args[:3]):
            out.append(list(args))
    return out


def parse_address(address: str) -> tuple[str, str, int | None]:
    """-> (scheme, host, port) for `ray://h:10001`, `http://h:8265`, `h:6379`, `h`."""
    if "://" in address:
        parsed = urlparse(address)
        return parsed.scheme, parsed.hostname or "", parsed.port
    host, sep, port = address.rpartition(":")
    if not sep:
        return "gcs", address, None
    return "gcs", host, int(port) if port.isdigit() else None


def client_view(
    environ: Mapping[str, str], file_address: str | None, heads: list[LocalHead]
) -> dict[str, Any]:
    """What `ray.init()` in this environment would do: connect (to which address),
    start a new local instance, or fail (and with which error)."""
    value = environ.get("RAY_ADDRESS")
    env = value.strip() if value else ""
    view: dict[str, Any] = {"ray_address": env or None, "action": None, "address": None}
    view["error"] = None
    if env and env not in ("auto", "local"):
        scheme, host, port = parse_address(env)
        if scheme == "ray":
            view.update(action="connect-client", address=f"{host}:{port or CLIENT_PORT}")
        elif scheme in ("http", "https"):
            view.update(
                action="fail",
                error=(
                    f"RAY_ADDRESS={env} is a dashboard / Jobs API URL; ray.init() needs the "
                    "GCS address (host:6379) or ray://host:10001"
                ),
            )
        elif not host or port is None:
            view.update(action="fail", error=f"Invalid address format: {env} (needs host:port)")
        else:
            view.update(action="connect", address=f"{host}:{port}")
        return view
    if env == "local":
        view["action"] = "start-local"
        return view
    if file_address:
        view.update(action="connect", address=file_address)
    elif env == "auto" and heads:
        view.update(action="connect", address=heads[0].gcs)
    elif env == "auto":
        view.update(action="fail", error="Could not find any running Ray instance")
    else:
        view["action"] = "start-local"  # a private, new cluster inside the process
    return view


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


def _local_ips() -> set[str]:
    """This machine's addresses (the node IP Ray writes into its address file)."""
    import psutil

    try:
        return {a.address for addrs in psutil.net_if_addrs().values() for a in addrs}
    except OSError:
        return set()


def _same(a: str, b: str) -> bool:
    """GCS addresses equal up to a loopback spelling of this machine."""
    local = ("127.0.0.1", "localhost", "::1")
    (_, ha, pa), (_, hb, pb) = parse_address(a), parse_address(b)
    return pa == pb and (ha == hb or ha in local or hb in local)


def probe_ray(
    deps: ProbeDeps, dists: Mapping[str, DistRecord], timeout: float = 1.0
) -> dict[str, Any]:
    rec = dists.get("ray")
    if rec is None:
        return {"ray": None}
    heads = local_heads(deps.ray_cmdlines())
    default_dir = default_temp_dir(deps.environ)
    file_path = os.path.join(default_dir, "ray_current_cluster")
    file_address = _read(file_path)
    client = client_view(deps.environ, file_address, heads)

    def shown(path: str | None) -> str | None:
        return redact_home(path, deps.home) if path else None

    facts: dict[str, Any] = {
        "version": rec.version,
        "cluster": "none",
        "address": None,
        "source": None,
        "nodes": 0,
        "error": None,
        "temp_dir": None,
        "dashboard": None,
        "gcs_healthy": None,
        "head_version": None,
        "cluster_file": shown(file_path) if file_address else None,
        "local_heads": [h.gcs for h in heads],
        "client": client,
    }
    # The cluster to report: the one ray.init() would use, else a local head it would miss.
    if client["address"]:
        address = client["address"]
        facts["source"] = "RAY_ADDRESS" if client["ray_address"] not in (None, "auto") else None
        if facts["source"] is None:
            facts["source"] = "cluster_file" if file_address == address else "process"
    elif heads:
        address, facts["source"] = heads[0].gcs, "process"
    else:
        return {"ray": facts}
    facts["address"] = address
    head = next((h for h in heads if _same(h.gcs, address)), None)
    _scheme, host, port = parse_address(address)
    if head is not None:
        facts["temp_dir"] = shown(head.temp_dir)
    # A local head's dashboard listens where its process says; guessing :8265 on this
    # machine could ask another cluster's dashboard. A remote head: host:8265.
    local = host in ("127.0.0.1", "localhost", "::1", "") or host in _local_ips()
    if head is not None and head.dashboard:
        dashboard: str | None = head.dashboard
    else:
        dashboard = None if local or head is not None else f"http://{host}:{DASHBOARD_PORT}"
    gcs_port = port or GCS_PORT
    tcp = _tcp_open(host or "127.0.0.1", gcs_port, timeout)
    health = deps.http(f"{dashboard}/api/gcs_healthz", timeout) if dashboard else None
    if health is not None:
        facts["dashboard"] = dashboard
        facts["gcs_healthy"] = health[0] == 200
        version = deps.http(f"{dashboard}/api/version", timeout)
        if version and version[0] == 200:
            with contextlib.suppress(ValueError, AttributeError):
                facts["head_version"] = json.loads(version[1]).get("ray_version")
    if tcp or facts["gcs_healthy"]:
        facts["cluster"] = "running"
        nodes = deps.http(f"{dashboard}/nodes?view=summary", timeout) if health else None
        if facts["gcs_healthy"] is None:
            facts["error"] = "GCS answers; no dashboard to ask for health and nodes"
        facts["nodes"] = count_nodes(nodes[1]) if nodes and nodes[0] == 200 else None
        if facts["gcs_healthy"] is False:
            facts["cluster"] = "unhealthy"
            facts["error"] = f"{dashboard}/api/gcs_healthz answered {health and health[0]}"
        return {"ray": facts}
    facts["nodes"] = None
    # A recorded address nothing answers at: left behind by a head that is gone.
    facts["cluster"] = "stale" if facts["source"] == "cluster_file" else "unreachable"
    facts["error"] = f"nothing answers at {host}:{gcs_port} (GCS)" + (
        f" nor {dashboard}" if dashboard and health is None else ""
    )
    return {"ray": facts}
