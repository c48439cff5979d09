"""Read a failed run's log: known failure signatures, the last traceback, fatal signals.

The signatures are data (`knowledge/log_signatures.yaml`), loaded and validated here
once: each pattern must compile and match its own example line, so a broken regex
fails at load time with the file and entry named, never silently at scan time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shop_r1_doctor.schema import Reader

SIGNATURES_PATH = Path(__file__).with_name("knowledge") / "log_signatures.yaml"
SIGNATURES_SCHEMA = "shop-r1.log-signatures/1"
_CODE = re.compile(r"[A-Z][A-Z0-9_]+")
_REQUIRED = ("id", "code", "pattern", "title", "try", "source", "example")
_OPTIONAL = ("also", "silent")


@dataclass(frozen=True)
class Signature:
    id: str
    code: str
    pattern: re.Pattern[str]
    title: str
    try_: str
    source: str
    example: str
    also: tuple[str, ...] = ()
    silent: bool = False  # the failure lets the process exit 0 (training "succeeds")

    @property
    def codes(self) -> tuple[str, ...]:
        """Every failure mode this text can point to, the most likely first."""
        return (self.code, *self.also)


@dataclass(frozen=True)
class LogMatch:
    signature: Signature
    line_no: int  # 1-based line of the first match in the scanned text
    line: str  # that line, stripped and cut to 300 characters


_KEYS = {**dict.fromkeys(_REQUIRED, True), **dict.fromkeys(_OPTIONAL, False)}


def parse_signatures(
    data: Any, file: str, lines: Mapping[str, int] | None = None
) -> tuple[Signature, ...]:
    """Validate the YAML document; `lines`: key path -> line (schema.line_index)."""
    r = Reader(file, lines, "fix the signature (see the comment at the top of the file)")
    if not isinstance(data, dict) or data.get("schema") != SIGNATURES_SCHEMA:
        raise r.fail("schema", f"expected {SIGNATURES_SCHEMA!r}, got {_get(data, 'schema')!r}")
    r.mapping(data, "", {"schema": True, "signatures": True})
    if not isinstance(data["signatures"], list) or not data["signatures"]:
        raise r.fail("signatures", "expected a non-empty list")
    out: list[Signature] = []
    seen: set[str] = set()
    for where, entry in r.rows(data, "signatures"):
        out.append(_parse_entry(r, entry, where))
        if out[-1].id in seen:
            raise r.fail(f"{where}.id", f"duplicate id {out[-1].id!r}; give each its own id")
        seen.add(out[-1].id)
    return tuple(out)


def _get(data: Any, key: str) -> Any:
    return data.get(key) if isinstance(data, dict) else None


def _parse_entry(r: Reader, entry: dict[str, Any], where: str) -> Signature:
    r.mapping(entry, where, _KEYS)
    for key in _REQUIRED:
        r.text(entry, key, where)
    also = r.str_list(entry, "also", where, "finding codes") if "also" in entry else []
    for key, code in [("code", entry["code"]), *((f"also[{i}]", c) for i, c in enumerate(also))]:
        if not _CODE.fullmatch(code):
            raise r.fail(f"{where}.{key}", f"{code!r} is not an UPPER_SNAKE finding code")
    silent = r.flag(entry, "silent", where, False)
    r.https(entry, "source", where)
    try:
        pattern = re.compile(entry["pattern"])
    except re.error as exc:
        raise r.fail(f"{where}.pattern", f"not a valid regex ({exc})") from None
    if not pattern.search(entry["example"]):
        raise r.fail(f"{where}.pattern", "does not match its own example; fix one of them")
    return Signature(
        id=entry["id"],
        code=entry["code"],
        pattern=pattern,
        title=entry["title"],
        try_=entry["try"],
        source=entry["source"],
        example=entry["example"],
        also=tuple(also),
        silent=silent,
    )


def load_signatures_file(path: str | Path) -> tuple[Signature, ...]:
    r, data = Reader.read(path, "log signatures")
    return parse_signatures(data, str(path), r.lines)


@functools.lru_cache(maxsize=1)
def load_signatures() -> tuple[Signature, ...]:
    """The shipped signatures, validated once per process."""
    return load_signatures_file(SIGNATURES_PATH)


def scan_log(text: str, signatures: tuple[Signature, ...] | None = None) -> list[LogMatch]:
    """Known failure modes in `text`, in the order they first appear; one per code."""
    text = strip_prefixes(text)
    found: dict[str, LogMatch] = {}
    for sig in signatures if signatures is not None else load_signatures():
        m = sig.pattern.search(text)
        if m is None:
            continue
        line_no = text.count("\n", 0, m.start()) + 1
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        line = text[start : end if end != -1 else len(text)].strip()[:300]
        match = LogMatch(sig, line_no, line)
        # Signatures are ordered specific-first in the file; the first one per code wins.
        if sig.code not in found:
            found[sig.code] = match
    return sorted(found.values(), key=lambda m: m.line_no)


# Line prefixes added by launchers and by `shop-r1 run`, removed before reading blocks:
# `[12:03:04.123] `, `(pid=5477) `, `(RayWorker pid=12, ip=10.0.0.1) `, `[rank0]: `.
_PREFIX = re.compile(
    r"^(?:\[\d{2}:\d{2}:\d{2}(?:\.\d+)?\] |\((?:[\w:.-]+ )?pid=\d+(?:, ip=[\d.]+)?\) ?"
    r"|\[(?:rank|default)\d+\]: ?)+",
    re.M,
)


def strip_prefixes(text: str) -> str:
    return _PREFIX.sub("", text)


_TB_START = re.compile(r"^Traceback \(most recent call last\):\s*$", re.M)
_FATAL_START = re.compile(r"^Fatal Python error: .*$", re.M)
_SIGNAL_LINE = re.compile(
    r"\*\*\* (?:SIG[A-Z]+|Signal \d+) received|\bSegmentation fault\b|\bAborted \(core dumped\)"
    r"|\bBus error\b|double free detected|terminate called after throwing|\bcore dumped\b"
    r"|\bexited with (?:signal|code -\d+)|received signal SIG[A-Z]+|\bSIG(?:SEGV|ABRT|BUS|ILL|FPE|KILL)\b"
)


def extract_traceback(text: str, max_lines: int = 80) -> str | None:
    """The last Python traceback block: its header, frames and the exception line(s)."""
    text = strip_prefixes(text)
    starts = list(_TB_START.finditer(text))
    if not starts:
        return None
    lines = text[starts[-1].start() :].splitlines()
    block = [lines[0]]
    for i, line in enumerate(lines[1:], start=1):
        if line.startswith((" ", "\t")) or not line.strip():
            block.append(line)
            continue
        # The first unindented line ends the frames: it is the exception; keep lines that
        # continue its message until a blank line or something that reads like a log line.
        block.append(line)
        for extra in lines[i + 1 : i + 6]:
            if not extra.strip() or _looks_like_log_line(extra):
                break
            block.append(extra)
        break
    if len(block) > max_lines:
        cut = len(block) - (max_lines - 1)
        block = [*block[:10], f"    ... {cut} lines cut ...", *block[10 + cut :]]
    return "\n".join(block).rstrip() or None


def _looks_like_log_line(line: str) -> bool:
    return bool(
        re.match(r"^(?:\d{4}-\d\d-\d\d|\[|INFO|WARNING|ERROR|DEBUG|\w+:\s*\d+%|wandb:)", line)
    )


def extract_fatal(text: str, max_lines: int = 40) -> str | None:
    """`Fatal Python error: ...` and its C-level stack (faulthandler), the last one."""
    text = strip_prefixes(text)
    starts = list(_FATAL_START.finditer(text))
    if not starts:
        return None
    lines = text[starts[-1].start() :].splitlines()
    block = [lines[0]]
    for line in lines[1 : max_lines + 1]:
        # faulthandler: blank line, "Thread 0x... (most recent call first):", "  File ..." lines.
        if line.strip() and not (
            line.startswith((" ", "\t"))
            or re.match(r"^(?:Current thread|Thread|Stack) .*\(most recent call first\):", line)
            or line.startswith(("Extension modules:", "Current thread", "Stack"))
        ):
            break
        block.append(line)
    return "\n".join(block).rstrip()


def signal_lines(text: str, limit: int = 8) -> list[str]:
    """Lines that say a native crash or a fatal signal happened (last `limit`, deduplicated)."""
    seen: dict[str, None] = {}
    for line in strip_prefixes(text).splitlines():
        if _SIGNAL_LINE.search(line):
            seen.setdefault(line.strip()[:300], None)
    return list(seen)[-limit:]
