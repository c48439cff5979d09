"""Typer groups of the trainer half; wired by shop_r1.cli (the entry point)."""
