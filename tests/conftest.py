"""Shared test helpers. Fixtures recorded on real GPU machines live in tests/fixtures/.

Two ways around the suite are closed here:
- golden files change only with an explicit `pytest --update-goldens`, which is refused
  under CI=true and still fails every test whose golden it rewrote (review, then rerun);
- under CI=true the training stack (torch, transformers, TRL, datasets, accelerate) must
  import: the training tests `importorskip` it for machines without it, and a CI run that
  skipped them all would be green with a broken stack.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# What CI installs with the `train` extra; `trl` names the trainers the code uses.
TRAINING_STACK = ("torch", "transformers", "trl", "datasets", "accelerate")
TRAINING_NAMES = {"trl": ("GRPOTrainer", "SFTTrainer", "GRPOConfig", "SFTConfig")}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def broken_training_stack() -> list[str]:
    """`name: error` for each part of the training stack that does not import."""
    broken = []
    for name in TRAINING_STACK:
        try:
            module = importlib.import_module(name)
            for attr in TRAINING_NAMES.get(name, ()):
                getattr(module, attr)
        except Exception as exc:  # any failure to import is the finding
            first = (str(exc).strip().splitlines() or [""])[0]
            broken.append(f"{name}: {type(exc).__name__}: {first}")
    return broken


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden files that differ (refused under CI=true); the tests whose "
        "goldens were rewritten fail: review `git diff`, then rerun without the flag",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not in_ci():
        return
    if config.getoption("--update-goldens"):
        raise pytest.UsageError(
            "--update-goldens is refused under CI=true: goldens change in a reviewed commit"
        )
    broken = broken_training_stack()
    if broken:
        raise pytest.UsageError(
            "CI=true: the training stack must import, or its tests would be skipped: "
            + "; ".join(broken)
        )


class Golden:
    """Compare text with a golden file; with --update-goldens rewrite it and fail."""

    def __init__(self, update: bool) -> None:
        self.update = update

    def __call__(self, path: Path, actual: str) -> None:
        if self.update:
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old != actual:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(actual, encoding="utf-8")
                pytest.fail(
                    f"{path} rewritten by --update-goldens: review the diff, then rerun "
                    "without the flag",
                    pytrace=False,
                )
        assert path.exists(), f"{path} missing: write it with pytest --update-goldens and review it"
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"{path.name} differs from its golden ({path})"


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    return Golden(bool(request.config.getoption("--update-goldens")))


@pytest.fixture(autouse=True)
def _fresh_memo_caches():
    """Empty the project's memo caches (parser, rewards, ROUGE tokens) before each test,
    so no test passes on a value another test computed, and a mutation tool's forked
    workers run the code instead of reading results cached by the clean run."""
    # The doctor's caches hold parsed knowledge files: re-reading them for every test
    # costs seconds, so they are emptied only under mutation testing (mutmut sets this).
    prefixes = (
        ("shop_r1.", "shop_r1_doctor.") if os.environ.get("MUTANT_UNDER_TEST") else ("shop_r1.",)
    )
    for name, module in list(sys.modules.items()):
        if not name.startswith(prefixes) or module is None:
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and hasattr(value, "__wrapped__"):
                clear()
    yield


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
