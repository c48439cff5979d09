"""Score `shop-r1 run` on the CPU fault cases, caused again under it, beside the log alone.

    python benchmarks/faults_run.py [--families F ...] [--cases FAMILY/CASE ...]
        [--full] [--json] [--out FILE]

Each case this machine can cause (tests/faults: missing_requirement empty) runs again in
its own wrapper (tmpfs, cgroup, ulimits, namespaces, another user, env) with
`shop-r1 run --json --fast --` in front of its driver (tests/faults/run_join.py), so the
doctor's snapshot is taken from inside the limit the command failed under, and its
findings and what the run saw join the log's readings (causes.rank_causes). Three
readings of each case are scored with the same figures as faults_corpus.py (recall, lead
accuracy, negatives with any claimed cause, error-level claims on negatives):

- recording: `shop-r1 report --log` on the case's recorded log (faults_corpus.py's figure);
- log:       `shop-r1 report --log` on this run's own log (output.log), alone;
- run:       the causes of the `shop-r1.diagnosis/1` document `shop-r1 run --json` printed.

Every case where run and log differ is listed (lead code, severity and the sources of the
lead's evidence: log / doctor / run), and so is every case whose log reads differently
from its recording. `--full` drops `--fast` (the probes that import torch run too).
`--out` writes the figures and every case's outcome as JSON, after each case.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from faults_corpus import load_cases  # noqa: E402
from logscan_corpus import Case, Outcome, Report  # noqa: E402

from tests.faults.case import FaultCase, Unavailable, missing_requirement  # noqa: E402
from tests.faults.record import portable  # noqa: E402
from tests.faults.run_join import causes, run_under_doctor  # noqa: E402
from tests.faults.suite import FAMILIES, all_cases  # noqa: E402

READINGS = ("recording", "log", "run")


def _log_alone(log: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What `shop-r1 report --log` names for `log` (faults_corpus.py's reading)."""
    from shop_r1_doctor.causes import rank_causes

    found = rank_causes(log, machine_feeds=False).causes
    return tuple(c.code for c in found), tuple(c.severity for c in found)


def _scored(o: Outcome) -> dict[str, Any]:
    positive = not o.case.negative
    return {
        "recognised": list(o.recognised),
        "severities": list(o.severities),
        "hit": o.hit if positive else None,
        "lead_ok": o.lead_ok if positive else None,
        "claims": None if positive else bool(o.recognised),
        "error_claim": o.error_claim,
    }


