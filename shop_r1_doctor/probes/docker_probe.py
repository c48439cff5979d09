"""The Docker engine: where it is, whether it answers, and whether `--gpus` would work.

The engine API is plain HTTP on a unix socket (or tcp://), so the probe speaks it with
`http.client` and a short timeout: no `import docker` (requests, urllib3) on the
doctor's path. No DOCKER_HOST and no /var/run/docker.sock: no engine, the section is
null and no check says anything. `--gpus` works when the engine has the NVIDIA runtime,
the legacy hook `nvidia-container-runtime-hook` is on its PATH (that is what `--gpus`
calls), or CDI specs for `nvidia.com/gpu` devices are in a CDI spec dir it reads.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from typing import Any
from urllib.parse import urlparse

from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.redact import redact_home

DEFAULT_SOCKET = "/var/run/docker.sock"
HOOKS = ("nvidia-container-runtime-hook", "nvidia-container-toolkit")
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def engine_get(host: str, path: str, timeout: float) -> Any:
    """GET an engine API path; the decoded JSON. Raises OSError / ValueError on failure."""
    url = urlparse(host)
    conn: http.client.HTTPConnection
    if url.scheme == "unix":
        conn = _UnixHTTPConnection(url.path, timeout)
    elif url.scheme in ("tcp", "http"):
        conn = http.client.HTTPConnection(url.hostname or "", url.port or 2375, timeout=timeout)
    else:
        raise ValueError(f"unsupported DOCKER_HOST scheme {url.scheme!r} (tls/ssh not probed)")
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read(2_000_000)
        if resp.status != 200:
            raise OSError(f"{path} answered HTTP {resp.status}")
        return json.loads(body)
    finally:
        conn.close()


def engine_host(deps: ProbeDeps) -> str | None:
    env = deps.environ.get("DOCKER_HOST", "").strip()
    if env:
        return env
    sock = deps.root / DEFAULT_SOCKET.lstrip("/")
    return f"unix://{sock}" if sock.exists() else None


def _cdi_nvidia(info: dict[str, Any], deps: ProbeDeps) -> list[str]:
    """NVIDIA CDI devices the engine discovered (Docker 28+) or whose specs are on disk."""
    found = [
        str(d.get("ID"))
        for d in info.get("DiscoveredDevices") or []
        if isinstance(d, dict) and str(d.get("ID", "")).startswith("nvidia.com/gpu")
    ]
    if found:
        return found
    for directory in info.get("CDISpecDirs") or []:
        root = deps.root / str(directory).lstrip("/")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            if name.startswith("nvidia") and name.endswith((".yaml", ".yml", ".json")):
                found.append(f"nvidia.com/gpu ({directory}/{name})")
    return found


def _hook_on_path(deps: ProbeDeps) -> bool:
    dirs = [*deps.path_dirs(), "/usr/bin", "/usr/local/bin"]
    return any((deps.root / d.lstrip("/") / hook).is_file() for d in dirs for hook in HOOKS)


def probe_docker(deps: ProbeDeps, timeout: float = 1.0) -> dict[str, Any]:
    host = engine_host(deps)
    if host is None:
        return {"docker": None}
    source = "DOCKER_HOST" if deps.environ.get("DOCKER_HOST", "").strip() else "socket"
    shown = redact_home(host, deps.home)  # a rootless engine's socket lives under $HOME
    facts: dict[str, Any] = {"host": shown, "host_from": source, "reachable": False, "error": None}
    get = deps.docker or (lambda path, t: engine_get(host, path, t))
    try:
        version = get("/version", timeout)
        info = get("/info", timeout)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        facts["error"] = reason or type(exc).__name__
        return {"docker": facts}
    runtimes = sorted((info.get("Runtimes") or {}).keys())
    cdi = _cdi_nvidia(info, deps)
    nvidia_runtime = "nvidia" in runtimes
    hook = _hook_on_path(deps)
    facts.update(
        reachable=True,
        server_version=version.get("Version"),
        api_version=version.get("ApiVersion"),
        storage_driver=info.get("Driver"),
        runtimes=runtimes,
        default_runtime=info.get("DefaultRuntime"),
        nvidia_runtime=nvidia_runtime,
        nvidia_hook=hook,
        cdi_spec_dirs=list(info.get("CDISpecDirs") or []),
        cdi_nvidia_devices=cdi,
        gpus_usable=nvidia_runtime or hook or bool(cdi),
    )
    return {"docker": facts}
