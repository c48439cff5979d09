"""Score the log scanner on real failure logs copied from public issue threads.

    python benchmarks/logscan_corpus.py [--corpus DIR] [--json] [--misses] [--log-only]

The corpus (tests/fixtures/real_logs/*.yaml, described in its README) holds each log as
the user pasted it, the thread's URL, the cause the thread settled on and the finding
code(s) that cause maps to. Each log is read as `shop-r1 report --log` reads a log from
elsewhere (causes.rank_causes on the log alone: the scanner's readings and the log's
symptoms, error before warning before info). A case whose reporter also pasted the
machine's environment (`environment:` collect_env, pip list, nvidia-smi, an issue's System
Info, as they posted it before the cause was known) is read as `shop-r1 report --log LOG
--from ENV` reads it: the doctor's checks run on the facts that text gives, and a finding
joins the log reading it explains. `--log-only` ignores those texts, for the figure side
by side. Figures printed:

- recall: cases whose expected code is among the causes the report names (positives);
- lead accuracy: cases whose expected code is the one the report leads with (positives);
- false alarms: negatives (the user's own bug, a model-behaviour question) on which the
  report claimed a cause (at any severity), and how many of those claims are error-level;
- no fitting code: expected codes that knowledge/codes.yaml does not define, by family;
- with environment: how many cases carry one, and how many of them the doctor could read.

tests/shop_r1_doctor/test_logscan_real_logs.py runs the same evaluation and enforces the thresholds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

CORPUS = ROOT / "tests" / "fixtures" / "real_logs"
_FIELDS = ("id", "source", "cause", "evidence", "expected", "wording", "log")


@dataclass(frozen=True)
class Case:
    family: str
    id: str
    source: str
    cause: str
    evidence: str
    expected: tuple[str, ...]
    wording: str
    log: str
    environment: str = ""  # the machine as the reporter described it, when they did

    @property
    def negative(self) -> bool:
        return not self.expected


@dataclass
class Outcome:
    case: Case
    recognised: tuple[str, ...]  # codes the report names, in its order (lead first)
    severities: tuple[str, ...]  # the severity the report states each cause at
    read_environment: bool = False  # the doctor read facts from the case's environment

    @property
    def lead(self) -> str | None:
        return self.recognised[0] if self.recognised else None

    @property
    def hit(self) -> bool:
        return bool(set(self.case.expected) & set(self.recognised))

    @property
    def lead_ok(self) -> bool:
        return self.lead in self.case.expected

    @property
    def error_claim(self) -> bool:
        return "error" in self.severities


@dataclass
class Report:
    outcomes: list[Outcome]
    unknown_codes: dict[str, set[str]] = field(default_factory=dict)  # family -> codes

    def positives(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.case.negative]

    def negatives(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.case.negative]

    def figures(self) -> dict[str, Any]:
        pos, neg = self.positives(), self.negatives()
        hits = sum(o.hit for o in pos)
        leads = sum(o.lead_ok for o in pos)
        claims = [o for o in neg if o.recognised]
        with_env = [o for o in self.outcomes if o.case.environment.strip()]
        families = Counter(o.case.family for o in self.outcomes)
        return {
            "cases": len(self.outcomes),
            "positives": len(pos),
            "negatives": len(neg),
            "by_family": dict(sorted(families.items())),
            "recall": hits / len(pos) if pos else 0.0,
            "recall_n": hits,
            "lead_accuracy": leads / len(pos) if pos else 0.0,
            "lead_n": leads,
            "negatives_with_claims": len(claims),
            "error_claims_on_negatives": sum(o.error_claim for o in neg),
            "no_fitting_code": {f: sorted(c) for f, c in sorted(self.unknown_codes.items())},
            "with_environment": len(with_env),
            "environment_read": sum(o.read_environment for o in with_env),
        }


def load_corpus(directory: Path = CORPUS) -> list[Case]:
    """All cases; a malformed fixture is a clear one-line error naming file and case."""
    cases: list[Case] = []
    seen: set[str] = set()
    files = [directory] if directory.is_file() else sorted(directory.glob("*.yaml"))
    if not files:
        raise SystemExit(f"{directory}: no *.yaml corpus files")
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark else ""
            raise SystemExit(
                f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
            raise SystemExit(f"{path}: expected a mapping with 'family' and a 'cases' list")
        family = str(data.get("family") or path.stem)
        for index, raw in enumerate(data["cases"]):
            where = f"{path.name}: case #{index + 1}"
            if not isinstance(raw, dict):
                raise SystemExit(f"{where}: expected a mapping")
            missing = [k for k in _FIELDS if k not in raw]
            if missing:
                raise SystemExit(f"{where} ({raw.get('id')}): missing field(s) {missing}")
            expected = raw["expected"]
            if not isinstance(expected, list) or not all(isinstance(c, str) for c in expected):
                raise SystemExit(f"{where} ({raw['id']}): expected must be a list of codes")
            if not str(raw["source"]).startswith("https://github.com/"):
                raise SystemExit(f"{where} ({raw['id']}): source must be a GitHub thread URL")
            environment = raw.get("environment") or ""
            if not isinstance(environment, str):
                raise SystemExit(f"{where} ({raw['id']}): environment must be text")
            if raw["id"] in seen:
                raise SystemExit(f"{where}: duplicate id {raw['id']!r}")
            seen.add(raw["id"])
            cases.append(
                Case(
                    family=family,
                    id=str(raw["id"]),
                    source=str(raw["source"]),
                    cause=str(raw["cause"]),
                    evidence=str(raw["evidence"]),
                    expected=tuple(expected),
                    wording=str(raw["wording"]),
                    log=str(raw["log"]),
                    environment=environment,
                )
            )
    return cases


def _report_causes(
    log: str, environment: str = ""
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """The causes `shop-r1 report --log` names for this log, lead first, the severity each
    is stated at (the report's own ranking: causes.rank_causes), and whether the doctor
    read facts from `environment` (`report --log --from`: its findings join the log)."""
    from shop_r1_doctor import logscan
    from shop_r1_doctor.knowledge import load_codes

    try:
        from shop_r1_doctor.causes import rank_causes
    except ImportError:  # an older commit, scored at first sight with its own reader
        rank_causes = None
    if rank_causes is not None:
        pasted = _pasted_environment(log, environment) if environment.strip() else None
        if pasted is not None:
            causes = pasted.causes().causes
        else:
            causes = rank_causes(log, machine_feeds=False).causes
        return tuple(c.code for c in causes), tuple(c.severity for c in causes), pasted is not None
    ranked = getattr(logscan, "diagnose_log", None)
    if ranked is not None:
        codes = tuple(m.code for m in ranked(log).matches)
    else:  # before ranking existed, the report led with the first match in the log
        codes = tuple(m.signature.code for m in logscan.scan_log(log))
    # A code missing from the catalog counts as an error-level claim (the worst case).
    catalog = load_codes()
    return codes, tuple(catalog[c].severity if c in catalog else "error" for c in codes), False


def _pasted_environment(log: str, text: str) -> Any:
    """What `shop-r1 report --log LOG --from ENV` joins: the log and the doctor's
    diagnosis of the facts the pasted environment gives; None when no parser reads it
    (or an older commit has no `--from`)."""
    try:
        from shop_r1_doctor.bugreport import ReportInput
        from shop_r1_doctor.diagnose import diagnose
        from shop_r1_doctor.ingest import DumpError, snapshot_from_dump
    except ImportError:
        return None
    if "facts_pasted" not in ReportInput.__dict__:
        return None
    try:
        snapshot = snapshot_from_dump(text, "environment")
    except DumpError:
        return None
    diagnosis = diagnose(snapshot)
    return ReportInput(
        snapshot=snapshot, findings=diagnosis.findings, profile=diagnosis.profile, log_text=log
    )


def evaluate(cases: list[Case], *, log_only: bool = False) -> Report:
    from shop_r1_doctor.knowledge import load_codes

    catalog = load_codes()
    outcomes = []
    unknown: dict[str, set[str]] = defaultdict(set)
    for case in cases:
        environment = "" if log_only else case.environment
        outcomes.append(Outcome(case, *_report_causes(case.log, environment)))
        for code in case.expected:
            if code not in catalog:
                unknown[case.family].add(code)
    return Report(outcomes, dict(unknown))


def _print(report: Report, misses: bool) -> None:
    f = report.figures()
    print(
        f"corpus: {f['cases']} real logs ({f['positives']} positives, {f['negatives']} negatives)"
    )
    print("  by family: " + ", ".join(f"{k} {v}" for k, v in f["by_family"].items()))
    print(f"recall:         {f['recall']:.1%} ({f['recall_n']}/{f['positives']})")
    print(f"lead accuracy:  {f['lead_accuracy']:.1%} ({f['lead_n']}/{f['positives']})")
    print(
        f"false alarms:   {f['negatives_with_claims']}/{f['negatives']} negatives with a claimed"
        f" cause, {f['error_claims_on_negatives']} error-level"
    )
    if f["no_fitting_code"]:
        print("no fitting code:")
        for family, codes in f["no_fitting_code"].items():
            print(f"  {family}: {', '.join(codes)}")
    else:
        print("no fitting code: none (every expected code is in knowledge/codes.yaml)")
    if f["with_environment"]:
        print(
            f"with environment: {f['with_environment']} cases pasted one; the doctor read"
            f" {f['environment_read']} of them (--log-only ignores them)"
        )
    if misses:
        for o in report.outcomes:
            wrong = (not o.case.negative and not o.lead_ok) or (o.case.negative and o.recognised)
            if wrong:
                print(
                    f"- {o.case.family}/{o.case.id}: expected {list(o.case.expected)}, got {list(o.recognised)}"
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--misses", action="store_true", help="list wrong leads and false alarms")
    parser.add_argument(
        "--log-only", action="store_true", help="read each log alone, ignoring its environment"
    )
    args = parser.parse_args(argv)
    report = evaluate(load_corpus(args.corpus), log_only=args.log_only)
    if args.json:
        print(json.dumps(report.figures(), indent=2))
    else:
        _print(report, args.misses)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
