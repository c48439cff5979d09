"""`shop-r1 data` (placeholder until its owner fills it in)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
