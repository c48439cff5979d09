"""Snapshot -> Diagnosis: every check, plus the best-matching hardware profile.

Pure: nothing here probes the machine, so `--snapshot FILE` diagnoses a machine that
is somewhere else. `Diagnosis.to_json()` is the `shop-r1.report/1` contract.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import SEVERITIES, Finding, Summary
from shop_r1_doctor.fixplan import FixPlan
from shop_r1_doctor.snapshot import REPORT_SCHEMA, SNAPSHOT_SCHEMA


@dataclass
class Diagnosis:
    snapshot: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    profile: str | None = None
    profile_reason: str = ""
    fix_plan: FixPlan | None = None  # one ordered plan for several packaging findings

    @property
    def summary(self) -> Summary:
        return Summary.of(self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.summary.errors else 0

    def to_json(self) -> dict[str, Any]:
        summary = self.summary
        doc = {
            "schema": REPORT_SCHEMA,
            "snapshot": self.snapshot,
            "profile": self.profile,
            "profile_reason": self.profile_reason or None,
            "findings": [f.to_json() for f in self.findings],
            "summary": {
                "errors": summary.errors,
                "warnings": summary.warnings,
                "infos": summary.infos,
            },
        }
        if self.fix_plan is not None:  # optional key of shop-r1.report/1 (added, not changed)
            doc["fix_plan"] = self.fix_plan.to_json()
        return doc

    @classmethod
    def from_json(cls, report: dict[str, Any]) -> Diagnosis:
        """A saved report back into a Diagnosis (golden tests render from these)."""
        findings = [
            Finding(**{**f, "urls": tuple(f.get("urls", ()))}) for f in report.get("findings", [])
        ]
        plan = report.get("fix_plan")
        return cls(
            report["snapshot"],
            findings,
            report.get("profile"),
            report.get("profile_reason") or "",
            FixPlan.from_json(plan) if isinstance(plan, dict) else None,
        )


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then infos; stable within a severity; one per code+title."""
    unique = list({(f.code, f.title): f for f in findings}.values())
    return sorted(unique, key=lambda f: SEVERITIES.index(f.severity))


# One diagnosis at a time: the warm-up thread's and the caller's would otherwise build the
# same knowledge at once, and msgspec building a type's decoder in two threads at once
# crashed the interpreter (SIGSEGV in `doctor --fast`, about 1 run in 6: the probes were
# done before the warm-up). Waiting costs nothing: the caller needs that knowledge anyway.
_ONE_AT_A_TIME = threading.RLock()


def warm_up() -> threading.Thread:
    """Load the checks' YAML knowledge in a background thread while probes run.

    The full doctor waits seconds for the torch child anyway; parsing the knowledge and
    profiles then costs nothing on the critical path. Every loader is cached.
    """

    def run() -> None:
        # An error here is raised again, with its message, by the real diagnose() call.
        with contextlib.suppress(Exception):
            diagnose({"schema": SNAPSHOT_SCHEMA, "gpus": []})

    thread = threading.Thread(target=run, name="diagnose-warm-up", daemon=True)
    thread.start()
    return thread


def diagnose(snapshot: dict[str, Any]) -> Diagnosis:
    with _ONE_AT_A_TIME:
        return _diagnose(snapshot)


def _diagnose(snapshot: dict[str, Any]) -> Diagnosis:
    # Imported here: the checks load their YAML knowledge, which `--help` never needs.
    from shop_r1_doctor.checks import run_checks
    from shop_r1_doctor.fixplan import build_fix_plan, settle_deviations
    from shop_r1_doctor.profiles import match_profile
    from shop_r1_doctor.profiles.model import load_profiles

    facts = Facts(snapshot)
    findings = list(run_checks(facts))
    match = match_profile(facts)
    if match is not None:
        findings.extend(match.deviations)
    findings = sort_findings(settle_deviations(findings))
    profile = load_profiles().get(match.name) if match else None
    return Diagnosis(
        snapshot=snapshot,
        findings=findings,
        profile=match.name if match else None,
        profile_reason=getattr(match, "reason", "") if match else "",
        fix_plan=build_fix_plan(facts, findings, profile),
    )
