"""Checks the trainer's commands share, run before anything heavy is imported."""

from __future__ import annotations

from pathlib import Path

from shop_r1_doctor.errors import ToolError


def looks_local(ref: str) -> bool:
    """A model/tokenizer reference written as a path (./x, ../x, /x, ~/x), not a Hub id."""
    return ref.startswith(("./", "../", "/", "~", ".\\")) or ref in (".", "..")


def check_local_ref(ref: str, flag: str, what: str = "model") -> None:
    """One line for a local model/tokenizer directory that is missing or not a directory,
    instead of the Hub's "not a valid repo id" error that transformers gives for it."""
    path = Path(ref).expanduser()
    if path.is_file() and not (what == "model" and path.suffix.lower() == ".gguf"):
        raise ToolError(
            f"{flag} {ref}: is a file; give the {what}'s directory, a .gguf file or a Hub id"
        )
    if looks_local(ref) and not path.exists():
        raise ToolError(
            f"{flag} {ref}: no such directory; give a local {what} directory or a Hub id "
            "like Qwen/Qwen2.5-0.5B-Instruct"
        )
