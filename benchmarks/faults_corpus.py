"""Score the log diagnosis on failures caused for real (tests/fixtures/faults/).

    python benchmarks/faults_corpus.py [--misses] [--json] [--out FILE]
        [--families F ...] [--cases FAMILY/CASE ...] [--environment]

Each recording is what a failure printed when tests/faults/ caused it on a CPU machine
(a full tmpfs, a tiny /dev/shm, a memory cgroup, a busy port, a missing package, no
network, ...), with the codes that name its cause. The figures are logscan_corpus.py's
(recall, lead accuracy, false alarms on the user's own bugs), computed by the same
function `shop-r1 report --log` uses (causes.rank_causes), on the log alone: the
driver's command line would name the case (`... optional_packages grpo_use_vllm`), so it
is not given as context. `--out` writes the figures and every case's outcome as JSON.

`--environment` scores the recordings that carry what a reporter pastes beside the log
(<case>.env.txt: collect_env, nvidia-smi and pip list, run in the case's environment after
it failed) twice: the log alone, and as `shop-r1 report --log LOG --from ENV` reads the
two (logscan_corpus's join: the doctor's checks on the facts the text gives, their
findings joining the log's readings), side by side, per case and in total.
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

from logscan_corpus import Case, Outcome, Report, _print, evaluate  # noqa: E402

from tests.faults.suite import FAMILIES, load_recordings  # noqa: E402


def load_cases(
    families: tuple[str, ...] = FAMILIES,
    only: set[str] | None = None,
    *,
    with_environment: bool = False,
) -> list[Case]:
    """The recordings as corpus cases; `with_environment`: only those with a pasted
    environment, carrying it (evaluate() then reads each as `report --log --from`)."""
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
            environment=r.environment if with_environment else "",
        )
        for r in load_recordings(families=families)
        if (only is None or f"{r.family}/{r.case}" in only)
        and (r.environment.strip() or not with_environment)
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


def _reading(o: Outcome) -> dict[str, Any]:
    return {
        "recognised": list(o.recognised),
        "severities": list(o.severities),
        "hit": o.hit if o.case.expected else None,
        "lead_ok": o.lead_ok if o.case.expected else None,
        "expected_named": len(set(o.case.expected) & set(o.recognised)),
        "error_claim": o.error_claim,
    }


def _more_figures(report: Report) -> dict[str, Any]:
    """Beside logscan_corpus's figures: how many of the expected codes are named (a case
    may expect two, the symptom and its cause) and how many positives lead at error."""
    pos = report.positives()
    return {
        **report.figures(),
        "expected_codes": sum(len(o.case.expected) for o in pos),
        "expected_codes_named": sum(len(set(o.case.expected) & set(o.recognised)) for o in pos),
        "positives_led_at_error": sum(
            bool(o.severities) and o.severities[0] == "error" for o in pos
        ),
    }


def environment_comparison(cases: list[Case]) -> dict[str, Any]:
    """Each case read from its log alone and from its log with the pasted environment
    (`report --log LOG --from ENV`): the figures of both, and per case what changed."""
    alone = evaluate(cases, log_only=True)
    joined = evaluate(cases)
    rows = []
    for a, j in zip(alone.outcomes, joined.outcomes, strict=True):
        before, after = _reading(a), _reading(j)
        rows.append(
            {
                "case": f"{a.case.family}/{a.case.id}",
                "expected": list(a.case.expected),
                "environment_read": j.read_environment,
                "log": before,
                "log_and_environment": after,
                "added": [c for c in j.recognised if c not in a.recognised],
                "dropped": [c for c in a.recognised if c not in j.recognised],
                "lead_changed": a.lead != j.lead,
                "severity_changed": {
                    c: [a.severities[a.recognised.index(c)], j.severities[j.recognised.index(c)]]
                    for c in set(a.recognised) & set(j.recognised)
                    if a.severities[a.recognised.index(c)] != j.severities[j.recognised.index(c)]
                },
            }
        )
    return {
        "figures": {"log": _more_figures(alone), "log_and_environment": _more_figures(joined)},
        "outcomes": rows,
    }


def _print_comparison(doc: dict[str, Any]) -> None:
    a, j = doc["figures"]["log"], doc["figures"]["log_and_environment"]
    print(
        f"{a['cases']} recordings with a pasted environment ({a['positives']} positives,"
        f" {a['negatives']} negatives); the doctor read {j['environment_read']} of them"
    )
    for label, key, of in (
        ("recall", "recall_n", "positives"),
        ("lead", "lead_n", "positives"),
        ("expected codes named", "expected_codes_named", "expected_codes"),
        ("positives led at error", "positives_led_at_error", "positives"),
        ("negatives with a claim", "negatives_with_claims", "negatives"),
        ("error claims on negatives", "error_claims_on_negatives", "negatives"),
    ):
        print(f"  {label:<26} log {a[key]}/{a[of]}   log + environment {j[key]}/{j[of]}")
    for row in doc["outcomes"]:
        if row["added"] or row["dropped"] or row["lead_changed"] or row["severity_changed"]:
            print(
                f"- {row['case']}: {row['log']['recognised']} -> "
                f"{row['log_and_environment']['recognised']}"
                + (f", severity {row['severity_changed']}" if row["severity_changed"] else "")
            )


def _recorded_on(families: tuple[str, ...], ids: set[str]) -> list[dict[str, str]]:
    """The machines and stacks the scored recordings were caused on (their metadata)."""
    keys = ("gpu", "nvidia_driver", "torch", "transformers", "kernel")
    seen = {
        tuple((k, str(r.meta["versions"].get(k, ""))) for k in keys)
        for r in load_recordings(families=families)
        if r.case in ids
    }
    return [dict(row) for row in sorted(seen)]


def _commit() -> str:
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
    return commit + ("+dirty" if dirty else "")


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
    parser.add_argument(
        "--environment",
        action="store_true",
        help="only recordings with a pasted environment: the log alone vs report --log --from",
    )
    args = parser.parse_args(argv)
    only = set(args.cases) if args.cases else None
    cases = load_cases(tuple(args.families), only, with_environment=args.environment)
    if not cases:
        print(
            f"--families/--cases: no recording matches {args.families} {args.cases}",
            file=sys.stderr,
        )
        return 2
    if args.environment:
        doc = environment_comparison(cases)
        if args.json:
            print(json.dumps(doc["figures"], indent=2))
        else:
            _print_comparison(doc)
        if args.out:
            head = {
                "schema": "shop-r1.faults-environment-score/1",
                "commit": _commit(),
                "scored_with": "log: shop_r1_doctor.causes.rank_causes(log, machine_feeds=False),"
                " no context; log_and_environment: as `shop-r1 report --log LOG --from ENV`"
                " (logscan_corpus._pasted_environment: ReportInput(snapshot_from_dump(ENV),"
                " diagnose(...).findings, log).causes())",
            }
            head["recorded_on"] = _recorded_on(tuple(args.families), {c.id for c in cases})
            args.out.write_text(json.dumps({**head, **doc}, indent=2) + "\n", encoding="utf-8")
        return 0
    report = evaluate(cases)
    if args.json:
        print(json.dumps(report.figures(), indent=2))
    else:
        _print(report, args.misses)
    if args.out:
        doc = {
            "schema": "shop-r1.faults-score/1",
            "commit": _commit(),
            "scored_with": "shop_r1_doctor.causes.rank_causes(log, machine_feeds=False), no context",
            "figures": report.figures(),
            "outcomes": outcomes(report),
        }
        args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
