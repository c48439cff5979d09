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
from repo_paths import ROOT

from shop_r1_doctor.dockerfile import render
from shop_r1_doctor.profiles.model import load_profiles

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
    rendered = render(profile, extras)
    parser.content = rendered.dockerfile
    instructions = parser.structure
    froms = [i["value"] for i in instructions if i["instruction"] == "FROM"]
    assert froms == [profile.base_image]
    assert ":" in froms[0] and not froms[0].endswith(":latest")
    runs = [i["value"] for i in instructions if i["instruction"] == "RUN"]
    pip_runs = [r for r in runs if "pip install" in r]
    assert pip_runs and all("--no-cache-dir" in r for r in pip_runs)
    torch_run = next(r for r in pip_runs if f"torch=={profile.torch.version}" in r)
    assert '--index-url "$TORCH_INDEX_URL"' in torch_run
    args = [i["value"] for i in instructions if i["instruction"] == "ARG"]
    assert args == [f"TORCH_INDEX_URL={profile.torch.index_url}"]
    assert pip_runs.index(torch_run) == 0, "torch must be installed before anything that pins it"
    assert parser.envs["PIP_CONSTRAINT"] == "/opt/constraints.txt"
    copies = [i["value"] for i in instructions if i["instruction"] == "COPY"]
    assert copies == ["constraints.txt /opt/constraints.txt", "shop-r1 /opt/shop-r1"]
    constraints = rendered.constraints.splitlines()
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
    # Every version rule of the profile is in the one file every layer installs under.
    for dist in profile.packages:
        assert any(line.startswith(dist) for line in constraints), dist


