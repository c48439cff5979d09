"""`build-image --build` against a real Docker engine, then the doctor inside the image.

The CPU profile renders the same Dockerfile structure as the GPU profiles (one template:
`shop_r1_doctor.dockerfile`), so this build proves the layers, the constraints file, the
copy of the package with its profiles, the install, the entry point, the user and the
.dockerignore. The engine and the base image come from tests/docker_engine.py; without
root or dockerd the tests skip and say why. The build's RUN steps use the host network
(the engine runs with --bridge=none) to reach PyPI and the PyTorch index.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys

import docker_engine
import pytest

from shop_r1_doctor.diagnose import Diagnosis
from shop_r1_doctor.snapshot import REPORT_SCHEMA

TAG = "shop-r1-test:cpu"

pytestmark = pytest.mark.docker


@pytest.fixture(scope="session")
def docker_host():
    try:
        with docker_engine.engine() as host:
            yield host
    except docker_engine.Unavailable as exc:
        pytest.skip(f"no Docker engine: {exc}")


@pytest.fixture(scope="session")
def base_image(docker_host):
    try:
        return docker_engine.base_image(docker_host)
    except docker_engine.Unavailable as exc:
        pytest.skip(str(exc))


def _cli(args, docker_host, **kw):
    env = {**os.environ, "DOCKER_HOST": docker_host}
    return subprocess.run(
        [sys.executable, "-m", "shop_r1_doctor.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        **kw,
    )


def _show(request, text: str) -> None:
    """Onto the terminal past output capture: the CI log shows the real build and run."""
    plugins = request.config.pluginmanager
    reporter = plugins.getplugin("terminalreporter")
    with plugins.getplugin("capturemanager").global_and_fixture_disabled():
        reporter.write_line("")
        for line in text.splitlines():
            reporter.write_line(line)


@pytest.fixture(scope="session")
def built_image(docker_host, base_image, tmp_path_factory, request):
    # -o outside the checkout: the build context is the output directory itself.
    out = tmp_path_factory.mktemp("image")
    args = ["build-image", "--profile", "cpu", "-o", str(out), "--build", "--tag", TAG]
    args += ["--base-image", base_image, "--network", "host"]
    index = docker_engine.torch_wheel_index(tmp_path_factory.mktemp("torch-index"))
    with contextlib.ExitStack() as stack:
        if index is not None:  # no route to download.pytorch.org here: a local copy
            url = stack.enter_context(docker_engine.serve(index))
            args += ["--build-arg", f"TORCH_INDEX_URL={url}"]
        proc = _cli(args, docker_host, timeout=1500)
    log = proc.stdout + proc.stderr
    steps = [line for line in log.splitlines() if line.startswith(("Step ", "built "))]
    _show(request, "\n".join(steps))
    assert proc.returncode == 0, log[-3000:]
    return out, log


def _run(docker_host, command, user=None):
    import docker

    client = docker.DockerClient(base_url=docker_host, timeout=300)
    container = client.containers.run(
        TAG, command, detach=True, network_mode="none", user=user, environment={"NO_COLOR": "1"}
    )
    try:
        status = container.wait(timeout=300)["StatusCode"]
        return (
            status,
            container.logs(stdout=True, stderr=False).decode(),
            container.logs(stdout=False, stderr=True).decode(),
        )
    finally:
        container.remove(force=True)


def test_build_streams_steps_and_the_image_runs_the_doctor(docker_host, built_image, request):
    out, log = built_image
    assert "Step 1/" in log and f"FROM {docker_engine.BASE_IMAGE}" in log
    assert f"built {TAG}" in log
    assert (out / "shop-r1" / "shop_r1_doctor" / "profiles_data" / "cpu.yaml").is_file()
    status, stdout, stderr = _run(docker_host, ["shop-r1", "doctor", "--json"])
    assert status in (0, 1), stderr  # 2 would be a tool error (e.g. no profiles)
    human = _run(docker_host, ["shop-r1", "doctor"])[1]
    _show(request, "docker run shop-r1-test:cpu shop-r1 doctor:\n" + human)
    report = json.loads(stdout)
    assert report["schema"] == REPORT_SCHEMA
    Diagnosis.from_json(report)  # the contract reader accepts it
    snap = report["snapshot"]
    packages = snap["packages"]
    assert packages["torch"]["version"] == "2.13.0+cpu"
    assert packages["transformers"]["version"].startswith("5.")
    assert snap["host"]["container"] is not None
    probes = snap["probes"]
    assert all(p["status"] in ("ok", "skipped") for p in probes.values()), probes


def test_image_profiles_are_package_data_and_user_is_not_root(docker_host, built_image):
    status, stdout, stderr = _run(docker_host, ["shop-r1", "profiles", "list"])
    assert status == 0, stderr
    assert "cpu" in stdout and "hopper" in stdout
    status, stdout, _ = _run(docker_host, ["id", "-u"])
    assert stdout.strip() == "10001"
    # docker-run.sh runs as the host user: HOME must be writable for an arbitrary uid.
    status, stdout, stderr = _run(
        docker_host, ["bash", "-c", "touch $HOME/x && echo ok"], user="4242:4242"
    )
    assert status == 0 and stdout.strip() == "ok", stderr


def test_failed_step_is_one_line_naming_the_step(docker_host, base_image, tmp_path):
    import io

    import docker

    client = docker.DockerClient(base_url=docker_host, timeout=300)
    # A base image without Python: the build fails at the venv step, and says so.
    dockerfile = f"FROM {base_image}\nRUN rm -f /usr/bin/python3*\n"
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag="shop-r1-test/nopython:1")
    args = ["build-image", "--profile", "cpu", "-o", str(tmp_path), "--build"]
    proc = _cli([*args, "--base-image", "shop-r1-test/nopython:1"], docker_host, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    failed = re.search(r"docker build failed at step (\d+)/\d+ \(RUN python3 -m venv", proc.stderr)
    assert failed, proc.stderr
    assert f"Step {failed.group(1)}/" in proc.stdout  # the progress streamed before the failure


def test_missing_base_image_is_one_line_naming_it(docker_host, tmp_path):
    args = ["build-image", "--profile", "cpu", "-o", str(tmp_path), "--build"]
    proc = _cli([*args, "--base-image", "shop-r1-test/absent:1"], docker_host, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "cannot get base image shop-r1-test/absent:1" in proc.stderr


def test_doctor_probe_reports_the_real_engine(docker_host):
    import docker

    from shop_r1_doctor.probes.deps import ProbeDeps
    from shop_r1_doctor.probes.docker_probe import probe_docker

    client = docker.DockerClient(base_url=docker_host, timeout=30)
    facts = probe_docker(ProbeDeps(environ={"DOCKER_HOST": docker_host, "PATH": ""}))["docker"]
    assert facts["reachable"] is True, facts
    assert facts["server_version"] == client.version()["Version"]
    info = client.info()
    assert facts["storage_driver"] == info["Driver"]
    assert facts["runtimes"] == sorted(info["Runtimes"])
    assert facts["nvidia_runtime"] is ("nvidia" in info["Runtimes"])
