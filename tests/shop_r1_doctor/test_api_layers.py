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

import shop_r1
import shop_r1_doctor
import shop_r1_doctor.cli

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


PUBLIC = {"shop_r1_doctor.api", "shop_r1_doctor.errors", "shop_r1_doctor.cli.output"}


def _doctor_internals():
    """Every top-level doctor module, with the CLI package split into its modules."""
    top = {f"shop_r1_doctor.{m.name}" for m in pkgutil.iter_modules(shop_r1_doctor.__path__)}
    cli = {
        f"shop_r1_doctor.cli.{m.name}" for m in pkgutil.iter_modules(shop_r1_doctor.cli.__path__)
    }
    return (top - {"shop_r1_doctor.cli"}) | cli


def test_trainer_forbidden_list_covers_every_internal_module():
    (api,) = [c for c in _contracts() if "public API" in c["name"]]
    assert set(api["forbidden_modules"]) == _doctor_internals() - PUBLIC


def test_no_contract_has_exceptions():
    # an `ignore_imports` line is how an entry point ends up inside a half again
    assert [c["name"] for c in _contracts() if c.get("ignore_imports")] == []


def test_every_trainer_module_but_the_entry_point_is_a_source():
    # the entry point (shop_r1.cli) sits above both halves; any other trainer module
    # left out of the sources would escape the public-API and the entry-point contracts
    trainer = {f"shop_r1.{m.name}" for m in pkgutil.iter_modules(shop_r1.__path__)}
    (api,) = [c for c in _contracts() if "public API" in c["name"]]
    (entry,) = [c for c in _contracts() if c["name"] == "Nothing imports the entry point"]
    assert set(api["source_modules"]) == trainer - {"shop_r1.cli"}
    assert set(entry["source_modules"]) == trainer - {"shop_r1.cli"} | {"shop_r1_doctor"}


def test_entry_point_reaches_the_doctor_through_its_root_app_only():
    (wiring,) = [c for c in _contracts() if c["name"].startswith("The entry point wires")]
    assert wiring["source_modules"] == ["shop_r1.cli"]
    assert set(wiring["forbidden_modules"]) == _doctor_internals() - PUBLIC - {
        "shop_r1_doctor.cli.main"
    }


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
