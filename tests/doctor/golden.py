"""Golden files: compare, or rewrite them when SHOP_R1_REGEN_GOLDEN=1 (deliberately only)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SHOP_R1_REGEN_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8") if path.exists() else None
    assert expected is not None, f"{path} missing: run with SHOP_R1_REGEN_GOLDEN=1 once"
    assert actual == expected, f"{name} differs from its golden (SHOP_R1_REGEN_GOLDEN=1 to accept)"