def run_one(case: FaultCase, recorded: Case | None, *, fast: bool) -> dict[str, Any]:
    """Cause `case` under `shop-r1 run` and read it three ways."""
    scoring = Case(
        family=case.family,
        id=case.name,
        source=f"tests/fixtures/faults/{case.family}/{case.name}.log",
        cause=case.cause,
        evidence="",
        expected=case.expected,
        wording="",
        log="",
    )
    started = time.monotonic()
    joined = run_under_doctor(case, fast=fast)
    seconds = time.monotonic() - started
    doc = joined.diagnosis
    run_causes = causes(doc)
    out: dict[str, Any] = {
        "case": case.id,
        "expected": list(case.expected),
        "seconds": round(seconds, 1),
        "exit_code": joined.captured.exit_code,
        "problem": joined.problem or None,
        "run_failed": doc["run"]["failed"] if doc else None,
        "doctor_error": (doc.get("doctor") or {}).get("error") if doc else None,
        "doctor_findings": [
            [f["code"], f["severity"]]
            for f in ((doc or {}).get("doctor") or {}).get("findings", [])
        ],
        "run_lead_sources": list(run_causes[0][2]) if run_causes else [],
        "run_sources": {code: list(src) for code, _, src in run_causes},
    }
    readings = {
        "log": Outcome(scoring, *_log_alone(joined.log)),
        "run": Outcome(
            scoring, tuple(c for c, _, _ in run_causes), tuple(s for _, s, _ in run_causes)
        ),
    }
    if recorded is not None:
        readings["recording"] = Outcome(scoring, *_log_alone(recorded.log))
    for name, o in readings.items():
        out[name] = _scored(o)
    return out


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The faults_corpus.py figures of each reading, in total and per family."""

    def report(reading: str, subset: list[dict[str, Any]]) -> dict[str, Any]:
        outcomes = []
        for r in subset:
            family, name = r["case"].split("/", 1)
            case = Case(family, name, "", "", "", tuple(r["expected"]), "", "")
            got = r.get(reading)
            if got is not None:
                outcomes.append(Outcome(case, tuple(got["recognised"]), tuple(got["severities"])))
        f = Report(outcomes).figures()
        keep = ("cases", "positives", "negatives", "recall_n", "lead_n")
        return {k: f[k] for k in (*keep, "negatives_with_claims", "error_claims_on_negatives")}

    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_family[r["case"].split("/", 1)[0]].append(r)
    return {
        "total": {reading: report(reading, rows) for reading in READINGS},
        "by_family": {
            fam: {reading: report(reading, sub) for reading in READINGS}
            for fam, sub in by_family.items()
        },
    }


def _lead(r: dict[str, Any], reading: str) -> str:
    got = r.get(reading)
    if not got or not got["recognised"]:
        return "-"
    return f"{got['recognised'][0]}/{got['severities'][0]}"


def differences(rows: list[dict[str, Any]], a: str, b: str) -> list[dict[str, Any]]:
    """Cases whose lead (code or severity), recall, lead or claims differ between readings."""
    out = []
    for r in rows:
        x, y = r.get(a), r.get(b)
        if x is None or y is None:
            continue
        keys = ("hit", "lead_ok", "claims", "error_claim")
        if _lead(r, a) != _lead(r, b) or any(x[k] != y[k] for k in keys):
            out.append(r)
    return out


def _cell(f: dict[str, Any]) -> str:
    if f["positives"]:
        pos = f"{f['recall_n']}/{f['lead_n']}/{f['positives']}"
    else:
        pos = "-"
    neg = (
        f"{f['negatives_with_claims']}({f['error_claims_on_negatives']})/{f['negatives']}"
        if f["negatives"]
        else "-"
    )
    return f"{pos:>11} {neg:>8}"


def print_table(doc: dict[str, Any]) -> None:
    figs = doc["figures"]
    print("recall/lead/positives and negatives with a claim (error-level)/negatives:")
    print(f"{'family':<26}" + "".join(f"{r:>21}" for r in READINGS))
    for fam, per in figs["by_family"].items():
        print(f"{fam:<26}" + "  ".join(_cell(per[r]) for r in READINGS))
    print(f"{'TOTAL':<26}" + "  ".join(_cell(figs["total"][r]) for r in READINGS))
    rows = doc["outcomes"]
    diff = differences(rows, "log", "run")
    print(f"\n{len(diff)} case(s) where `shop-r1 run` and this run's log alone differ:")
    for r in diff:
        sources = "+".join(r["run_lead_sources"]) or "-"
        print(
            f"- {r['case']} (expected {r['expected'] or 'none: the user bug'}): log leads "
            f"{_lead(r, 'log')}; run leads {_lead(r, 'run')} [{sources}]; "
            f"run names {r['run']['recognised']}" + (f"; {r['problem']}" if r["problem"] else "")
        )
    drift = differences(rows, "recording", "log")
    print(f"\n{len(drift)} case(s) whose log this time reads differently from its recording:")
    for r in drift:
        print(f"- {r['case']}: recording leads {_lead(r, 'recording')}; log {_lead(r, 'log')}")
    if doc["skipped"]:
        print(f"\nskipped {len(doc['skipped'])}:")
        for case_id, why in doc["skipped"].items():
            print(f"- {case_id}: {why}")


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    dirty = bool(git("status", "--porcelain", "shop_r1_doctor", "shop_r1"))
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the document as JSON")
    parser.add_argument("--out", type=Path, help="write figures and outcomes to this JSON file")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    parser.add_argument("--cases", nargs="+", help="only these FAMILY/CASE cases")
    parser.add_argument(
        "--full", action="store_true", help="without --fast: the probes that import torch run"
    )
    args = parser.parse_args(argv)
    families = tuple(args.families)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        print(f"--families: not a CPU fault family: {unknown}", file=sys.stderr)
        return 2
    only = set(args.cases) if args.cases else None
    chosen = [c for c in all_cases(families) if only is None or c.id in only]
    missing = sorted((only or set()) - {c.id for c in chosen})
    if missing:
        print(f"--cases: no such case in {args.families}: {missing}", file=sys.stderr)
        return 2
    if not chosen:
        print(f"--families/--cases: no case matches {args.families} {args.cases}", file=sys.stderr)
        return 2
    recorded = {f"{c.family}/{c.id}": c for c in load_cases(families, only)}
    doc: dict[str, Any] = {
        "schema": "shop-r1.faults-run-score/1",
        "commit": _commit(),
        "scored_with": (
            "recording/log: causes.rank_causes(log, machine_feeds=False); run: the causes of "
            f"`shop-r1 run --json{'' if args.full else ' --fast'} --` around the driver"
        ),
        "fast": not args.full,
        "figures": {},
        "outcomes": [],
        "skipped": {},
    }
    for n, case in enumerate(chosen, 1):
        why = missing_requirement(case)
        if why is None:
            try:
                row = run_one(case, recorded.get(case.id), fast=not args.full)
            except Unavailable as exc:
                why = str(exc)
        if why is not None:
            why = portable(why)  # the environment as `<venv>`: no path of this machine
            doc["skipped"][case.id] = why
            print(f"[{n}/{len(chosen)}] {case.id}: skipped ({why})", file=sys.stderr)
            continue
        doc["outcomes"].append(row)
        print(
            f"[{n}/{len(chosen)}] {case.id}: {row['seconds']} s, log {_lead(row, 'log')}, "
            f"run {_lead(row, 'run')} [{'+'.join(row['run_lead_sources'])}]"
            + (f" ({row['problem']})" if row["problem"] else ""),
            file=sys.stderr,
            flush=True,
        )
        doc["figures"] = figures(doc["outcomes"])
        if args.out:
            args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    doc["figures"] = figures(doc["outcomes"])
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print_table(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
