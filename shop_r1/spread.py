"""Which GRPO prompts can teach anything: the groups whose completions disagree.

GRPO's advantage is a completion's reward minus its group's mean. A prompt whose sampled
completions all score the same (all right, or all wrong the same way) gives every
completion advantage 0: it costs a rollout and a backward pass and moves nothing, and
under a token-normalised loss it dilutes the prompts that do carry signal. On the H100,
SmolLM2-135M after SFT left 43-47% of its GRPO groups with no reward spread at the
paper's temperature (benchmarks/rollout_mix.py).

DAPO drops such groups online ("dynamic sampling") and samples again; TRL has no option
for it. Done once ahead of training it is the same filter: sample each training prompt's
group with the starting policy, keep the prompts whose rewards spread. The reward is the
one GRPO hands TRL (`rewards.reward_components`), so "spread" means spread as GRPO sees it.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shop_r1.actions import Action
from shop_r1.rewards import RewardConfig, reward_components


def prompt_key(messages: Sequence[dict[str, Any]]) -> str:
    """A stable key of one prompt (its chat messages), the same for the evaluation rows
    and the GRPO rows built from one session step."""
    text = json.dumps(list(messages), ensure_ascii=False, sort_keys=True)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def group_rewards(completions: Iterable[str], gold: Action, cfg: RewardConfig) -> list[float]:
    return [sum(reward_components(c, gold, cfg).values()) for c in completions]


@dataclass
class SpreadReport:
    """The kept prompt keys and, per gold action type, how many prompts had spread."""

    keep: list[str] = field(default_factory=list)
    prompts: int = 0
    by_type: dict[str, list[int]] = field(default_factory=dict)  # type -> [kept, seen]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "shop-r1.spread/1",
            "prompts": self.prompts,
            "kept": len(self.keep),
            "by_gold_type": {
                t: {"kept": k, "seen": n} for t, (k, n) in sorted(self.by_type.items())
            },
            "keep": self.keep,
        }


def select_spread(
    rows: Sequence[Any],
    groups: Sequence[Sequence[str]],
    cfg: RewardConfig | None = None,
    *,
    min_std: float = 1e-6,
) -> SpreadReport:
    """Keep the rows (with `.messages` and `.gold`) whose group's rewards have a
    population standard deviation above `min_std`."""
    if len(rows) != len(groups):
        raise ValueError(f"{len(rows)} rows but {len(groups)} groups of completions")
    cfg = cfg or RewardConfig()
    report = SpreadReport(prompts=len(rows))
    for row, group in zip(rows, groups, strict=True):
        if len(group) < 2:
            raise ValueError("a group needs at least 2 completions to have a spread")
        spread = statistics.pstdev(group_rewards(group, row.gold, cfg)) > min_std
        counts = report.by_type.setdefault(row.gold.type, [0, 0])
        counts[1] += 1
        if spread:
            counts[0] += 1
            report.keep.append(prompt_key(row.messages))
    return report


def filter_rows(rl_rows: Sequence[dict[str, Any]], keep: Iterable[str]) -> list[dict[str, Any]]:
    """The GRPO rows (`shop_r1.data.prompts.rl_rows`) whose prompt is in `keep`."""
    wanted = set(keep)
    return [r for r in rl_rows if prompt_key(r["prompt"]) in wanted]
