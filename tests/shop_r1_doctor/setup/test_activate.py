"""The profile's environment in the venv setup makes: a real `python -m venv` (setup's own
first step, through `execute`), its activate sourced in bash and sh to read the variables
back, and deactivate putting the old values back."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.profiles import get_profile
from shop_r1_doctor.setup.activate import check_env, write_activation
from shop_r1_doctor.setup.execute import execute
from shop_r1_doctor.setup.install import Target, install_plan, render_text

H100 = Target(ccs=((9, 0),), driver=Version("580.95.05"), ram_bytes=64 * 2**30, cpus=32)


def _plan(venv: Path, profile: str = "hopper"):
    base = getattr(sys, "_base_executable", sys.executable)
    return install_plan(get_profile(profile), (), H100, venv=str(venv), base_python=base)


def _bash(script: str, shell: str = "bash") -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    proc = subprocess.run([shell, "-c", script], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """Setup's venv step for real (only that step: no package index needed)."""
    path = tmp_path_factory.mktemp("setup") / "env"
    plan = _plan(path)
    result = execute(dataclasses.replace(plan, steps=plan.steps[:1]))
    assert [s.returncode for s in result.steps] == [0]
    assert str(path / "bin" / "shop-r1-env.sh") in result.activation
    return path


def test_activate_sets_the_profiles_variables_and_deactivate_restores(venv):
    profile_env = get_profile("hopper").env
    assert profile_env["TORCH_CUDA_ARCH_LIST"] == "9.0"  # what the reads below expect
    out = _bash(
        "export TORCH_CUDA_ARCH_LIST=mine; unset VLLM_WORKER_MULTIPROC_METHOD\n"
        f". {venv}/bin/activate\n"
        'echo "$TORCH_CUDA_ARCH_LIST|$VLLM_WORKER_MULTIPROC_METHOD"\n'
        f". {venv}/bin/activate\n"  # activating twice keeps the first saved values
        "deactivate\n"
        'echo "$TORCH_CUDA_ARCH_LIST|${VLLM_WORKER_MULTIPROC_METHOD-unset}"'
    )
    assert out.splitlines() == ["9.0|spawn", "mine|unset"]


def test_env_file_sources_in_plain_sh_without_activating(venv):
    out = _bash(f'. {venv}/bin/shop-r1-env.sh; echo "$TORCH_CUDA_ARCH_LIST $VIRTUAL_ENV"', "sh")
    assert out == "9.0"


def test_fish_and_csh_activation_carry_the_values(venv):
    assert "set -gx TORCH_CUDA_ARCH_LIST '9.0'" in (venv / "bin/activate.fish").read_text()
    assert "setenv VLLM_WORKER_MULTIPROC_METHOD 'spawn'" in (venv / "bin/activate.csh").read_text()


def test_dry_run_and_json_show_the_environment(tmp_path):
    plan = _plan(tmp_path / "env")
    assert "export TORCH_CUDA_ARCH_LIST=9.0" in render_text(plan).splitlines()
    doc = plan.to_json()
    assert doc["env"] == {"TORCH_CUDA_ARCH_LIST": "9.0", "VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    assert f"{tmp_path}/env/bin/activate" in doc["activation"]
    doctor = plan.steps[-1]
    assert doctor.name == "doctor" and dict(doctor.env) == doc["env"]  # as an activated venv


def test_a_profile_without_env_leaves_activate_alone(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "e")], check=True)
    before = (tmp_path / "e/bin/activate").read_text()
    write_activation(tmp_path / "e", {}, "cpu")
    assert (tmp_path / "e/bin/activate").read_text() == before
    assert "export" not in (tmp_path / "e/bin/shop-r1-env.sh").read_text()
    assert _plan(tmp_path / "v", "cpu").to_json()["env"] == {}


@pytest.mark.parametrize(
    ("env", "field"),
    [({"A-B": "1"}, "env.A-B"), ({"X": "it's"}, "env.X"), ({"X": "$HOME"}, "env.X")],
)
def test_values_no_shell_reads_alike_are_refused(env, field):
    with pytest.raises(ToolError, match=f"profiles/x.yaml: {field}"):
        check_env(env, "profiles/x.yaml")
