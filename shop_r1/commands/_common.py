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


# What `pip install 'shop-r1[train]'` adds to the light install (pyproject.toml), by import
# name: a login node or a CI job runs the doctor and `launch` without them.
TRAIN_EXTRA = ("torch", "transformers", "trl", "datasets", "accelerate")


def missing_modules(names: tuple[str, ...] = TRAIN_EXTRA) -> list[str]:
    """Which of `names` this interpreter cannot find (nothing is imported)."""
    import importlib.util

    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder that refuses it, a broken parent
            found = False
        if not found:
            missing.append(name)
    return missing


def require_train_extra(command: str, instead: str = "") -> None:
    """One line naming the extra to install, instead of a ModuleNotFoundError traceback
    from deep inside the command."""
    missing = missing_modules()
    if missing:
        raise ToolError(
            f"{command} needs the `train` extra ({', '.join(missing)} not installed in "
            f"this environment): pip install 'shop-r1[train]'" + (f"; {instead}" if instead else "")
        )
