"""Write a file all at once: into a temporary sibling, then rename over the target.

A failure or Ctrl-C mid-write leaves the old file (or none) and no half-written one,
so a re-run starts clean. Errors name the target path, never the temporary name.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary sibling path to write; renamed over `path` when the block finishes,
    removed when it fails. For writers that take a file name (pyarrow)."""
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(target))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:  # name the user's path, not the temporary one
        raise type(exc)(exc.errno, exc.strerror, str(target)) from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


@contextmanager
def atomic_open(
    path: str | Path, mode: str = "w", encoding: str | None = "utf-8"
) -> Iterator[IO[Any]]:
    """`open(path, mode)` that only appears at `path` when the block finishes."""
    with atomic_path(path) as tmp, tmp.open(mode, encoding=None if "b" in mode else encoding) as fh:
        yield fh


def write_text(path: str | Path, text: str) -> None:
    """`Path.write_text`, atomically."""
    with atomic_open(path) as fh:
        fh.write(text)
