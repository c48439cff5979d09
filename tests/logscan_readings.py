"""What the log reader concludes from a text, as facts a test can assert: each reading's
(code, severity), the lead first. Wording stays in codes.yaml."""

from __future__ import annotations

from shop_r1_doctor.knowledge import load_codes
from shop_r1_doctor.logscan import diagnose_log

CODES = load_codes()


def readings(text: str) -> list[tuple[str, str]]:
    """(code, severity) of every reading, the lead first."""
    return [(m.code, m.severity(CODES[m.code].severity)) for m in diagnose_log(text).matches]


def codes(text: str) -> list[str]:
    """The codes of every reading, the lead first."""
    return [c for c, _ in readings(text)]


def lead(text: str) -> tuple[str, str]:
    """(code, severity) of the reading the report leads with; fails when there is none."""
    found = readings(text)
    assert found, f"no reading for {text!r}"
    return found[0]


def errors(text: str) -> list[str]:
    """The codes read at error level."""
    return [c for c, s in readings(text) if s == "error"]
