"""Is run B better than run A on the same held-out steps, beyond noise?

    python benchmarks/paired_eval.py runs/real/eval-sft runs/real/eval-sft-grpo [--json]

Reads two `predictions.jsonl` files written by `shop-r1 eval` / `benchmarks/learning.py`
(each row carries its `exact` and `type_ok` verdict) and compares them row by row:

- the difference in exact match (and type accuracy) with a paired bootstrap 95% interval
  (10,000 resamples of the steps, seeded);
- the discordant pairs (steps only A got right, steps only B got right) and McNemar's
  exact two-sided p-value (a binomial test on the discordant pairs).

Two evaluations on different step sets are refused: a paired test needs the same steps.

Several pairs (`A1 B1 A2 B2 ...`: each run against its own baseline, e.g. GRPO seeds each
started from that session's SFT, all scored on the same held-out steps) give each pair's
row and the pooled one: per step, the mean of the pairs' differences, with the bootstrap
over steps. Stated before the runs, this is the test of "GRPO beats SFT" across seeds.

    python benchmarks/paired_eval.py s0/eval-sft s0/eval-grpo s1/eval-sft s1/eval-grpo
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path


def load(path: Path) -> dict[str, dict]:
    file = path / "predictions.jsonl" if path.is_dir() else path
    rows: dict[str, dict] = {}
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SystemExit(f"{file}: cannot read: {exc.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise SystemExit(f"{file}:{n}: not a JSON line") from None
        if not isinstance(row, dict) or not isinstance(row.get("exact"), bool):
            raise SystemExit(
                f"{file}:{n}: exact: missing; re-run the evaluation with this version of "
                "shop-r1 (older predictions.jsonl files carry no per-step verdict)"
            )
        rows[str(row.get("id"))] = row
    return rows


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: binomial(n = discordant, p = 1/2)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def bootstrap_ci(
    diffs: list[int], *, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def compare(a: dict[str, dict], b: dict[str, dict], key: str) -> dict:
    ids = sorted(a)
    da = [int(a[i][key]) for i in ids]
    db = [int(b[i][key]) for i in ids]
    diffs = [y - x for x, y in zip(da, db, strict=True)]
    only_a = sum(1 for d in diffs if d < 0)
    only_b = sum(1 for d in diffs if d > 0)
    low, high = bootstrap_ci(diffs)
    return {
        "a": sum(da) / len(ids),
        "b": sum(db) / len(ids),
        "diff": sum(diffs) / len(ids),
        "ci95": [low, high],
        "only_a": only_a,
        "only_b": only_b,
        "mcnemar_p": mcnemar_exact(only_a, only_b),
    }


def pooled(pairs: list[tuple[dict[str, dict], dict[str, dict]]], key: str) -> dict:
    """Per step, the mean over pairs of (B - A); its mean and bootstrap interval over steps."""
    ids = sorted(pairs[0][0])
    per_step = [sum(int(b[i][key]) - int(a[i][key]) for a, b in pairs) / len(pairs) for i in ids]
    low, high = bootstrap_ci(per_step)
    return {
        "pairs": len(pairs),
        "a": sum(int(a[i][key]) for a, _ in pairs for i in ids) / (len(ids) * len(pairs)),
        "b": sum(int(b[i][key]) for _, b in pairs for i in ids) / (len(ids) * len(pairs)),
        "diff": sum(per_step) / len(ids),
        "ci95": [low, high],
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "runs",
        type=Path,
        nargs="+",
        metavar="A B",
        help="baseline and candidate eval dirs (or predictions.jsonl); more pairs: A2 B2 ...",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if len(args.runs) % 2:
        ap.error(f"runs: {len(args.runs)} paths; give them in pairs (baseline, candidate)")
    paths = list(zip(args.runs[::2], args.runs[1::2], strict=True))
    pairs = [(load(pa), load(pb)) for pa, pb in paths]
    steps = set(pairs[0][0])
    for (pa, pb), (a, b) in zip(paths, pairs, strict=True):
        for path, rows in ((pa, a), (pb, b)):
            if set(rows) != steps:
                raise SystemExit(
                    f"{path}: scored different steps than {paths[0][0]} "
                    f"({len(set(rows) ^ steps)} ids differ); a paired comparison needs the "
                    "same held-out steps"
                )
    if not steps:
        raise SystemExit(f"{paths[0][0]}: no predictions")
    results = [
        {
            "a": str(pa),
            "b": str(pb),
            "n": len(a),
            "exact": compare(a, b, "exact"),
            "type": compare(a, b, "type_ok"),
        }
        for (pa, pb), (a, b) in zip(paths, pairs, strict=True)
    ]
    out: dict = results[0] if len(pairs) == 1 else {"pairs": results}
    if len(pairs) > 1:
        out["pooled"] = {"exact": pooled(pairs, "exact"), "type": pooled(pairs, "type_ok")}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for result in results:
        print(f"{result['n']} paired steps: A = {result['a']}, B = {result['b']}")
        print(
            "| metric | A | B | B - A | 95% CI (paired bootstrap) | only A / only B | McNemar p |"
        )
        print("|---|---:|---:|---:|---|---:|---:|")
        for name, key in (("exact match", "exact"), ("type accuracy", "type")):
            r = result[key]
            print(
                f"| {name} | {r['a']:.2%} | {r['b']:.2%} | {r['diff']:+.2%} "
                f"| [{r['ci95'][0]:+.2%}, {r['ci95'][1]:+.2%}] | {r['only_a']} / {r['only_b']} "
                f"| {r['mcnemar_p']:.3g} |"
            )
        print()
    if len(pairs) > 1:
        print(f"pooled over {len(pairs)} pairs (per step, the mean of the pairs' differences):")
        print("| metric | A (mean) | B (mean) | B - A | 95% CI (bootstrap over steps) |")
        print("|---|---:|---:|---:|---|")
        for name, key in (("exact match", "exact"), ("type accuracy", "type")):
            r = out["pooled"][key]
            print(
                f"| {name} | {r['a']:.2%} | {r['b']:.2%} | {r['diff']:+.2%} "
                f"| [{r['ci95'][0]:+.2%}, {r['ci95'][1]:+.2%}] |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
