"""The wording of every check module's findings against its golden file
(tests/fixtures/golden/checks/<module>.txt; rewrite with `pytest --update-goldens`)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from check_wording import CHECK_GOLDEN, cases, golden_path, golden_text, module_name, wording

from shop_r1_doctor import checks
from shop_r1_doctor.checks import MODULES
from shop_r1_doctor.knowledge import load_codes

NAMES = [module_name(m) for m in MODULES]


@functools.cache
def _wording() -> dict:
    return wording(cases())


@pytest.mark.parametrize("module", MODULES, ids=NAMES)
def test_check_module_wording_matches_its_golden(module, golden) -> None:
    golden(golden_path(module), golden_text(_wording()[module_name(module)]))


def test_every_check_module_has_a_golden_and_no_golden_is_orphaned() -> None:
    sources = {
        p.stem for p in Path(checks.__file__).parent.glob("*.py") if not p.stem.startswith("_")
    }
    # inputs.py and docs.py document the checks; they emit no findings
    assert sources - {"inputs", "docs"} == set(NAMES)
    assert sorted(p.stem for p in CHECK_GOLDEN.glob("*.txt")) == sorted(NAMES)


@pytest.mark.parametrize("module", MODULES, ids=NAMES)
def test_every_code_a_module_emits_is_in_its_golden(module) -> None:
    path = golden_path(module)
    assert path.exists(), f"{path} missing: write it with pytest --update-goldens"
    text = path.read_text(encoding="utf-8")
    emitted = {f.code for f in _wording()[module_name(module)]}
    assert {c for c in emitted if f"[{c}]" not in text} == set()


def test_every_snapshot_code_has_wording_in_some_golden() -> None:
    """A code the checks can emit from a snapshot that no golden shows has no case."""
    shown = "".join(p.read_text(encoding="utf-8") for p in CHECK_GOLDEN.glob("*.txt"))
    visible = {c for c, info in load_codes().items() if not info.log_only}
    # CHECK_FAILED is the runner's; PROFILE_DEVIATION comes from profiles.match
    assert {
        c for c in visible - {"CHECK_FAILED", "PROFILE_DEVIATION"} if f"[{c}]" not in shown
    } == set()
