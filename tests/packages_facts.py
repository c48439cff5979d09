"""Helpers shared by the decision rows of checks/packages.py
(tests/shop_r1_doctor/checks/test_packages_rows.py)."""

from __future__ import annotations

from shop_r1_doctor.knowledge import load_compat

SOURCE = load_compat().numpy2.source


def pkg(version: str | None, *requires: str) -> dict:
    return {"version": version, "requires": list(requires)}


LINUX = {"os": "linux", "arch": "x86_64", "python": {"version": "3.12.3"}}
