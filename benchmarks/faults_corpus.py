"""Score the log diagnosis on failures caused for real (tests/fixtures/faults/).

    python benchmarks/faults_corpus.py [--misses] [--json] [--out FILE]
        [--families F ...] [--cases FAMILY/CASE ...]

Each recording is what a failure printed when tests/faults/ caused it on a CPU machine
(a full tmpfs, a tiny /dev/shm, a memory cgroup, a busy port, a missing package, no
network, ...), with the codes that name its cause. The figures are logscan_corpus.py's
(recall, lead accuracy, false alarms on the user's own bugs), computed by the same
function `shop-r1 report --log` uses (causes.rank_causes), on the log alone: the
driver's command line would name the case (`... optional_packages grpo_use_vllm`), so it
is not given as context. `--out` writes the figures and every case's outcome as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from logscan_corpus import Case, Report, _print, evaluate  # noqa: E402

from tests.faults.suite import FAMILIES, load_recordings  # noqa: E402


def load_cases(families: tuple[str, ...] = FAMILIES, only: set[str] | None = None) -> list[Case]:
    return [
        Case(
            family=r.family,
            id=r.case,
            source=f"tests/fixtures/faults/{r.family}/{r.case}.log",
            cause=str(r.meta["cause"]),
            evidence=json.dumps(r.meta["evidence"]),
            expected=r.expected,
            wording="",
            log=r.log,
        )
        for r in load_recordings(families=families)
        if only is None or f"{r.family}/{r.case}" in only
    ]


def outcomes(report: Report) -> list[dict[str, Any]]:
    return [
        {
            "case": f"{o.case.family}/{o.case.id}",
            "expected": list(o.case.expected),
            "recognised": list(o.recognised),
            "hit": o.hit if o.case.expected else None,
            "lead_ok": o.lead_ok if o.case.expected else None,
            "error_claim": o.error_claim,
        }
        for o in report.outcomes
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--misses", action="store_true", help="list wrong leads and false alarms")
    parser.add_argument("--out", type=Path, help="write figures and outcomes to this JSON file")
    parser.add_argument(
        "--families",
        nargs="+",
        default=list(FAMILIES),
        help="families to score (default: the CPU ones; 'gpu' holds the device's recordings)",
    )
    parser.add_argument("--cases", nargs="+", help="only these FAMILY/CASE recordings")
    args = parser.parse_args(argv)
    cases = load_cases(tuple(args.families), set(args.cases) if args.cases else None)
    if not cases:
        print(
            f"--families/--cases: no recording matches {args.families} {args.cases}",
            file=sys.stderr,
        )
        return 2
    report = evaluate(cases)
    if args.json:
        print(json.dumps(report.figures(), indent=2))
    else:
        _print(report, args.misses)
    if args.out:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "shop_r1_doctor"],
                cwd=ROOT,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
        doc = {
            "schema": "shop-r1.faults-score/1",
            "commit": commit + ("+dirty" if dirty else ""),
            "scored_with": "shop_r1_doctor.causes.rank_causes(log, machine_feeds=False), no context",
            "figures": report.figures(),
            "outcomes": outcomes(report),
        }
        args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
