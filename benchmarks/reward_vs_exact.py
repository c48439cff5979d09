"""Does the GRPO reward point where exact match points? Per kind of synthetic held-out step.

GRPO maximises the expected reward of the policy's answer to each prompt; the metric is
exact match. On a step whose next action is a draw (which result to open, add to cart or
leave), the two can prefer different answers. For every held-out step of
`benchmarks/synth_ceiling.py` (the same steps, the same replayed continuations: samples
of P(action | prompt and the draws before it)), every action the continuations produced
is a candidate answer, and each candidate c gets

    E[reward](c) = sum_g P(g) * R(c, g)     R: the training reward, exactly as TRL sums it
    P(exact)(c)  = sum_g P(g) * [exact_match(c, g) at the metric's threshold, 0.75]

R is computed by the reward functions `shop_r1.train_grpo.build_rewards` hands to TRL's
GRPOTrainer for a `GRPORunConfig` (format, type, attribute, DARS x ROUGE-L value with the
configured threshold, or the binary variant), on the completion `{"rationale": ...,
"action": <c>}` scored against each gold's `gold_action` column string, weighted by
TRL's `reward_weights` when set. The rationale self-certainty reward (off by default)
scores the policy's logits on the rationale, not the action: it is left out.

A step agrees when every candidate of highest expected reward is also a candidate of
highest P(exact); the exact match lost there is max P(exact) minus the mean P(exact) of
the reward's argmax candidates (a policy breaking the reward's ties at random).

    python benchmarks/reward_vs_exact.py                       # default config + the sweep
    python benchmarks/reward_vs_exact.py --sessions 1200 --limit 240 --samples 64 \\
        --json-out benchmarks/results/reward_vs_exact.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shop_r1.actions import Action  # noqa: E402
from shop_r1.config import GRPORunConfig, make_run_config, trl_values  # noqa: E402
from shop_r1.metrics import exact_match  # noqa: E402

METRIC_THRESHOLD = 0.75  # `shop-r1 eval` / compute_metrics: exact match's ROUGE-L threshold
RATIONALE = "I looked at the page and this is what I'll do next."
Key = tuple[str, str, str]  # synth_ceiling._key: (type, name or "", text or "")
_NAME = re.compile(r'\bname="([^"]+)"')


def _load_ceiling() -> Any:
    if "synth_ceiling" in sys.modules:
        return sys.modules["synth_ceiling"]
    spec = importlib.util.spec_from_file_location(
        "synth_ceiling", Path(__file__).resolve().parent / "synth_ceiling.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["synth_ceiling"] = module
    spec.loader.exec_module(module)
    return module


def action_of(key: Key) -> Action:
    kind, name, text = key
    return Action.from_json({"type": kind, "name": name, "text": text})


def completion_of(action: Action) -> list[dict[str, str]]:
    """A conversational completion as TRL hands it to reward functions."""
    body = {"rationale": RATIONALE, "action": action.to_paper_json()}
    return [{"role": "assistant", "content": json.dumps(body, ensure_ascii=False)}]


def gold_column(action: Action) -> str:
    """The `gold_action` value of an RL row (`shop_r1.data.prompts.rl_rows`)."""
    return json.dumps(action.to_json(), ensure_ascii=False)


def grpo_config(**overrides: Any) -> GRPORunConfig:
    """A GRPO run config; `overrides` may name TRL's fields (reward_weights, ...)."""
    return make_run_config("grpo", {"model": "-", "data": "-", **overrides})  # type: ignore[return-value]


