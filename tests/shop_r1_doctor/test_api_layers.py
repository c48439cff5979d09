"""The import-linter contracts (pyproject.toml) hold, and every doctor module is in a layer.

`lint-imports` runs in scripts/test.sh; this test runs the same contracts in the suite and
adds what import-linter cannot say without containers: a new top-level module of the
doctor must be placed in a layer, or it would escape every contract.
"""

import os
import pkgutil
import subprocess
import sys

import pytest
from repo_paths import ROOT

import shop_r1_doctor

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (CI and the dev venv)

LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _contracts():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_every_doctor_module_is_in_a_layer():
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    placed = {
        name.strip().removeprefix("shop_r1_doctor.")
        for layer in layers["layers"]
        for name in layer.replace("|", ":").split(":")
    }
    modules = {m.name for m in pkgutil.iter_modules(shop_r1_doctor.__path__)}
    assert modules - placed == set(), "add these modules to the layers contract in pyproject.toml"
    assert placed - modules == set(), "the layers contract names modules that do not exist"


def test_trainer_forbidden_list_covers_every_internal_module():
    (api,) = [c for c in _contracts() if "public API" in c["name"]]
    internal = {f"shop_r1_doctor.{m.name}" for m in pkgutil.iter_modules(shop_r1_doctor.__path__)}
    public = {"shop_r1_doctor.api", "shop_r1_doctor.errors"}
    assert set(api["forbidden_modules"]) == internal - public


def test_contracts_are_kept():
    pytest.importorskip("importlinter")
    proc = subprocess.run(
        [sys.executable, "-c", LINT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
