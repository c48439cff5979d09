"""Env allowlist + redaction, the CUDA toolkit probe, and Ray over HTTP/TCP only."""

from __future__ import annotations

import http.server
import json
import socket
import stat
import threading

import pytest
from doctor_fakes import dists, make_deps

from shop_r1_doctor.isolate import subprocess_runner
from shop_r1_doctor.probes.cuda_toolkit import parse_nvcc_version, probe_cuda_toolkit
from shop_r1_doctor.probes.deps import http_get
from shop_r1_doctor.probes.env import probe_env
from shop_r1_doctor.probes.ray_probe import count_nodes, probe_ray


def test_env_allowlist_and_redaction(tmp_path):
    environ = {
        "CUDA_VISIBLE_DEVICES": "0",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "HF_TOKEN": "hf_" + "x" * 34,  # fake; built so no token-shaped literal sits here
        "WANDB_API_KEY": "0123456789abcdef",
        "S3_SECRET_ACCESS_KEY": "never-listed",
        "HTTPS_PROXY": "http://user:pw@proxy:3128",
        "HOME": "/home/tester",
        "LD_LIBRARY_PATH": "/home/tester/lib:/usr/local/cuda/lib64",
        "ARNOLD_WORKER_GPU": "",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env = probe_env(make_deps(tmp_path, environ=environ))["env"]
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert env["HF_TOKEN"] == "<redacted>"
    assert env["WANDB_API_KEY"] == "<redacted>"
    assert "S3_SECRET_ACCESS_KEY" not in env and "HOME" not in env
    assert "pw@" not in env["HTTPS_PROXY"]
    assert "tester" not in env["LD_LIBRARY_PATH"]  # the home dir never enters a report
    assert env["LD_LIBRARY_PATH"].endswith("/lib:/usr/local/cuda/lib64")
    assert env["ARNOLD_WORKER_GPU"] == ""  # empty is a fact (config TypeError incident)
    assert env["TOKENIZERS_PARALLELISM"] == "false"


def _fake_nvcc(directory, release):
    directory.mkdir(parents=True)
    exe = directory / "nvcc"
    exe.write_text(
        "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
        f"echo 'Cuda compilation tools, release {release}, V{release}.88'\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_every_nvcc_on_path_and_cuda_home(tmp_path):
    old = _fake_nvcc(tmp_path / "cuda-11.8" / "bin", "11.8")
    new = _fake_nvcc(tmp_path / "cuda-13.0" / "bin", "13.0")
    environ = {
        "PATH": f"{tmp_path / 'cuda-11.8' / 'bin'}:{tmp_path / 'cuda-13.0' / 'bin'}",
        "CUDA_HOME": str(tmp_path / "cuda-13.0"),
    }
    tk = probe_cuda_toolkit(make_deps(tmp_path, environ=environ, runner=subprocess_runner))[
        "cuda_toolkit"
    ]
    assert tk["cuda_home"] == str(tmp_path / "cuda-13.0")
    assert tk["cuda_home_source"] == "CUDA_HOME"
    assert tk["nvcc"] == new and tk["nvcc_version"] == "13.0"
    assert tk["nvcc_on_path"] == [old, new]
    assert tk["nvcc_versions"] == {new: "13.0", old: "11.8"}


def test_no_toolkit(tmp_path):
    tk = probe_cuda_toolkit(make_deps(tmp_path))["cuda_toolkit"]
    assert tk["cuda_home"] is None and tk["nvcc"] is None and tk["nvcc_on_path"] == []


def test_parse_nvcc_version_recorded():
    from doctor_fakes import GPU

    assert parse_nvcc_version((GPU / "h100" / "nvcc.txt").read_text()) == "13.0"


def test_ray_not_installed(tmp_path):
    assert probe_ray(make_deps(tmp_path), dists()()) == {"ray": None}


def test_ray_installed_no_cluster(tmp_path):
    deps = make_deps(tmp_path, environ={"TMPDIR": str(tmp_path)})
    ray = probe_ray(deps, dists(ray="2.51.1")())["ray"]
    assert ray["cluster"] == "none" and ray["address"] is None and ray["local_heads"] == []
    # ray.init() here would start its own local instance: nothing to join.
    assert ray["client"] == {
        "ray_address": None,
        "action": "start-local",
        "address": None,
        "error": None,
    }


class _Dashboard(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/api/gcs_healthz":
            body = b"success"
        elif self.path == "/api/version":
            body = json.dumps({"ray_version": "2.51.1"}).encode()
        elif self.path.startswith("/nodes"):
            nodes = [
                {"raylet": {"state": "ALIVE"}},
                {"raylet": {"state": "ALIVE"}},
                {"raylet": {"state": "DEAD"}},
            ]
            body = json.dumps({"result": True, "data": {"summary": nodes}}).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def dashboard():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Dashboard)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture
def gcs_port():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    yield listener.getsockname()[1]
    listener.close()


def _head_cmdlines(gcs: int, dash: int, temp: str) -> list[list[str]]:
    """The two command lines Ray 2.60's `ray start --head` leaves (trimmed)."""
    return [
        [
            "/venv/lib/python3.11/site-packages/ray/core/src/ray/gcs/gcs_server",
            f"--gcs_server_port={gcs}",
            "--node-ip-address=127.0.0.1",
            f"--session-dir={temp}/session_2026-11-22_21-00-19_474189_9843",
        ],
        [
            "/venv/bin/python3",
            "/venv/lib/python3.11/site-packages/ray/dashboard/dashboard.py",
            "--host=127.0.0.1",
            f"--port={dash}",
            f"--temp-dir={temp}",
            f"--gcs-address=127.0.0.1:{gcs}",
        ],
    ]


def test_ray_dashboard_is_asked_where_it_listens_not_on_the_gcs_address(
    tmp_path, dashboard, gcs_port
):
    # The address file names the GCS; the dashboard's port comes from its process.
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{gcs_port}\n")
    deps = make_deps(
        tmp_path,
        environ={"TMPDIR": str(tmp_path)},
        http=http_get,
        ray_cmdlines=lambda: _head_cmdlines(gcs_port, dashboard, "/tmp/ray"),
    )
    ray = probe_ray(deps, dists(ray="2.51.1")())["ray"]
    assert ray["cluster"] == "running" and ray["nodes"] == 2 and ray["gcs_healthy"] is True
    assert ray["dashboard"] == f"http://127.0.0.1:{dashboard}"
    assert ray["source"] == "cluster_file" and ray["head_version"] == "2.51.1"


def test_ray_dashboard_url_in_ray_address_is_what_ray_init_rejects(tmp_path, dashboard):
    deps = make_deps(
        tmp_path, environ={"RAY_ADDRESS": f"http://127.0.0.1:{dashboard}"}, http=http_get
    )
    ray = probe_ray(deps, dists(ray="2.51.1")())["ray"]
    assert ray["client"]["action"] == "fail"
    assert "dashboard / Jobs API URL" in ray["client"]["error"]


def test_ray_gcs_without_dashboard_via_current_cluster_file(tmp_path, gcs_port):
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{gcs_port}\n")
    deps = make_deps(tmp_path, environ={"TMPDIR": str(tmp_path)}, http=http_get)
    ray = probe_ray(deps, dists(ray="2.51.1")(), timeout=0.5)["ray"]
    assert ray["cluster"] == "running" and ray["address"] == f"127.0.0.1:{gcs_port}"
    assert ray["nodes"] is None  # no dashboard to count them


def _closed_port() -> int:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    return port


def test_ray_address_that_does_not_answer(tmp_path):
    port = _closed_port()
    deps = make_deps(tmp_path, environ={"RAY_ADDRESS": f"127.0.0.1:{port}"}, http=http_get)
    ray = probe_ray(deps, dists(ray="2.51.1")(), timeout=0.5)["ray"]
    assert ray["cluster"] == "unreachable" and "nothing answers" in ray["error"]
    assert ray["source"] == "RAY_ADDRESS"


def test_ray_stale_cluster_file_is_stale_not_unreachable(tmp_path):
    port = _closed_port()
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{port}\n")
    deps = make_deps(tmp_path, environ={"TMPDIR": str(tmp_path)}, http=http_get)
    ray = probe_ray(deps, dists(ray="2.51.1")(), timeout=0.5)["ray"]
    assert ray["cluster"] == "stale" and ray["source"] == "cluster_file"


@pytest.mark.parametrize(
    ("value", "action", "address"),
    [
        ("10.0.0.5:6379", "connect", "10.0.0.5:6379"),
        ("ray://10.0.0.5", "connect-client", "10.0.0.5:10001"),
        ("10.0.0.5", "fail", None),
        ("https://10.0.0.5:8265", "fail", None),
        ("local", "start-local", None),
        ("auto", "fail", None),  # no file, no head: "Could not find any running Ray instance"
    ],
)
def test_ray_client_resolves_ray_address_like_ray_init(value, action, address):
    from shop_r1_doctor.probes.ray_probe import client_view

    view = client_view({"RAY_ADDRESS": value}, None, [])
    assert (view["action"], view["address"]) == (action, address)


def test_ray_client_auto_joins_a_head_found_by_its_process():
    from shop_r1_doctor.probes.ray_probe import client_view, local_heads

    heads = local_heads(_head_cmdlines(6379, 8265, "/tmp/rt"))
    assert heads[0].temp_dir == "/tmp/rt" and heads[0].dashboard == "http://127.0.0.1:8265"
    assert client_view({"RAY_ADDRESS": "auto"}, None, heads)["address"] == "127.0.0.1:6379"
    # unset: ray.init() reads only the default file; a --temp-dir head is missed.
    assert client_view({}, None, heads)["action"] == "start-local"


def test_count_nodes_tolerates_junk():
    assert count_nodes("not json") is None
    assert count_nodes(json.dumps({"data": {"summary": []}})) == 0
