"""The messages the frameworks themselves print, as extracted from their sources.

`knowledge/framework_messages/<package>-<version>.jsonl` is written by
scripts/extract_messages.py (raise/warn/log sites of the Python sources, TORCH_CHECK
texts of C++ sources, sentence-like strings of compiled libraries). A log signature cites
the message it reads (`printed_by` in log_signatures.yaml); `cited_message` finds that
message again, so a framework release that drops or rewords it fails a test by name.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

MESSAGES_DIR = Path(__file__).with_name("knowledge") / "framework_messages"
PLACEHOLDER = "{}"
MIN_HEAD = 24  # fixed characters a quoted first part of a message needs


@dataclass(frozen=True)
class FrameworkMessage:
    package: str
    version: str
    text: str  # literal text, `{}` where the framework formats a value in
    file: str  # inside the wheel/sdist/site-packages
    line: int | None  # None for a string of a compiled library
    kind: str  # "raise ValueError", "warn", "log warning", "TORCH_CHECK", "binary string"
    offset: int | None = None  # a compiled library's string: where it is in the file

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return _regex(self.text.split(PLACEHOLDER))

    @functools.cached_property
    def heads(self) -> tuple[re.Pattern[str], ...]:
        """Each line of the message, whole and cut after each placeholder, while its fixed
        text stays long enough to name it: logs and threads often quote one line, or only
        the first part of it."""
        out = []
        for line in self.text.split("\n"):
            pieces = line.strip().split(PLACEHOLDER)
            for k in range(len(pieces), 0, -1):
                if sum(len(p.strip()) for p in pieces[:k]) < MIN_HEAD:
                    break
                out.append(_regex(pieces[:k]))
        return tuple(out)

    @property
    def at(self) -> str:
        """FILE:LINE, or FILE@OFFSET for a string of a compiled library."""
        return f"{self.file}@{self.offset}" if self.line is None else f"{self.file}:{self.line}"

    def read_by(self, pattern: re.Pattern[str], example: str) -> bool:
        """Does a signature (its pattern, its example line) read this message? Either the
        message, placeholders free, occurs in the example (whole, or its first part up to
        a placeholder: `heads`), or the pattern finds its text in the message as printed
        (a pattern written for one fixed part of a longer message)."""
        if self.regex.search(example) or any(pattern.search(t) for t in self.printed):
            return True
        return any(h.search(example) for h in self.heads)

    @property
    def printed(self) -> tuple[str, ...]:
        """The text, and for a raise also as a traceback's last line shows it (its class in
        front), so a signature that reads only raised errors (`^ImportError: ...`) can cite
        the messages it reads."""
        if self.kind.startswith("raise "):
            return (self.text, f"{self.kind.removeprefix('raise ')}: {self.text}")
        return (self.text,)


def _regex(pieces: list[str]) -> re.Pattern[str]:
    kept = [p for p in pieces if p.strip()]
    if kept:  # whitespace at the ends of a message is not something a log keeps
        kept[0], kept[-1] = kept[0].lstrip(), kept[-1].rstrip()
    return re.compile(".*?".join(re.escape(p) for p in kept) or "(?!)")


def kept_versions(directory: Path = MESSAGES_DIR) -> dict[str, str]:
    """package -> the version whose messages are kept."""
    out: dict[str, str] = {}
    for path in sorted(directory.glob("*.jsonl")):
        package, _, version = path.stem.partition("-")
        out[package] = version
    return out


@functools.lru_cache(maxsize=32)
def load_messages(
    package: str, version: str, directory: Path = MESSAGES_DIR
) -> tuple[FrameworkMessage, ...]:
    path = directory / f"{package}-{version}.jsonl"
    rows = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            rows.append(
                FrameworkMessage(
                    package,
                    version,
                    r["text"],
                    r["file"],
                    r.get("line"),
                    r["kind"],
                    r.get("offset"),
                )
            )
    return tuple(rows)


def cited_message(
    package: str,
    version: str,
    at: str,
    pattern: re.Pattern[str],
    example: str,
    directory: Path = MESSAGES_DIR,
) -> FrameworkMessage | None:
    """The kept message at `at` (FILE:LINE, or FILE@OFFSET for a compiled library's
    string) that the signature reads; None when there is none."""
    for msg in load_messages(package, version, directory):
        if msg.at == at and msg.read_by(pattern, example):
            return msg
    return None


def find_readers(
    pattern: re.Pattern[str], example: str, directory: Path = MESSAGES_DIR
) -> list[FrameworkMessage]:
    """Every kept message a signature reads, across packages (to propose a citation)."""
    out: list[FrameworkMessage] = []
    for package, version in kept_versions(directory).items():
        out += [
            m for m in load_messages(package, version, directory) if m.read_by(pattern, example)
        ]
    return out
