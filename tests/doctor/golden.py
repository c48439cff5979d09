"""Golden files of the doctor's tests; compare them with the `golden` fixture
(tests/conftest.py), rewrite them only with `pytest --update-goldens`."""

from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
