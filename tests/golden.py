"""Golden files of the doctor's tests; compare them with the `golden` fixture
(tests/conftest.py), rewrite them only with `pytest --update-goldens`."""

from __future__ import annotations

from repo_paths import GOLDEN

__all__ = ["GOLDEN"]
