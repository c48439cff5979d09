"""Every check, and the runner that turns a snapshot's facts into sorted findings.

A check is a pure function `Facts -> Iterable[Finding]`, grouped by subject in the
modules below. The runner never lets one check take the doctor down: a check that raises
becomes a CHECK_FAILED warning naming it. Order is deterministic: errors, then warnings,
then infos; within a severity, registry order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from shop_r1_doctor.checks import (
    docker,
    flash_attn,
    gpu_driver,
    limits,
    nccl,
    packages,
    plan,
    plan_memory,
    platform,
    probes,
    ray,
    resources,
    torch_build,
    trl,
    vllm,
)
from shop_r1_doctor.checks._base import finding
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import SEVERITIES, Finding
from shop_r1_doctor.knowledge import load_codes

Check = Callable[[Facts], Iterable[Finding]]

MODULES = (
    probes,
    gpu_driver,
    torch_build,
    flash_attn,
    vllm,
    trl,
    nccl,
    platform,
    ray,
    docker,
    packages,
    resources,
    limits,
    plan,
    plan_memory,
)
REGISTRY: tuple[Check, ...] = tuple(check for module in MODULES for check in module.CHECKS)


def check_name(check: Check) -> str:
    module = getattr(check, "__module__", "").rsplit(".", 1)[-1]
    return f"{module}.{getattr(check, '__name__', repr(check))}"


def run_checks(facts: Facts | dict[str, Any], checks: Iterable[Check] = REGISTRY) -> list[Finding]:
    """All findings for these facts, errors first; identical findings are reported once."""
    if not isinstance(facts, Facts):
        facts = Facts(facts)
    found: list[Finding] = []
    for check in checks:
        try:
            found.extend(check(facts))
        except Exception as exc:  # a doctor bug must not hide the other findings
            found.append(
                finding(
                    "CHECK_FAILED",
                    f"check {check_name(check)} failed on this snapshot: {type(exc).__name__}: {exc}",
                    detail="The other checks ran. This is a bug in shop-r1, not in your environment.",
                )
            )
    unique = link_causes(list(dict.fromkeys(found)))
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(unique, key=lambda f: rank.get(f.severity, len(rank)))


def link_causes(findings: list[Finding]) -> list[Finding]:
    """Mark each finding that another one found on this machine explains (codes.yaml's
    `explains`): it stays in the report, annotated, and leaves the summary."""
    codes = load_codes()
    present = {f.code for f in findings}
    cause_of: dict[str, str] = {}
    for code in present:
        info = codes.get(code)
        for symptom in info.explains if info else ():
            if symptom in present:
                cause_of.setdefault(symptom, code)
    return [
        dataclasses.replace(f, explained_by=cause_of[f.code]) if f.code in cause_of else f
        for f in findings
    ]


__all__ = ["REGISTRY", "Check", "check_name", "run_checks"]