class TrainingReward:
    """R(candidate, gold) summed over the reward functions GRPO trains with."""

    def __init__(self, cfg: GRPORunConfig) -> None:
        from shop_r1.train_grpo import build_rewards

        trl = trl_values(cfg)
        aggregation = trl.get("multi_objective_aggregation", "sum_then_normalize")
        if aggregation != "sum_then_normalize":
            raise ValueError(
                f"multi_objective_aggregation: {aggregation!r} normalises each reward "
                "per group before summing; this analysis covers sum_then_normalize only"
            )
        # self-certainty needs the live policy and scores the rationale, not the action
        self.funcs = [f for f in build_rewards(cfg) if not hasattr(f, "bind")]
        weights = trl.get("reward_weights")
        self.weights = list(weights)[: len(self.funcs)] if weights else [1.0] * len(self.funcs)
        self.cfg = cfg

    def matrix(self, candidates: list[Action], golds: list[Action]) -> list[list[float]]:
        """R[i][j]: reward of answering candidates[i] when the gold is golds[j]."""
        gold_col = [gold_column(g) for g in golds]
        out = []
        for cand in candidates:
            comps = [completion_of(cand)] * len(golds)
            per_func = [f(comps, gold_action=gold_col) for f in self.funcs]
            out.append(
                [
                    sum(w * vals[j] for w, vals in zip(self.weights, per_func, strict=True))
                    for j in range(len(golds))
                ]
            )
        return out


@dataclass
class StepResult:
    reward_best: list[Key]
    exact_best: list[Key]
    expected_reward: dict[Key, float]
    p_exact: dict[Key, float]
    agree: bool
    lost: float  # max P(exact) - mean P(exact) over the reward's argmax
    extra: dict[str, Any] = field(default_factory=dict)


def _argmax(values: dict[Key, float]) -> list[Key]:
    top = max(values.values())
    # relative tolerance: DARS 1000 puts rewards near 1e3, float sums differ in the last ulp
    return sorted(k for k, v in values.items() if v >= top - 1e-9 * max(1.0, abs(top)))


def analyse_step(
    counts: Counter,
    reward: TrainingReward,
    metric_threshold: float = METRIC_THRESHOLD,
    extra: list[Key] = (),  # type: ignore[assignment]
) -> StepResult:
    """Expected reward and P(exact) of every candidate: the actions in `counts` (action
    key -> continuations that took it: the gold distribution) and the `extra` answers."""
    golds = sorted(counts)
    total = sum(counts.values())
    probs = [counts[k] / total for k in golds]
    gold_actions = [action_of(k) for k in golds]
    keys = golds + sorted(set(extra) - set(golds))
    actions = gold_actions + [action_of(k) for k in keys[len(golds) :]]
    matrix = reward.matrix(actions, gold_actions)
    expected = {
        k: sum(p * r for p, r in zip(probs, row, strict=True))
        for k, row in zip(keys, matrix, strict=True)
    }
    p_exact = {
        k: sum(
            p
            for p, g in zip(probs, gold_actions, strict=True)
            if exact_match(a, g, metric_threshold)
        )
        for k, a in zip(keys, actions, strict=True)
    }
    reward_best, exact_best = _argmax(expected), _argmax(p_exact)
    followed = sum(p_exact[k] for k in reward_best) / len(reward_best)
    return StepResult(
        reward_best=reward_best,
        exact_best=exact_best,
        expected_reward=expected,
        p_exact=p_exact,
        agree=set(reward_best) <= set(exact_best),
        lost=max(p_exact.values()) - followed,
    )


def family(key: Key) -> str:
    """synth_ceiling's coarse label of an action (click target family, or the type)."""
    return str(_load_ceiling().kind_of(action_of(key)))


def step_kind(url: str, counts: Counter) -> str:
    """What the policy faces, from the page it is on (its URL is in the prompt). Whether
    an option is left to pick comes from the continuations: the profile names the wanted
    options and the page marks the picked ones, so the prompt shows it too."""
    path = urlsplit(url).path  # the host can hold "cart" (cartly.example)
    if path.startswith("/dp/"):
        option = any(family(k) == "click: option" for k in counts)
        return "product page, option to pick" if option else "product page, options done"
    if path == "/cart":
        return "cart page"
    if path in ("/s", "/b"):
        return "results page"
    return "home page"


def page_candidates(page: str) -> list[Key]:
    """Answers a policy can give that no continuation did: a click on any named element
    of the current page, and terminate."""
    return [("click", n, "") for n in dict.fromkeys(_NAME.findall(page))] + [("terminate", "", "")]


