"""A finding as text or JSON: the one way every command shows one (the doctor's report,
the trainer's preflight, the GRPO rollout watch, `--json` documents).

    ✗ flash-attn 2.8.3 was built against another torch (undefined symbol: ...) [FA_TORCH_ABI]
      The plan asks attn_implementation=flash_attention_2.
      fix: pip install --no-build-isolation --force-reinstall flash-attn==2.8.3
      see: https://github.com/Dao-AILab/flash-attention/issues/1832

The mark is the severity's (✗ error, ! warning, • info; x ! - where the console cannot
encode those), coloured only on a terminal that allows colour (NO_COLOR unset). Every
string is redacted as a report is (home as `~`, tokens, keys and passwords out): findings
quote paths, command lines and environment values, and their text gets pasted publicly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Any

from shop_r1_doctor.findings import Finding
from shop_r1_doctor.redact import redact_text


@dataclass(frozen=True)
class Symbols:
    ok: str
    warning: str
    error: str
    crash: str
    skipped: str
    bullet: str
    finding: dict[str, str]  # severity -> mark


UNICODE = Symbols(
    "[✓]", "[!]", "[✗]", "[☠]", "[-]", "•", {"error": "✗", "warning": "!", "info": "•"}
)
ASCII = Symbols(
    "[OK]", "[!]", "[X]", "[CRASH]", "[-]", "-", {"error": "x", "warning": "!", "info": "-"}
)
# ANSI colours of a subject's state (the doctor's group marks) and of a finding's severity
COLORS = {"ok": "32", "warning": "33", "error": "31", "crash": "35", "skipped": "2", "info": "2"}


def symbols_for(encoding: str | None) -> Symbols:
    """UNICODE when every symbol encodes in `encoding`, else ASCII."""
    sample = "".join([UNICODE.ok, UNICODE.error, UNICODE.crash, UNICODE.bullet, "→"])
    try:
        sample.encode(encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return ASCII
    return UNICODE


def colored(mark: str, state: str) -> str:
    return f"\x1b[{COLORS[state]}m{mark}\x1b[0m"


def wants_color(stream: IO[Any]) -> bool:
    """Colour on a terminal only, and never with NO_COLOR set (no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def stream_encoding(stream: IO[Any]) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def fit_encoding(text: str, encoding: str | None) -> str:
    """Characters the console lacks (≥, ×) replaced, never a UnicodeEncodeError."""
    if encoding:
        try:
            text.encode(encoding)
        except UnicodeEncodeError:
            return text.encode(encoding, "replace").decode(encoding)
        except LookupError:
            pass
    return text


def finding_lines(
    f: Finding,
    *,
    symbols: Symbols = UNICODE,
    verbose: bool = False,
    color: bool = False,
    note: str = "",
) -> list[str]:
    """The block of one finding, unindented: `MARK title [CODE] (note)`, then the root
    cause it follows from, its detail, its fix and its sources (all of them when `verbose`,
    else the first)."""
    head = f"{f.title} [{f.code}]" + (f" ({note})" if note else "")
    body = []
    if f.explained_by:
        body.append(f"follows from {f.explained_by}: fix that first")
    body += [line for line in f.detail.splitlines() if line.strip()]
    if f.fix:
        body.append(f"fix: {f.fix}")
    body += [f"see: {u}" for u in (f.urls if verbose else f.urls[:1])]
    mark = symbols.finding.get(f.severity, symbols.bullet)
    if color:
        mark = colored(mark, f.severity)
    return [f"{mark} {redact_text(head)}", *(f"  {redact_text(line)}" for line in body)]


def render_finding(
    f: Finding,
    *,
    indent: int = 0,
    encoding: str | None = "utf-8",
    verbose: bool = False,
    color: bool = False,
    note: str = "",
) -> str:
    """One finding's block as text for a console of `encoding`, each line `indent`ed."""
    lines = finding_lines(f, symbols=symbols_for(encoding), verbose=verbose, color=color, note=note)
    return fit_encoding("".join(" " * indent + line + "\n" for line in lines), encoding)


def finding_json(f: Finding) -> dict[str, Any]:
    """A finding in every `--json` document: `code severity title detail fix urls subject`
    (+ `explained_by` when it follows from another finding), strings redacted."""
    return {k: _redacted(v) for k, v in f.to_json().items()}


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value
