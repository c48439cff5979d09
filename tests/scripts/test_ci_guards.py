"""No silent ways around CI: golden updates, a broken training stack under CI=true, and
scripts/test.sh never installing a CUDA torch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT

TEST_SH = ROOT / "scripts" / "test.sh"


# ---------------------------------------------------------------- goldens
def test_golden_update_rewrites_and_still_fails(tmp_path, golden):
    path = tmp_path / "g.txt"
    path.write_text("old\n")
    golden.update = True
    with pytest.raises(pytest.fail.Exception, match="rewritten by --update-goldens"):
        golden(path, "new\n")
    assert path.read_text() == "new\n"
    golden(path, "new\n")  # unchanged: compared, passes
    missing = tmp_path / "sub" / "new.txt"
    with pytest.raises(pytest.fail.Exception):
        golden(missing, "x")
    assert missing.read_text() == "x"


def test_golden_without_the_flag_only_compares(tmp_path, golden):
    path = tmp_path / "g.txt"
    path.write_text("old\n")
    assert golden.update is False  # this run was not started with --update-goldens
    with pytest.raises(AssertionError, match="differs from its golden"):
        golden(path, "new\n")
    assert path.read_text() == "old\n"
    with pytest.raises(AssertionError, match="missing"):
        golden(tmp_path / "none.txt", "x")
    assert not (tmp_path / "none.txt").exists()
    golden(path, "old\n")


def _pytest(args: list[str], env: dict[str, str], cwd: Path = ROOT):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_update_goldens_is_refused_in_ci():
    env = {**os.environ, "CI": "true"}
    proc = _pytest(
        ["--update-goldens", "--collect-only", "-q", "tests/shop_r1_doctor/render/test_json.py"],
        env,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "--update-goldens is refused under CI=true" in proc.stderr


def test_no_env_var_rewrites_goldens():
    # the old switches rewrote goldens for any value (even "0") and skipped the assert
    for path in (ROOT / "tests").rglob("*.py"):
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        assert "SHOP_R1_UPDATE_GOLDEN" not in text and "SHOP_R1_REGEN_GOLDEN" not in text, path


# ---------------------------------------------------------------- training stack in CI
@pytest.fixture
def broken_trl(tmp_path: Path) -> Path:
    pkg = tmp_path / "fake" / "trl"
    pkg.mkdir(parents=True)
    # what a missing or half-installed trl raises: importorskip turns it into a skip
    (pkg / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'trl._C'\")\n")
    return tmp_path / "fake"


def test_ci_fails_on_a_broken_training_stack_instead_of_skipping(broken_trl):
    target = "tests/shop_r1/test_demo.py"  # importorskip("trl") at the top
    path = os.pathsep.join([str(broken_trl), str(ROOT)])
    local = _pytest(["-q", target], {**os.environ, "PYTHONPATH": path, "CI": ""})
    # without CI: skipped (exit 5, nothing ran) so a laptop without the stack still runs
    assert local.returncode == 5 and "SKIPPED" in local.stdout, local.stdout + local.stderr
    ci = _pytest(["-q", target], {**os.environ, "PYTHONPATH": path, "CI": "true"})
    assert ci.returncode == 4, ci.stdout + ci.stderr
    assert "CI=true: the training stack must import" in ci.stderr
    assert "trl: ModuleNotFoundError: No module named 'trl._C'" in ci.stderr


def test_training_stack_imports_here():
    # what pytest_configure checks under CI=true
    from conftest import broken_training_stack

    if os.environ.get("CI"):
        assert broken_training_stack() == []
    else:
        assert isinstance(broken_training_stack(), list)


# ---------------------------------------------------------------- scripts/test.sh
FAKE_PYTHON = """#!/usr/bin/env bash
# A stand-in for python: logs each call; behaviour set by FAKE_* variables.
echo "$*" >> "$FAKE_LOG"
case "$*" in
  *"print(sys.prefix)"*) echo /fake/venv; exit 0 ;;
  *"sys.prefix != sys.base_prefix"*) exit 1 ;;  # "is a virtual environment"
  *"import sys, torch"*) exit "${FAKE_TORCH_IS_CUDA:-0}" ;;
  *"import torch;"*) echo "torch==2.13.0+cpu"; exit 0 ;;
  "-c import torch") exit "${FAKE_NO_TORCH:-0}" ;;
  "-m pip install"*"--index-url"*) exit "${FAKE_INDEX_FAILS:-0}" ;;
  "-m pip install"*) exit 0 ;;
  *) exit 3 ;;  # ruff and the rest: stop here
esac
"""


def _run_test_sh(tmp_path: Path, **fake: str):
    fake_py = tmp_path / "python"
    fake_py.write_text(FAKE_PYTHON)
    fake_py.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "PYTHON": str(fake_py),
        "FAKE_LOG": str(log),
        "SHOP_R1_TEST_NO_APT": "1",
        **fake,
    }
    proc = subprocess.run(
        ["bash", str(TEST_SH)], capture_output=True, text=True, env=env, timeout=60
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return proc, calls


def _torch_installs(calls: list[str]) -> list[str]:
    return [
        c for c in calls if c.startswith("-m pip install") and "torch==" in c and " -c " not in c
    ]


def test_test_sh_installs_torch_only_from_the_cpu_index(tmp_path):
    proc, calls = _run_test_sh(tmp_path, FAKE_NO_TORCH="1")
    installs = _torch_installs(calls)
    assert installs == [
        "-m pip install --retries 0 --timeout 30 --index-url https://download.pytorch.org/whl/cpu torch==2.13.0+cpu"
    ]
    # then the extras, with the installed torch pinned
    extras = [c for c in calls if c.startswith("-m pip install") and "-e .[test,train,ray]" in c]
    assert len(extras) == 1 and " -c " in extras[0]
    assert proc.returncode == 3  # our fake stops at ruff


def test_test_sh_fails_rather_than_fall_back_to_pypi(tmp_path):
    proc, calls = _run_test_sh(tmp_path, FAKE_NO_TORCH="1", FAKE_INDEX_FAILS="1")
    assert proc.returncode == 1
    assert "not falling back to PyPI" in proc.stderr
    assert len(_torch_installs(calls)) == 1  # no second try from another index
    assert not any("-e .[test,train,ray]" in c for c in calls)


def test_test_sh_refuses_an_installed_cuda_torch(tmp_path):
    proc, calls = _run_test_sh(tmp_path, FAKE_TORCH_IS_CUDA="1")
    assert proc.returncode == 1 and "is a CUDA build" in proc.stderr
    assert _torch_installs(calls) == [] and not any("-e .[test,train,ray]" in c for c in calls)


def test_test_sh_is_shellcheck_clean():
    exe = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if exe is None:
        pytest.fail("shellcheck not installed (pip install -e '.[test]')")
    proc = subprocess.run([exe, str(TEST_SH)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
