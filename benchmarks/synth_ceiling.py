"""How often can ANY policy be right on the synthetic held-out steps? An oracle upper bound.

The synthetic generator (`shop_r1.data.synth`) draws some next actions at random: which of
several affordable results to open, add to cart vs buy now vs reviews vs back, whether the
shopper wanted an option. On such a step no policy, SFT or GRPO, is right more often than
the draw's most likely outcome. This script measures that bound on the same held-out steps
`benchmarks/learning.py` scores:

For each step j, the session is generated again with its own random draws replayed up to
draw K and fresh draws after it. Starting from the draws that produced step j-1, K grows
until every one of N fresh continuations reproduces step j's prompt exactly (everything
the policy sees is then fixed); the continuations' actions at step j are then samples of
P(action | the prompt and everything drawn before it: the shopper's budget and wanted
options included, where the prompt does not show them). The oracle predicts the most frequent action; its
expected exact match is that action's share. Knowing what the prompt hides only helps, so
the figure is an upper bound on what a policy that sees the prompt can reach.

    python benchmarks/synth_ceiling.py --predictions runs/learning/eval-sft/predictions.jsonl
    python benchmarks/synth_ceiling.py --sessions 1200 --limit 240 --samples 64

With `--predictions` (a `predictions.jsonl` from `shop-r1 eval` / learning.py on the same
held-out steps) it prints the model's exact match next to the bound, per kind of step.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shop_r1.data import synth
from shop_r1.data.prompts import build_messages
from shop_r1.data.split import split_by_session
from shop_r1.eval import rows_from_sessions


class Recorder(random.Random):
    """A seeded generator that logs every primitive draw (random() and getrandbits())."""

    def __init__(self, seed: Any) -> None:
        self.log: list[tuple[str, Any]] = []
        super().__init__(seed)

    def random(self) -> float:
        value = super().random()
        self.log.append(("r", value))
        return value

    def getrandbits(self, k: int) -> int:
        value = super().getrandbits(k)
        self.log.append(("b", value))
        return value


class Replay(random.Random):
    """Replays the first `keep` recorded draws, then draws fresh from its own seed."""

    def __init__(self, log: list[tuple[str, Any]], keep: int, seed: int) -> None:
        self._log, self._keep, self._i = log, keep, 0
        super().__init__(seed)

    def _next(self, kind: str) -> Any:
        if self._i < self._keep:
            recorded_kind, value = self._log[self._i]
            self._i += 1
            if recorded_kind == kind:
                return value
            self._keep = 0  # the path diverged (cannot happen before `keep`): go fresh
        self._i += 1
        return None

    def random(self) -> float:
        value = self._next("r")
        return super().random() if value is None else value

    def getrandbits(self, k: int) -> int:
        value = self._next("b")
        return super().getrandbits(k) if value is None else value


def _generate(index: int, seed: int, rng: random.Random) -> Any:
    """synth._session with `rng` as the session's generator."""
    real = synth.random
    synth.random = SimpleNamespace(Random=lambda _seed: rng)  # type: ignore[assignment]
    try:
        return synth._session(index, seed, dict(synth.DEFAULT_MIX))
    finally:
        synth.random = real


def _key(action: Any) -> tuple[str, str, str]:
    return (action.type, action.name or "", action.text or "")


def _prompt(session: Any, step: int) -> list[dict] | None:
    """The messages the policy sees at `step` (learning.py's prompt settings)."""
    if len(session.steps) <= step:
        return None
    return build_messages(session, step, context="full", max_tokens=1024)


def step_distribution(
    index: int, seed: int, step: int, samples: int, rng_seed: int
) -> tuple[Counter, int]:
    """(action counts at `step` over fresh continuations once the prompt is fixed, K)."""
    rec = Recorder(f"{seed}:{index}")
    session = _generate(index, seed, rec)
    log = rec.log
    target = _prompt(session, step)
    fresh = random.Random(rng_seed)
    # K from 0: below the draws that decide what step j's prompt shows, fresh continuations
    # change it; the scan stops at the first sample that differs, so small K cost little.
    for keep in range(len(log) + 1):
        actions: Counter = Counter()
        for _ in range(samples):
            s = _generate(index, seed, Replay(log, keep, fresh.getrandbits(32)))
            if _prompt(s, step) != target:
                break
            actions[_key(s.steps[step].action)] += 1
        else:
            return actions, keep
    return Counter({_key(session.steps[step].action): samples}), len(log)


