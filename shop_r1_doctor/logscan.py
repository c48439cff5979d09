"""Read a failed run's log: known failure signatures, the last traceback, fatal signals.

The signatures are data (`knowledge/log_signatures.yaml`), loaded and validated here
once: each pattern must compile and match its own example line, so a broken regex
fails at load time with the file and entry named, never silently at scan time.

The same file names the evidence a log can carry (a Blackwell GPU, an old GPU, TRL or
vLLM in the traceback, WSL, a container, ...). A signature may require evidence
(`when`), be ruled out by it (`unless`) and carry a `rank`; `diagnose_log` orders the
matches by rank, then by how much of their evidence the log shows, then by line, so the
report leads with the cause the log supports rather than with the first line that
matched. A symptom shared by several causes maps to a generic code unless the log shows
the specific one (knowledge kept in the YAML, not here).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from shop_r1_doctor import pip_offered
from shop_r1_doctor.findings import Severity
from shop_r1_doctor.schema import (
    Contract,
    FieldError,
    decode,
    decode_file,
    https,
    listing,
    nonempty,
)

SIGNATURES_PATH = Path(__file__).with_name("knowledge") / "log_signatures.yaml"
SIGNATURES_SCHEMA = "shop-r1.log-signatures/1"
_CODE = re.compile(r"[A-Z][A-Z0-9_]+")
_EVIDENCE_NAME = re.compile(r"[a-z][a-z0-9_]*")
Codes = Annotated[tuple[str, ...], listing("finding codes")]
Names = Annotated[tuple[str, ...], listing("evidence names")]


def _pattern(pattern: re.Pattern[str], example: str | None = None) -> None:
    if not pattern.pattern:
        raise FieldError("pattern", "expected a non-empty string, got ''")
    if example is not None and not pattern.search(example):
        raise FieldError("pattern", "does not match its own example; fix one of them")


class Evidence(Contract, frozen=True):
    """A fact a log can show about the run: a GPU family, a framework, a platform."""

    name: str = msgspec.field(name="id")
    pattern: re.Pattern[str]
    meaning: str
    # a test a match must also pass, on its named groups, where a regex cannot decide
    # (version order: pip_offered.TESTS); absent: the match alone is the evidence
    holds: Literal["below_every_offered", "above_every_offered"] | None = None

    def shown_in(self, text: str) -> re.Match[str] | None:
        """The first match in `text` that shows this evidence."""
        if self.holds is None:
            return self.pattern.search(text)
        test = pip_offered.TESTS[self.holds]
        return next((m for m in self.pattern.finditer(text) if test(m)), None)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise FieldError("id", f"expected a non-empty string, got {self.name!r}")
        _pattern(self.pattern)
        nonempty(self, "meaning")
        if not _EVIDENCE_NAME.fullmatch(self.name):
            raise FieldError("id", f"{self.name!r}: evidence names are lower_snake words")
        if self.holds is not None and not {"req", "offered"} <= set(self.pattern.groupindex):
            raise FieldError(
                "pattern", f"{self.holds} reads the groups (?P<req>) and (?P<offered>)"
            )


class PrintedBy(Contract, frozen=True):
    """What prints the text a signature reads: a framework's message site (package,
    version, FILE:LINE in knowledge/framework_messages/, FILE@OFFSET for a string of a
    compiled library), or `outside`: a program that is no framework (bash, the kernel,
    pip, nvidia-smi, docker), named there."""

    package: str | None = None
    version: str | None = None
    at: str | None = None
    outside: str | None = None

    def __post_init__(self) -> None:
        cited = (self.package, self.version, self.at)
        if self.outside is not None:
            if any(v is not None for v in cited):
                raise FieldError("outside", "give either `outside` or package/version/at")
            nonempty(self, "outside")
        elif any(v is None or not v.strip() for v in cited):
            raise FieldError(
                "package", "expected package, version and at (FILE:LINE or FILE@OFFSET), or outside"
            )


class Signature(Contract, frozen=True):
    id: str
    code: str
    pattern: re.Pattern[str]
    title: str
    try_: str = msgspec.field(name="try")
    source: str
    example: str
    also: Codes = ()
    silent: bool = False  # the failure lets the process exit 0 (training "succeeds")
    when: Names = ()  # evidence that must all be in the log for this to apply
    unless: Names = ()  # evidence that rules this signature out
    prefer: Names = ()  # evidence that makes this the likelier reading
    rank: int = 0  # root causes above their consequences; generic codes below specific
    # Lower than the code's own severity when this text alone is a guess: the log shows
    # the symptom (a bare `Killed`) but not the evidence for the cause (the kernel's OOM
    # line). Absent: the code's severity in codes.yaml.
    severity: Severity | None = None
    # where the text comes from (tests/shop_r1_doctor/test_signature_sources.py finds it
    # again in the kept framework messages); absent: not traced to a message yet
    printed_by: Annotated[
        tuple[PrintedBy, ...], listing("{package, version, at} or {outside}")
    ] = ()

    def __post_init__(self) -> None:
        nonempty(self, "id", "title", "try_", "example")
        for key, code in [
            ("code", self.code),
            *((f"also[{i}]", c) for i, c in enumerate(self.also)),
        ]:
            if not _CODE.fullmatch(code):
                raise FieldError(key, f"{code!r} is not an UPPER_SNAKE finding code")
        https(self.source, "source")
        _pattern(self.pattern, self.example)

    @property
    def codes(self) -> tuple[str, ...]:
        """Every failure mode this text can point to, the most likely first."""
        return (self.code, *self.also)


@dataclass(frozen=True)
class LogMatch:
    signature: Signature
    line_no: int  # 1-based line of the first match in the scanned text
    line: str  # that line, stripped and cut to 300 characters


class Knowledge(Contract, frozen=True):
    """Signatures and evidence patterns; every `when`/`unless`/`prefer` name must exist."""

    schema: Literal["shop-r1.log-signatures/1"]
    signatures: tuple[Signature, ...]
    # A list, not a mapping: evidence names (wsl, container, ...) are values here, so they
    # never read as knowledge keys beside the snapshot facts of the same name.
    evidence: Annotated[tuple[Evidence, ...], listing("{id, pattern, meaning}")] = ()

    def __post_init__(self) -> None:
        if not self.signatures:
            raise FieldError("signatures", "expected a non-empty list")
        known: set[str] = set()
        for i, e in enumerate(self.evidence):
            if e.name in known:
                raise FieldError(f"evidence[{i}].id", f"{e.name!r} is named twice")
            known.add(e.name)
        seen: set[str] = set()
        for i, sig in enumerate(self.signatures):
            if sig.id in seen:
                raise FieldError(
                    f"signatures[{i}].id", f"duplicate id {sig.id!r}; give each its own id"
                )
            seen.add(sig.id)
            for key in ("when", "unless", "prefer"):
                for j, name in enumerate(getattr(sig, key)):
                    if name not in known:
                        raise FieldError(
                            f"signatures[{i}].{key}[{j}]",
                            f"unknown evidence {name!r}; known: {', '.join(sorted(known)) or 'none'}",
                        )


_HINT = "fix the signature (see the comment at the top of the file)"


def parse_signatures(
    data: Any, file: str, lines: Mapping[str, int] | None = None
) -> tuple[Signature, ...]:
    """Validate the YAML document; `lines`: key path -> line (schema.line_index)."""
    return parse_knowledge(data, file, lines).signatures


def parse_knowledge(data: Any, file: str, lines: Mapping[str, int] | None = None) -> Knowledge:
    return decode(data, Knowledge, file, lines, _HINT)


def load_signatures_file(path: str | Path) -> tuple[Signature, ...]:
    return load_knowledge_file(path).signatures


def load_knowledge_file(path: str | Path) -> Knowledge:
    return decode_file(path, Knowledge, "log signatures", _HINT)[0]


@functools.lru_cache(maxsize=1)
def load_knowledge() -> Knowledge:
    """The shipped signatures and evidence, validated once per process."""
    return load_knowledge_file(SIGNATURES_PATH)


def load_signatures() -> tuple[Signature, ...]:
    """The shipped signatures, validated once per process."""
    return load_knowledge().signatures


def find_evidence(text: str, evidence: tuple[Evidence, ...] | None = None) -> dict[str, str]:
    """Evidence name -> the first text in `text` that shows it (for the report's 'why')."""
    found: dict[str, str] = {}
    for ev in evidence if evidence is not None else load_knowledge().evidence:
        m = ev.shown_in(text)
        if m is not None:
            found[ev.name] = " ".join(m.group(0).split())[:80]
    return found


def scan_log(
    text: str,
    signatures: tuple[Signature, ...] | None = None,
    *,
    evidence: dict[str, str] | None = None,
) -> list[LogMatch]:
    """Known failure modes in `text`, in the order they first appear; one per code.

    A signature whose `when` evidence is missing, or whose `unless` evidence is present,
    does not apply (`evidence` defaults to what the text itself shows)."""
    text = strip_prefixes(text)
    shown = find_evidence(text) if evidence is None else evidence
    found: dict[str, LogMatch] = {}
    for sig in signatures if signatures is not None else load_signatures():
        if any(e not in shown for e in sig.when) or any(e in shown for e in sig.unless):
            continue
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


@dataclass(frozen=True)
class RankedMatch:
    match: LogMatch
    why: tuple[str, ...]  # the evidence that selected or raised this reading

    @property
    def code(self) -> str:
        return self.match.signature.code

    @property
    def signature(self) -> Signature:
        return self.match.signature

    def severity(self, default: Severity) -> Severity:
        """This reading's severity: the signature's own when it states one (a guess is
        stated lower than its code), else `default` (the code's, from codes.yaml)."""
        return self.signature.severity or default


@dataclass(frozen=True)
class LogDiagnosis:
    matches: tuple[RankedMatch, ...]  # most likely first
    evidence: dict[str, str]  # evidence name -> the text that showed it

    @property
    def lead(self) -> RankedMatch | None:
        return self.matches[0] if self.matches else None


def diagnose_log(text: str, context: str = "") -> LogDiagnosis:
    """The known failure modes in `text`, most likely first.

    `context` is other text about the same run (the command that failed): it counts as
    evidence (a `trl vllm-serve` command shows TRL) but is never matched as a symptom."""
    stripped = strip_prefixes(text)
    evidence = find_evidence(f"{stripped}\n{context}")
    ranked = []
    for m in scan_log(stripped, evidence=evidence):
        sig = m.signature
        support = [e for e in (*sig.when, *sig.prefer) if e in evidence]
        ranked.append((sig.rank, len(support), m, tuple(f"{e}: {evidence[e]}" for e in support)))
    ranked.sort(key=lambda r: (-r[0], -r[1], r[2].line_no))
    return LogDiagnosis(tuple(RankedMatch(m, why) for _, _, m, why in ranked), evidence)


# Line prefixes added by launchers and by `shop-r1 run`, removed before reading blocks:
# `[12:03:04.123] `, `(pid=5477) `, `(RayWorker pid=12, ip=10.0.0.1) `, `[rank0]: `,
# docker compose's `vllm-1  | `, mpirun's `[1,2]<stdout>:`, and vLLM's logger
# `ERROR 01-11 13:09:40 engine.py:366] ` / `ERROR 04-30 10:20:36 [core.py:396] `.
_PREFIX = re.compile(
    r"^(?:\[\d{2}:\d{2}:\d{2}(?:\.\d+)?\] |\((?:[\w:.-]+ )?pid=\d+(?:, ip=[\d.]+)?\) ?"
    r"|\[(?:rank|default)\d+\]: ?|[\w.-]+-\d+ +\| |\[\d+,\d+\]<std(?:out|err)>:"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"(?:\[[\w.]+:\d+\]|[\w.]+:\d+\]) ?"
    # a GUI or wrapper relaying a child's streams labels each line with its step and stream
    # (`Cache Preparation STDERR: `)
    r"|[A-Z][\w.-]*(?: [A-Za-z][\w.-]*){0,4} (?:STDERR|STDOUT): )+",
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
            or line.startswith(("Extension modules:", "Current thread"))
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