@dataclass
class HeldOutStep:
    id: str
    kind: str
    gold: Key
    counts: Counter
    extra: list[Key]


def held_out_steps(sessions: int, seed: int, test_fraction: float, limit: int, samples: int):
    """synth_ceiling's held-out steps with their continuation counts (same ids, same draws)."""
    from shop_r1.data import synth
    from shop_r1.data.split import split_by_session
    from shop_r1.eval import rows_from_sessions

    ceiling = _load_ceiling()
    all_sessions = synth.generate_sessions(sessions, seed=seed)
    _, test = split_by_session(all_sessions, test_fraction, seed)
    by_id = {s.session_id: s for s in test}
    rows = rows_from_sessions(test, context="full", max_tokens=1024, limit=limit)
    out = []
    for n, row in enumerate(rows):
        session_id, _, step = row.id.rpartition("#")
        index = int(session_id.rsplit("-", 1)[1])
        counts, _keep = ceiling.step_distribution(index, seed, int(step), samples, n)
        current = by_id[session_id].steps[int(step)]
        kind = step_kind(current.url or "", counts)
        extra = page_candidates(current.page)
        out.append(HeldOutStep(row.id, kind, ceiling._key(row.gold), counts, extra))
    return out


def summarise(steps: list[HeldOutStep], results: list[StepResult]) -> dict[str, Any]:
    """Per kind of step: n, agreement, exact match of each argmax policy, what is lost."""
    groups: dict[str, list[tuple[HeldOutStep, StepResult]]] = defaultdict(list)
    for s, r in zip(steps, results, strict=True):
        groups[s.kind].append((s, r))
        groups["all"].append((s, r))
    table = {}
    for kind, pairs in groups.items():
        n = len(pairs)
        exact_opt = sum(max(r.p_exact.values()) for _, r in pairs) / n
        lost = sum(r.lost for _, r in pairs) / n
        table[kind] = {
            "n": n,
            "agree": sum(r.agree for _, r in pairs) / n,
            "exact_argmax_exact": exact_opt,
            "reward_argmax_exact": exact_opt - lost,
            "lost": lost,
        }
    switches: Counter = Counter()
    for s, r in zip(steps, results, strict=True):
        if not r.agree:
            exact_fam = "/".join(sorted({family(k) for k in r.exact_best}))
            reward_fam = "/".join(sorted({family(k) for k in r.reward_best}))
            switches[(s.kind, exact_fam, reward_fam)] += 1
    return {
        "table": table,
        "switches": [
            {"kind": k, "exact_argmax": e, "reward_argmax": w, "steps": c}
            for (k, e, w), c in switches.most_common()
        ],
    }


KIND_ORDER = [
    "home page",
    "results page",
    "product page, option to pick",
    "product page, options done",
    "cart page",
    "all",
]

# The paper's knobs (GRPORunConfig fields): DARS, ROUGE threshold, binary, format weight.
SWEEP: list[dict[str, Any]] = [
    {},
    *({"dars": d} for d in (0.0, 1.0, 10.0, 100.0)),
    *({"rouge_threshold": t} for t in (0.5, 0.9)),
    {"dars": 1.0, "rouge_threshold": 0.5},
    {"dars": 1.0, "rouge_threshold": 0.9},
    {"format_reward": 0.0},
    {"format_reward": 2.0},
    {"binary_reward": True},
    {"binary_reward": True, "rouge_threshold": 0.5},
]


def label(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in overrides.items()) or "default"


