"""The one way to build a Finding: from its code in `knowledge/codes.yaml`.

Severity, fix, subject and sources come from the catalog entry; a caller adds the title
(with the real versions and GPUs), a detail, and overrides the fix or severity where the
situation says more. A code missing from the catalog raises KeyError (inside a check the
runner reports CHECK_FAILED), and `tests/shop_r1_doctor/knowledge/test_knowledge_codes.py` holds every code
any module emits to codes.yaml and docs/checks.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.knowledge import load_codes


def finding(
    code: str,
    title: str,
    *,
    detail: str = "",
    fix: str | None = None,
    severity: Severity | None = None,
    urls: Iterable[str] = (),
) -> Finding:
    """A Finding with the code's default severity, fix, subject and sources filled in."""
    info = load_codes()[code]
    return Finding(
        code=code,
        severity=severity or info.severity,
        title=title,
        detail=detail,
        fix=fix if fix is not None else info.fix,
        urls=tuple(dict.fromkeys([*info.urls, *urls])),
        subject=info.subject,
    )
