"""Rendered Dockerfiles: no drift from dockerfiles/, hadolint-clean, and the rules that
matter here checked on the parsed instructions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from shop_r1_doctor.dockerfile import render
from shop_r1_doctor.profiles.model import load_profiles

ROOT = Path(__file__).resolve().parents[2]
PROFILES = load_profiles()
VARIANTS = [(name, ()) for name in sorted(PROFILES)] + [
    (name, ("megatron", "verl")) for name in sorted(PROFILES) if PROFILES[name].extras
]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not installed (pip install -e '.[test]')")
    return found


def test_dockerfile_committed_files_match_a_fresh_render():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "render_dockerfiles.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(("name", "extras"), VARIANTS)
def test_dockerfile_hadolint_clean(tmp_path, name, extras):
    path = tmp_path / "Dockerfile"
    path.write_text(render(PROFILES[name], extras).dockerfile)
    proc = subprocess.run(
        [_tool("hadolint"), "--config", str(ROOT / ".hadolint.yaml"), "-f", "json", str(path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, json.loads(proc.stdout or "[]")


@pytest.mark.parametrize(("name", "extras"), VARIANTS)
def test_dockerfile_rules_that_matter(tmp_path, name, extras):
    profile = PROFILES[name]
    # DockerfileParser writes `content` to its path: keep it out of the checkout.
    parser = DockerfileParser(path=str(tmp_path / "Dockerfile"))
    parser.content = render(profile, extras).dockerfile
    instructions = parser.structure
    froms = [i["value"] for i in instructions if i["instruction"] == "FROM"]
    assert froms == [profile.base_image]
    assert ":" in froms[0] and not froms[0].endswith(":latest")
    runs = [i["value"] for i in instructions if i["instruction"] == "RUN"]
    pip_runs = [r for r in runs if "pip install" in r]
    assert pip_runs and all("--no-cache-dir" in r for r in pip_runs)
    torch_run = next(r for r in pip_runs if f"torch=={profile.torch.version}" in r)
    assert f"--index-url {profile.torch.index_url}" in torch_run
    assert pip_runs.index(torch_run) == 0, "torch must be installed before anything that pins it"
    assert parser.envs["PIP_CONSTRAINT"] == "/opt/constraints.txt"
    constraints = next(r for r in runs if "/opt/constraints.txt" in r)
    assert f"torch=={profile.torch.local}" in constraints
    users = [i["value"] for i in instructions if i["instruction"] == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    for key, value in profile.env.items():
        assert parser.envs[key] == value
    assert "PYTORCH_CUDA_ALLOC_CONF" not in parser.envs
    if profile.flash_attn.mode == "source":
        fa = next(r for r in runs if "flash-attn==" in r)
        assert f"MAX_JOBS={profile.flash_attn.max_jobs}" in fa and "NVCC_THREADS=" in fa
    for extra in extras:
        for dist, version in profile.extras[extra].packages.items():
            assert f"{dist}=={version}" in constraints


def test_dockerfile_run_script_passes_shellcheck(tmp_path):
    for name, profile in PROFILES.items():
        script = tmp_path / f"{name}.sh"
        text = render(profile).run_script
        script.write_text(text)
        proc = subprocess.run([_tool("shellcheck"), str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout
        assert "--ulimit memlock=-1" in text and "--ipc=host" in text and "--shm-size" in text
        assert ("--gpus all" in text) is (profile.cuda is not None)


def test_dockerfile_build_without_engine_exits_2_with_the_build_command(tmp_path):
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "build-image",
            "--profile",
            "hopper",
            "--output",
            str(tmp_path / "out"),
            "--with",
            "verl",
            "--build",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "no Docker engine reachable" in proc.stderr
    assert f"docker build -f {tmp_path}/out/Dockerfile -t shop-r1:hopper-verl" in proc.stderr
    assert (tmp_path / "out" / "Dockerfile").is_file()
    assert os.access(tmp_path / "out" / "docker-run.sh", os.X_OK)


def test_dockerfile_unknown_extra_is_a_tool_error(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "build-image",
            "--profile",
            "cpu",
            "--output",
            str(tmp_path),
            "--with",
            "megatron",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "profile cpu has no extras.megatron section" in proc.stderr
