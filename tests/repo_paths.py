"""Where things are, for tests in any folder: the repository, the tests, the fixtures.

Tests import these (tests/ is on sys.path through its conftest) instead of counting
`Path(__file__).parents[N]`, so a test file can move without its paths changing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
GOLDEN = FIXTURES / "golden"


def load_script(relpath: str) -> ModuleType:
    """A repository script (benchmarks/, scripts/: no packages) loaded as a module under
    its file name, registered in sys.modules so its dataclasses and pickles resolve."""
    path = ROOT / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
