"""Typer groups of the trainer half; wired by shop_r1_doctor.cli.main."""
