"""Is run B better than run A on the same held-out steps, beyond noise?

    python benchmarks/paired_eval.py runs/real/eval-sft runs/real/eval-sft-grpo [--json]

Reads two `predictions.jsonl` files written by `shop-r1 eval` / `benchmarks/learning.py`
(each row carries its `exact` and `type_ok` verdict) and compares them row by row:

- the difference in exact match (and type accuracy) with a paired bootstrap 95% interval
  (10,000 resamples of the steps, seeded);
- the discordant pairs (steps only A got right, steps only B got right) and McNemar's
  exact two-sided p-value (a binomial test on the discordant pairs).

Two evaluations on different step sets are refused: a paired test needs the same steps.
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


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("a", type=Path, help="baseline eval dir or predictions.jsonl")
    ap.add_argument("b", type=Path, help="candidate eval dir or predictions.jsonl")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    if set(a) != set(b):
        raise SystemExit(
            f"the two evaluations scored different steps ({len(set(a) ^ set(b))} ids differ); "
            "a paired comparison needs the same held-out steps"
        )
    if not a:
        raise SystemExit(f"{args.a}: no predictions")
    result = {"n": len(a), "exact": compare(a, b, "exact"), "type": compare(a, b, "type_ok")}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{len(a)} paired steps: A = {args.a}, B = {args.b}")
    print("| metric | A | B | B - A | 95% CI (paired bootstrap) | only A / only B | McNemar p |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for name, key in (("exact match", "exact"), ("type accuracy", "type")):
        r = result[key]
        print(
            f"| {name} | {r['a']:.2%} | {r['b']:.2%} | {r['diff']:+.2%} "
            f"| [{r['ci95'][0]:+.2%}, {r['ci95'][1]:+.2%}] | {r['only_a']} / {r['only_b']} "
            f"| {r['mcnemar_p']:.3g} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
