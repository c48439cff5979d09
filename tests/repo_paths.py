"""Where things are, for tests in any folder: the repository, the tests, the fixtures.

Tests import these (tests/ is on sys.path through its conftest) instead of counting
`Path(__file__).parents[N]`, so a test file can move without its paths changing."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
GOLDEN = FIXTURES / "golden"
