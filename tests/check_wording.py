"""The wording of every finding, one golden file per check module, and the one way row
tests read findings.

Rows assert facts: code, severity and the values that matter (`rows`, `facts_in`).
The words around them live in tests/fixtures/golden/checks/<module>.txt, rendered by
running each check module over every case the check tests hold: the code cases
(doctor_checks_cases.py) and each row file's `SNAPSHOTS`. A wording change is then one
`pytest --update-goldens` and a reviewed diff, not an edit to every row that quoted it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from repo_paths import GOLDEN, TESTS

from shop_r1_doctor.checks import MODULES, run_checks
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import Finding

CHECK_GOLDEN = GOLDEN / "checks"
ROW_TESTS = TESTS / "shop_r1_doctor" / "checks"


def module_name(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[-1]


def golden_path(module: ModuleType) -> Path:
    return CHECK_GOLDEN / f"{module_name(module)}.txt"


def found(check: Callable[[Facts], Iterable[Finding]], snap: dict | Facts) -> list[Finding]:
    return list(check(snap if isinstance(snap, Facts) else Facts(snap)))


def rows(check: Callable[[Facts], Iterable[Finding]], snap: dict | Facts) -> list[tuple[str, str]]:
    """(code, severity) of each finding of one check: what a decision row asserts."""
    return [(f.code, f.severity) for f in found(check, snap)]


def text(finding: Finding) -> str:
    return "\n".join((finding.title, finding.detail, finding.fix, *finding.urls))


def facts_in(finding: Finding, *facts: str) -> list[str]:
    """The facts (versions, paths, numbers, commands' arguments) the finding does not
    name anywhere in its title, detail, fix or links: [] when it names them all."""
    said = text(finding)
    return [fact for fact in facts if fact not in said]


def render(finding: Finding) -> str:
    lines = [f"[{finding.code}] {finding.severity} ({finding.subject})", f"  {finding.title}"]
    lines += [f"  detail: {line}" for line in finding.detail.splitlines()]
    lines += [f"  fix: {line}" for line in finding.fix.splitlines()]
    lines += [f"  url: {url}" for url in finding.urls]
    return "\n".join(lines) + "\n"


def row_modules() -> list[ModuleType]:
    """The check tests that declare snapshots for the goldens (`SNAPSHOTS`)."""
    found_ = []
    for path in sorted(ROW_TESTS.glob("test_*.py")):
        if "SNAPSHOTS" in path.read_text(encoding="utf-8"):
            found_.append(importlib.import_module(path.stem))
    return found_


def cases() -> list[tuple[str, dict[str, Any] | Facts]]:
    """Every snapshot of the check tests, named `source:case`."""
    from doctor_checks_cases import CASES, CPU_DOCKER, GPU_EXPECTED_CASES, healthy, merge

    base = healthy()
    out: list[tuple[str, dict[str, Any] | Facts]] = [("healthy", base)]
    out += [(f"cases:{code}-{i}", merge(base, patch)) for i, (code, patch) in enumerate(CASES)]
    out += [(f"cpu-docker:{name}", merge(CPU_DOCKER, p)) for name, p, _ in GPU_EXPECTED_CASES]
    for module in row_modules():
        out += [(f"{module.__name__}:{name}", snap) for name, snap in module.SNAPSHOTS]
    return out


def wording(all_cases: list[tuple[str, dict[str, Any] | Facts]]) -> dict[str, list[Finding]]:
    """Each check module's distinct findings over the cases, sorted by code then text."""
    by_module: dict[str, dict[str, Finding]] = {module_name(m): {} for m in MODULES}
    for _, snap in all_cases:
        facts = snap if isinstance(snap, Facts) else Facts(snap)
        for module in MODULES:
            for f in run_checks(facts, checks=module.CHECKS):
                f = dataclasses.replace(f, explained_by=None)  # the cause is another module's
                by_module[module_name(module)].setdefault(render(f), f)
    return {
        name: [found_[k] for k in sorted(found_, key=lambda k: (found_[k].code, k))]
        for name, found_ in by_module.items()
    }


def golden_text(findings: list[Finding]) -> str:
    return "\n".join(render(f) for f in findings)


def assert_row(
    check: Callable[[Facts], Iterable[Finding]], snap: dict | Facts, expected: list[tuple]
) -> None:
    """A decision row: the check's findings are `expected`, each `(code, severity, *facts)`,
    in order, and each finding names its facts (the wording is the golden's)."""
    got = found(check, snap)
    assert [(f.code, f.severity) for f in got] == [tuple(w[:2]) for w in expected], [
        render(f) for f in got
    ]
    unnamed = [(render(f), facts_in(f, *w[2:])) for f, w in zip(got, expected, strict=True)]
    assert [(r, miss) for r, miss in unnamed if miss] == []