def kind_of(action: Any) -> str:
    """A coarse label for the per-kind table: the type, or the click target's family."""
    if action.type != "click":
        return action.type
    name = (action.name or "").lower()
    for label, pattern in (
        ("click: open a result", r"result|productcard|s-result"),
        ("click: add / buy / reviews / back", r"add|buy|review|back|acr-"),
        ("click: option", r"dropdown|option|variant|p_(size|color|model|capacity)"),
        ("click: checkout", r"checkout|proceed"),
        ("click: filter / sort / page", r"filter|refine|sort|next|pagination"),
        ("click: category", r"nav|menu"),
    ):
        if re.search(pattern, name):
            return label
    return "click: other"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--test-fraction", type=float, default=0.1)
    ap.add_argument("--limit", type=int, default=240, help="held-out steps (learning.py's)")
    ap.add_argument("--samples", type=int, default=64, help="continuations per step")
    ap.add_argument("--predictions", help="predictions.jsonl of a model on the same steps")
    ap.add_argument("--json-out", help="write per-step results here")
    args = ap.parse_args()

    started = time.perf_counter()
    sessions = synth.generate_sessions(args.sessions, seed=args.seed)
    _, test = split_by_session(sessions, args.test_fraction, args.seed)
    # learning.py's held-out rows (same ids and order; the context does not change the gold)
    rows = rows_from_sessions(test, context="full", max_tokens=1024, limit=args.limit)
    preds: dict[str, bool] = {}
    if args.predictions:
        for line in Path(args.predictions).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                preds[str(row["id"])] = bool(row["exact"])
    per_kind: dict[str, list[float]] = defaultdict(list)
    model_kind: dict[str, list[bool]] = defaultdict(list)
    oracle_hit: dict[str, list[bool]] = defaultdict(list)
    out = []
    for n, row in enumerate(rows):
        session_id, _, step = row.id.rpartition("#")
        index = int(session_id.rsplit("-", 1)[1])
        counts, _keep = step_distribution(index, args.seed, int(step), args.samples, n)
        if _key(row.gold) not in counts:
            print(f"{row.id}: the gold action never came up in {args.samples} continuations")
        total = sum(counts.values())
        best, best_n = counts.most_common(1)[0]
        share = best_n / total
        kind = kind_of(row.gold)
        per_kind[kind].append(share)
        oracle_hit[kind].append(_key(row.gold) == best)
        if row.id in preds:
            model_kind[kind].append(preds[row.id])
        out.append(
            {
                "id": row.id,
                "kind": kind,
                "oracle_share": share,
                "outcomes": len(counts),
                "gold_is_mode": _key(row.gold) == best,
            }
        )
    every = [s for v in per_kind.values() for s in v]
    print(
        f"{len(rows)} held-out steps, {args.samples} continuations each, "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    # Per kind of gold step, oracle and model are both scored on the realised gold (the
    # oracle is right when the gold is the most likely action): grouping by the gold's kind
    # selects steps where that kind came up, so the expected share would not compare.
    head = f"{'kind of step (by gold)':<36} {'steps':>6} {'oracle exact':>13}"
    if preds:
        head += f" {'model exact':>12}"
    print(head + "\n" + "-" * len(head))
    for kind in sorted(per_kind, key=lambda k: -len(per_kind[k])):
        hits = oracle_hit[kind]
        line = f"{kind:<36} {len(hits):>6} {sum(hits) / len(hits):>13.1%}"
        if preds and model_kind[kind]:
            line += f" {sum(model_kind[kind]) / len(model_kind[kind]):>12.1%}"
        print(line)
    all_hits = [h for v in oracle_hit.values() for h in v]
    line = f"{'all (realised gold)':<36} {len(all_hits):>6} {sum(all_hits) / len(all_hits):>13.1%}"
    if preds:
        mh = [h for v in model_kind.values() for h in v]
        line += f" {sum(mh) / max(len(mh), 1):>12.1%}"
    print("-" * len(head) + "\n" + line)
    print(
        f"{'all (expected: the mode share)':<36} {len(every):>6} {sum(every) / len(every):>13.1%}"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