def print_table(title: str, summary: dict[str, Any]) -> None:
    print(title)
    head = (
        f"{'kind of step':<30} {'n':>4} {'agree':>7} {'exact (exact argmax)':>21} "
        f"{'exact (reward argmax)':>22} {'lost':>7}"
    )
    print(head + "\n" + "-" * len(head))
    for kind in KIND_ORDER:
        row = summary["table"].get(kind)
        if row:
            print(
                f"{kind:<30} {row['n']:>4} {row['agree']:>7.1%} {row['exact_argmax_exact']:>21.1%} "
                f"{row['reward_argmax_exact']:>22.1%} {row['lost']:>7.2%}"
            )
    if summary["switches"]:
        print("\nwhere they differ (kind: exact's argmax -> the reward's argmax, steps)")
        for sw in summary["switches"]:
            print(f"  {sw['kind']}: {sw['exact_argmax']} -> {sw['reward_argmax']}: {sw['steps']}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--test-fraction", type=float, default=0.1)
    ap.add_argument("--limit", type=int, default=240, help="held-out steps (learning.py's)")
    ap.add_argument("--samples", type=int, default=64, help="continuations per step")
    ap.add_argument("--no-sweep", action="store_true", help="only the default configuration")
    ap.add_argument("--json-out", help="write the tables here")
    ap.add_argument(
        "--per-step",
        action="store_true",
        help="and every step's counts and argmaxes (default config)",
    )
    args = ap.parse_args()
    for name in ("sessions", "limit", "samples"):
        if getattr(args, name) < 1:
            print(f"reward_vs_exact: --{name.replace('_', '-')}: must be >= 1", file=sys.stderr)
            return 2

    started = time.perf_counter()
    steps = held_out_steps(args.sessions, args.seed, args.test_fraction, args.limit, args.samples)
    drawn = time.perf_counter() - started
    configs = [{}] if args.no_sweep else SWEEP
    out: dict[str, Any] = {
        "steps": len(steps),
        "samples": args.samples,
        "sessions": args.sessions,
        "seed": args.seed,
        "metric_threshold": METRIC_THRESHOLD,
        "configs": [],
    }
    for overrides in configs:
        reward = TrainingReward(grpo_config(**overrides))
        results = [analyse_step(s.counts, reward, extra=s.extra) for s in steps]
        summary = summarise(steps, results)
        out["configs"].append({"overrides": overrides, **summary})
        if not overrides:
            print(
                f"{len(steps)} held-out steps, {args.samples} continuations each "
                f"(drawn in {drawn:.0f} s)\n"
            )
            print_table("default GRPO reward (GRPORunConfig defaults)", summary)
        if not overrides and args.per_step:
            out["per_step"] = [
                {
                    "id": s.id,
                    "kind": s.kind,
                    "gold": list(s.gold),
                    "counts": [[list(k), c] for k, c in sorted(s.counts.items())],
                    "reward_argmax": [list(k) for k in r.reward_best],
                    "exact_argmax": [list(k) for k in r.exact_best],
                    "agree": r.agree,
                    "lost": round(r.lost, 6),
                }
                for s, r in zip(steps, results, strict=True)
            ]
    if len(configs) > 1:
        kinds = [k for k in KIND_ORDER if k in out["configs"][0]["table"]]
        short = {
            "home page": "home",
            "results page": "results",
            "product page, option to pick": "prod:opt",
            "product page, options done": "prod:done",
            "cart page": "cart",
            "all": "all",
        }
        head = f"{'configuration':<38}" + "".join(f" {short[k]:>10}" for k in kinds)
        print(
            "agreement per kind of step (share of steps); over all steps, the exact match of "
            "the reward's argmax and what it loses against exact match's argmax"
        )
        print(head + f" {'exact':>7} {'lost':>7}\n" + "-" * (len(head) + 16))
        for c in out["configs"]:
            t = c["table"]
            print(
                f"{label(c['overrides']):<38}"
                + "".join(f" {t[k]['agree']:>10.1%}" for k in kinds)
                + f" {t['all']['reward_argmax_exact']:>7.2%} {t['all']['lost']:>7.2%}"
            )
        for c in out["configs"][1:]:
            for sw in c["switches"]:
                print(
                    f"  {label(c['overrides'])}: {sw['kind']}: {sw['exact_argmax']} -> "
                    f"{sw['reward_argmax']}: {sw['steps']}"
                )
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    if args.json_out:
        # one line per step row: the file stays readable and diffable
        rows = out.pop("per_step", None)
        text = json.dumps(out, indent=1)
        if rows is not None:
            body = ",\n".join(json.dumps(r) for r in rows)
            text = text[:-2] + f',\n "per_step": [\n{body}\n ]\n}}'
        Path(args.json_out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
