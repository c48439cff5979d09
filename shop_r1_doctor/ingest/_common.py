"""What every dump parser shares: cleaned, numbered lines and the partial facts they yield.

A parser is a pure function of the pasted text's lines. It returns a `Partial`: the
snapshot sections it is sure of (snapshot contract, every field optional) and the line
numbers it read, or None when it recognised nothing. What a dump does not say stays out
of the facts; "not installed" / "not available" are written only where the dump says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from shop_r1_doctor.errors import ToolError


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the file as pasted
    text: str  # markdown quote markers, ANSI colours and trailing blanks removed


@dataclass
class Partial:
    parser: str
    facts: dict[str, Any] = field(default_factory=dict)
    lines: list[int] = field(default_factory=list)

    def section(self, name: str) -> dict[str, Any]:
        return self.facts.setdefault(name, {})

    def package(self, name: str, version: str | None, line: int) -> None:
        """Record an installed distribution (version None: installed, version unknown)."""
        name = dist_name(name)
        packages = self.section("packages")
        packages[name] = better_package(
            packages.get(name, ...), {"version": version} if version else {}
        )
        self.lines.append(line)

    def absent(self, name: str, line: int) -> None:
        """The dump says this distribution is not installed."""
        self.section("packages")[dist_name(name)] = None
        self.lines.append(line)


def dist_name(name: str) -> str:
    """The snapshot's key for a distribution: PEP 503's normal form, as the live probe
    writes it (`pip freeze` prints `flash_attn`, `PyYAML`; the checks ask `flash-attn`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class DumpError(ToolError):
    """Malformed input: one line naming the file and the line."""


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_QUOTE = re.compile(r"^(?:\s{0,3}>)+ ?")  # `> ` of a quoted reply in an issue thread
# What dumps print for a value they could not get: unknown, not absent.
UNKNOWN_VALUES = frozenset(
    {"", "n/a", "na", "could not collect", "unknown", "<fill in>", "not set", "none found"}
)
NOT_INSTALLED = frozenset({"not installed", "not found"})


def clean_lines(text: str) -> list[Line]:
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _QUOTE.sub("", _ANSI.sub("", raw)).replace("\t", "    ").rstrip()
        if line.lstrip().startswith("```"):
            line = ""  # a markdown fence: the dump inside is read, the fence is not
        out.append(Line(number, line))
    return out


def is_unknown(value: str) -> bool:
    return value.strip().strip("`*").lower() in UNKNOWN_VALUES


def version_or_error(value: str, what: str, where: str, line: Line) -> str:
    """`value` when it is a version (PEP 440); a one-line error naming the line if not."""
    text = value.strip().strip("`")
    try:
        Version(text)
    except InvalidVersion:
        raise DumpError(f"{where}:{line.number}: {what} {text!r} is not a version") from None
    return text


def short_cuda(version: str) -> str:
    """`12.4.131` -> `12.4` (the snapshot's CUDA versions are major.minor)."""
    parts = version.split(".")
    return ".".join(parts[:2])


def better_package(old: Any, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """Of two records of one distribution (`...` = none yet), the more exact one.

    Installed beats "not installed"; a version beats none; `2.5.1+cu124` beats `2.5.1`;
    otherwise the first one stays (sources come most exact first).
    """
    if old is ...:
        return new
    if old is None or new is None:
        return old if old is not None else new
    ov, nv = _version(old), _version(new)
    if ov is None:
        return new if nv is not None else old
    if nv is not None and nv.public == ov.public and nv.local and not ov.local:
        return new
    return old


def _version(record: dict[str, Any]) -> Version | None:
    try:
        return Version(record["version"]) if record.get("version") else None
    except InvalidVersion:
        return None
