"""Watches GRPO's logged rollout metrics for runs that train but cannot learn.

Two failures seen on the H100 with SmolLM2-135M-Instruct and colocated vLLM, both of
which exit 0 with a saved model:

- GRPO started from a model that writes no parseable action (the base model, not the SFT
  one): every completion got the same reward, every group's reward std was 0, so loss and
  gradients were exactly 0 at every step (`frac_reward_zero_std` 1, `parse_failure_rate`
  1). The run "trained" for its whole budget and changed nothing.
- GRPO at lr 1e-5 (the paper used 1e-7) after SFT: the rollouts predicted `click` for
  97-100% of the steps while a fifth of the batch's gold actions were searches or
  terminates; the held-out macro-F1 fell from 53% to 30% in 30 steps (a collapse onto one
  type, the paper's small-model failure with another type).

The watch reads what the reward functions log (`pred_type/*`, `gold_type/*`,
`parse_failure_rate`) and TRL's `frac_reward_zero_std`, and reports each finding once
through the doctor's catalog; it never stops a run.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from transformers import TrainerCallback

from shop_r1.actions import ACTION_TYPES
from shop_r1_doctor.api import Finding, finding, render_finding


@dataclass(frozen=True)
class WatchLimits:
    # Logged steps in a row with no reward variance before the run is called stuck: one
    # step can be a batch of easy prompts, three in a row are not.
    stuck_window: int = 3
    # Collapse: over the last `collapse_window` logged steps, one type takes at least
    # `collapse_share` of the parsed predictions while the gold actions of those steps
    # leave `collapse_gap` or more of the batch to other types.
    collapse_window: int = 5
    collapse_share: float = 0.95
    collapse_gap: float = 0.10


class RolloutWatch(TrainerCallback):
    """A TrainerCallback; `findings` holds what it reported, in order."""

    def __init__(self, limits: WatchLimits | None = None, *, echo: bool = True) -> None:
        self.limits = limits or WatchLimits()
        self.echo = echo
        self.findings: list[Finding] = []
        self._stuck: list[int] = []
        self._mix: deque[tuple[int, dict[str, float], dict[str, float]]] = deque(
            maxlen=self.limits.collapse_window
        )
        self._reported: set[str] = set()

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        # every rank logs the same reduced metrics; one of them speaks
        self.echo = self.echo and bool(getattr(state, "is_world_process_zero", True))
        self.observe(int(getattr(state, "global_step", 0)), logs or {})

    def observe(self, step: int, logs: dict[str, Any]) -> None:
        """One logged step's metrics (keys as TRL logs them, with or without `train/`)."""
        flat = {k.removeprefix("train/"): v for k, v in logs.items()}
        zero_std = _number(flat.get("frac_reward_zero_std"))
        if zero_std is not None:
            self._stuck = [*self._stuck, step] if zero_std >= 1.0 else []
            if len(self._stuck) >= self.limits.stuck_window:
                self._report_stuck(flat)
        pred = {t: _number(flat.get(f"pred_type/{t}")) for t in ACTION_TYPES}
        gold = {t: _number(flat.get(f"gold_type/{t}")) for t in ACTION_TYPES}
        if all(v is not None for v in (*pred.values(), *gold.values())):
            self._mix.append((step, pred, gold))  # type: ignore[arg-type]
            if len(self._mix) == self.limits.collapse_window:
                self._check_collapse()

    def _report_stuck(self, flat: dict[str, Any]) -> None:
        failures = _number(flat.get("parse_failure_rate"))
        steps = f"steps {self._stuck[0]}-{self._stuck[-1]}"
        if failures is not None and failures >= 1.0:
            why = "no completion parsed as an action (parse failures 100%)"
            fix = (
                "start GRPO from the SFT model (`shop-r1 train sft`, then `train grpo --model "
                "<sft output dir>`); a model that never writes the JSON format gets no reward"
            )
        else:
            why = "every completion of a prompt got the same reward"
            fix = (
                "more num_generations or a higher temperature, so a group's completions "
                "differ; check what the reward functions give (log_completions: true)"
            )
        self._report(
            "GRPO_NO_REWARD_SIGNAL",
            f"{steps}: every group's rewards were identical; loss and gradients are 0",
            detail=f"{why}; the run spends its steps without changing the model",
            fix=fix,
        )

    def _check_collapse(self) -> None:
        n = len(self._mix)
        pred = {t: sum(p[t] for _, p, _ in self._mix) for t in ACTION_TYPES}
        gold = {t: sum(g[t] for _, _, g in self._mix) / n for t in ACTION_TYPES}
        found = collapsed_onto(pred, gold, self.limits)
        if found is not None:
            top, share = found
            first, last = self._mix[0][0], self._mix[-1][0]
            self._report(
                "GRPO_TYPE_COLLAPSE",
                f"steps {first}-{last}: {share:.0%} of the rollouts predict `{top}`, "
                f"{gold[top]:.0%} of their gold actions are `{top}`",
                detail="the policy is collapsing onto one action type; held-out macro-F1 "
                "falls with it",
            )

    def _report(self, code: str, title: str, *, detail: str, fix: str | None = None) -> None:
        if code in self._reported:
            return
        self._reported.add(code)
        found = finding(code, title, detail=detail, fix=fix)
        self.findings.append(found)
        if self.echo:  # between TRL's log lines, the block the doctor and preflight print
            sys.stderr.write(render_finding(found, stream=sys.stderr))
            sys.stderr.flush()


def collapsed_onto(
    pred: Mapping[str, float], gold: Mapping[str, float], limits: WatchLimits | None = None
) -> tuple[str, float] | None:
    """(type, its share of the parsed predictions) when one type takes at least
    `collapse_share` of them while the gold leaves `collapse_gap` or more to other types.
    `pred` may be counts or shares (unparsed outputs are simply absent); `gold` are shares.
    Used live by the watch and on held-out evaluations (shop_r1.demo.collapse_check)."""
    limits = limits or WatchLimits()
    parsed = sum(pred.values())
    if parsed <= 0:
        return None
    top = max(pred, key=lambda t: pred[t])
    share = pred[top] / parsed
    # rounded: 0.95 of the predictions against 0.9 of the gold is at both limits, not a
    # float's width below one of them
    others = round(1.0 - gold.get(top, 0.0), 9)
    if round(share, 9) >= limits.collapse_share and others >= limits.collapse_gap:
        return top, share
    return None


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
