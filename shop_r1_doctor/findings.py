"""What a check concludes: a typed finding with a stable code and a fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One problem (or notable fact) found in a snapshot.

    `code` is stable across releases (the catalog id where one applies); `title` names
    the real versions and GPUs involved; `fix` is a command or a setting to change.
    `subject` groups findings in the terminal report (gpu, torch, flash-attn, ...).
    """

    code: str
    severity: Severity
    title: str
    detail: str = ""
    fix: str = ""
    urls: tuple[str, ...] = ()
    subject: str = "general"
    explained_by: str | None = None  # the code of a root cause found on the same machine

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["urls"] = list(self.urls)
        if self.explained_by is None:
            del data["explained_by"]  # optional key of shop-r1.report/1
        return data


@dataclass
class Summary:
    errors: int = 0
    warnings: int = 0
    infos: int = field(default=0)

    @classmethod
    def of(cls, findings: list[Finding]) -> Summary:
        """Counts root causes: a symptom whose cause was also found is not counted twice."""
        findings = [f for f in findings if f.explained_by is None]
        return cls(
            errors=sum(f.severity == "error" for f in findings),
            warnings=sum(f.severity == "warning" for f in findings),
            infos=sum(f.severity == "info" for f in findings),
        )
