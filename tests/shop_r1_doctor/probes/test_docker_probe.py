"""The Docker engine probe and its checks (the real engine: tests/e2e/test_docker_build_real.py)."""

from __future__ import annotations

import socket
import threading

from doctor_fakes import make_deps

from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.probes.docker_probe import probe_docker

VERSION = {"Version": "28.2.2", "ApiVersion": "1.50"}


def _info(**extra):
    return {"Driver": "overlay2", "Runtimes": {"runc": {}}, "DefaultRuntime": "runc", **extra}


def _engine(info):
    def get(path, timeout):
        return VERSION if path == "/version" else info

    return get


def _deps(tmp_path, info, path=""):
    env = {"DOCKER_HOST": "unix:///var/run/docker.sock", "PATH": path}
    return make_deps(tmp_path, docker=_engine(info), environ=env)


def _codes(docker, **snap):
    facts = {"schema": "shop-r1.snapshot/1", "docker": docker, **snap}
    return {f.code: f for f in run_checks(Facts(facts))}


def test_no_socket_and_no_docker_host_is_no_engine_and_no_finding(tmp_path):
    docker = probe_docker(make_deps(tmp_path))["docker"]
    assert docker is None
    assert not [c for c in _codes(docker) if c.startswith("DOCKER_")]


def test_socket_that_nobody_serves_is_a_quiet_note(tmp_path):
    deps = make_deps(tmp_path)
    sock_path = deps.root / "var" / "run" / "docker.sock"
    sock_path.parent.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    server.close()  # the file stays, nothing listens: connection refused
    docker = probe_docker(deps, timeout=0.5)["docker"]
    assert docker["reachable"] is False and docker["host_from"] == "socket"
    assert docker["error"]
    assert _codes(docker)["DOCKER_ENGINE_UNREACHABLE"].severity == "info"
    asked = probe_docker(
        make_deps(tmp_path, environ={"DOCKER_HOST": f"unix://{sock_path}"}), timeout=0.5
    )["docker"]
    assert _codes(asked)["DOCKER_ENGINE_UNREACHABLE"].severity == "warning"


def test_engine_over_a_real_unix_socket_http(tmp_path):
    """The probe's own HTTP-over-AF_UNIX client against a minimal engine API server."""
    import http.server
    import json
    import socketserver

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(VERSION if self.path == "/version" else _info()).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

        def address_string(self):
            return "unix"

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    path = tmp_path / "d.sock"
    server = Server(str(path), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        deps = make_deps(tmp_path, environ={"DOCKER_HOST": f"unix://{path}"})
        docker = probe_docker(deps)["docker"]
    finally:
        server.shutdown()
        server.server_close()
    assert docker["reachable"] is True and docker["server_version"] == "28.2.2"
    assert docker["storage_driver"] == "overlay2" and docker["gpus_usable"] is False


def test_gpu_support_from_runtime_hook_or_cdi(tmp_path):
    gpus = [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}]
    # runc only, GPUs on the host, not in a container: --gpus fails.
    plain = probe_docker(_deps(tmp_path, _info()))["docker"]
    assert plain["gpus_usable"] is False
    assert "DOCKER_NO_GPU_SUPPORT" in _codes(plain, gpus=gpus, host={"container": None})
    # ... but on a machine without GPUs that is nothing to mention.
    assert "DOCKER_NO_GPU_SUPPORT" not in _codes(plain, gpus=[], host={"container": None})
    runtime = _info(Runtimes={"runc": {}, "nvidia": {"path": "nvidia-container-runtime"}})
    assert probe_docker(_deps(tmp_path, runtime))["docker"]["gpus_usable"]
    (tmp_path / "cdi").mkdir()
    deps = _deps(tmp_path / "cdi", _info(CDISpecDirs=["/etc/cdi"]))
    (deps.root / "etc" / "cdi").mkdir(parents=True)
    (deps.root / "etc" / "cdi" / "nvidia.yaml").write_text("cdiVersion: 0.5.0\n")
    cdi = probe_docker(deps)["docker"]
    assert cdi["gpus_usable"] is True and cdi["cdi_nvidia_devices"]
    (tmp_path / "hook").mkdir()
    hook = _deps(tmp_path / "hook", _info(), path="/opt/nv")
    (hook.root / "opt" / "nv").mkdir(parents=True)
    (hook.root / "opt" / "nv" / "nvidia-container-runtime-hook").write_text("")
    assert probe_docker(hook)["docker"]["nvidia_hook"] is True
