"""`shop-r1 setup --profile cpu` for real: a new venv, its install, the doctor inside it.

torch comes from a local one-package index of the CPU wheel (download.pytorch.org is not
reachable from this project's machines; the Docker build test does the same), everything
else from the package index pip is configured with. Skipped, saying why, without either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import docker_engine
import pytest
from repo_paths import ROOT

pytestmark = pytest.mark.slow


def _index_reachable() -> bool:
    probe = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "index",
            "versions",
            "six",
            "--retries",
            "0",
            "--timeout",
            "10",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.returncode == 0


def test_cpu_profile_venv_is_built_and_its_doctor_runs_clean(tmp_path, request):
    index = docker_engine.torch_wheel_index(tmp_path / "torch-index", "cp311")
    if index is None or sys.version_info[:2] != (3, 11):
        pytest.skip("no local torch 2.13.0+cpu cp311 wheel ($SHOP_R1_TEST_WHEELS, /opt/wheels)")
    if not _index_reachable():
        pytest.skip("the package index is not reachable (offline)")
    venv = tmp_path / "env"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's shop-r1 runs setup (and is installed)
    base = getattr(sys, "_base_executable", sys.executable)
    with docker_engine.serve(index) as url:
        start = time.monotonic()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "shop_r1.cli",
                "setup",
                "--profile",
                "cpu",
                "--venv",
                str(venv),
                "--python",
                base,
                "--torch-index",
                url,
                "--installer",
                "pip",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            check=False,
            timeout=900,
        )
        seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "shop-r1.setup/1" and doc["dry_run"] is False
    result = doc["result"]
    assert [s["name"] for s in result["steps"]] == [
        "venv",
        "torch",
        "libraries",
        "shop-r1",
        "doctor",
    ]
    doctor = result["doctor"]
    # the doctor ran in the new venv, with its own interpreter, and found the profile's torch
    assert doctor["python"].startswith(str(venv)), doctor
    assert doctor["torch"] == "2.13.0+cpu"
    assert doctor["exit_code"] == 0 and doctor["profile"] == "cpu"
    assert doctor["summary"]["errors"] == 0 and doctor["summary"]["warnings"] == 0, doctor
    # the cpu profile sets no variables: its shop-r1-env.sh is written, activate is not touched
    assert doc["env"] == {} and result["activation"] == [str(venv / "bin" / "shop-r1-env.sh")]
    # the active environment was not touched: setup never installs into it
    assert not (venv / "shop-r1-setup" / "constraints.txt").read_text().count("+cu")
    terminal = request.config.pluginmanager.getplugin("terminalreporter")
    if terminal is not None:
        terminal.write_line(
            f"\nsetup --profile cpu: {seconds:.0f} s, doctor exit {doctor['exit_code']}"
        )