def test_dockerfile_run_script_passes_shellcheck(tmp_path):
    for name, profile in PROFILES.items():
        script = tmp_path / f"{name}.sh"
        text = render(profile).run_script
        script.write_text(text)
        proc = subprocess.run([_tool("shellcheck"), str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout
        assert "--ulimit memlock=-1" in text and "--ipc=host" in text and "--shm-size" in text
        assert '--user "$(id -u):$(id -g)"' in text
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
    assert f"docker build -t shop-r1:hopper-verl {tmp_path}/out" in proc.stderr
    assert (tmp_path / "out" / "Dockerfile").is_file()
    assert (
        tmp_path / "out" / "shop-r1" / "shop_r1_doctor" / "profiles_data" / "hopper.yaml"
    ).is_file()
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


VERL_METADATA = ROOT / "tests" / "fixtures" / "index" / "pypi" / "metadata" / "verl-0.9.1.METADATA"


@pytest.mark.parametrize("name", [n for n in sorted(PROFILES) if "verl" in PROFILES[n].extras])
def test_verl_constraints_keep_what_verl_declares(name):
    """One constraints file: the transformers the profile's layer picks is one verl accepts,
    so the verl layer cannot replace it (verl 0.9.1: transformers>=5.5.3,!=5.6.0,<5.11)."""
    from email.parser import Parser

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    from shop_r1_doctor.profiles.resolve import resolve

    meta = Parser().parsestr(VERL_METADATA.read_text())
    declared = {}
    for line in meta.get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            declared[req.name] = req.specifier
    pins = {p.dist: p.spec for p in resolve(PROFILES[name], ("verl",)).pins}
    for dist in ("transformers", "numpy"):
        assert dist in pins, dist
        # Every candidate the pin allows is one verl's metadata allows too.
        for version in ("1.26.4", "2.0.0", "5.5.3", "5.6.0", "5.10.2", "5.11.0", "5.12.1"):
            if pins[dist].contains(version):
                assert declared[dist].contains(version), (dist, version, pins[dist])
    assert not SpecifierSet(str(pins["transformers"])).contains("5.11.0")


def test_conflicting_extra_fails_profiles_check_and_build_image(tmp_path):
    import msgspec

    from shop_r1_doctor.errors import ToolError
    from shop_r1_doctor.knowledge import load_compat
    from shop_r1_doctor.profiles.check import check_profile
    from shop_r1_doctor.profiles.model import ExtraSpec

    hopper = PROFILES["hopper"]
    bad_verl = ExtraSpec("verl", {"verl": "0.9.1"}, {"transformers": "<5.5"})
    bad = msgspec.structs.replace(hopper, extras={**hopper.extras, "verl": bad_verl})
    problems = [str(p) for p in check_profile(bad, load_compat())]
    assert any("--with verl: transformers: no version satisfies" in p for p in problems), problems
    with pytest.raises(ToolError, match="conflict: transformers"):
        render(bad, ("verl",))


def test_build_image_renders_from_an_installed_wheel(tmp_path):
    """No checkout: profiles and the project files come from the package data."""
    wheels = tmp_path / "wheels"
    # Build from a copy: setuptools writes build/ and *.egg-info into the source tree.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("shop_r1", "shop_r1_doctor", "profiles"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    import importlib.util

    # Offline when the build backend is already here; else pip fetches it (PyPI).
    have_backend = all(importlib.util.find_spec(m) for m in ("setuptools", "wheel"))
    isolation = ["--no-build-isolation"] if have_backend else []
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            *isolation,
            "-w",
            str(wheels),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    site = tmp_path / "site"
    wheel = next(wheels.glob("shop_r1-*.whl"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1_doctor.cli.main",
            "build-image",
            "--profile",
            "cpu",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    context = tmp_path / "out" / "shop-r1"
    assert (
        str(site)
        in subprocess.run(
            [sys.executable, "-c", "import shop_r1_doctor; print(shop_r1_doctor.__file__)"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        ).stdout
    )
    assert (context / "pyproject.toml").read_text() == (ROOT / "pyproject.toml").read_text()
    assert (context / "shop_r1_doctor" / "profiles_data" / "hopper.yaml").is_file()
    assert not list(context.rglob("__pycache__"))


def _build_image(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "shop_r1.cli", "build-image", "-o", str(tmp_path / "out"), *args],
        capture_output=True,
        text=True,
    )


def test_build_image_warns_when_the_machine_gpu_is_not_covered(tmp_path):
    """The seed incident's machine (RTX PRO 6000, sm_120) with the data-center profile: the
    image would have no kernels for it. A GPU name as --profile picks the right one."""
    from machines import machine_snapshot

    snap = machine_snapshot("h100")
    snap["gpus"][0].update(name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition")
    snap["gpus"][0].update(compute_capability="12.0")
    path = tmp_path / "rtxpro.json"
    path.write_text(json.dumps(snap))
    proc = _build_image(tmp_path, "--profile", "blackwell-dc", "--snapshot", str(path))
    assert proc.returncode == 0, proc.stderr
    (warning,) = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert "(sm_120)" in warning and "blackwell-dc" in warning
    assert "--profile blackwell or blackwell-rtx" in warning
    for profile in ("RTX PRO 6000", "blackwell", "sm_120"):
        proc = _build_image(tmp_path, "--profile", profile, "--snapshot", str(path))
        assert proc.returncode == 0 and "warning:" not in proc.stderr, (profile, proc.stderr)
    text = (tmp_path / "out" / "Dockerfile").read_text()  # the last one: sm_120 -> blackwell-rtx
    assert "FLASH_ATTN_CUDA_ARCHS=120 " in text
    # the family builds for both classes
    _build_image(tmp_path, "--profile", "blackwell", "--snapshot", str(path))
    assert "FLASH_ATTN_CUDA_ARCHS='100;120'" in (tmp_path / "out" / "Dockerfile").read_text()


def test_build_image_unknown_profile_is_one_line_with_a_did_you_mean(tmp_path):
    proc = _build_image(tmp_path, "--profile", "blackwel")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "did you mean 'blackwell'" in proc.stderr
