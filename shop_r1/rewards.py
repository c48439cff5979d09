"""The hierarchical Shop-R1 reward (paper Table 1, Eq. 4) as TRL reward functions.

For a completion c with gold action g (`t` = type, `n` = name, `x` = text, `R` =
ROUGE-L F-measure on normalised tokens, `cr(s) = s if s >= threshold else 0`):

    format    = 0.5 if c parses (strict parser) else 0;  every other part is 0 if not
    type      = 0.3 if pred.t == g.t
    attribute = (only if pred.t == g.t)
                click:            0.2 if pred.n non-empty
                type_and_submit:  0.1 if pred.n non-empty + 0.1 if pred.x non-empty
    value     = (only if pred.t == g.t)
                click:            DARS * cr(R(pred.n, g.n))
                type_and_submit:  0.1 * cr(R(pred.n, g.n)) + DARS * cr(R(pred.x, g.x))
    total     = format + type + attribute + value

DARS = 1000 makes long-text actions worth far more than `terminate`, so spamming
`terminate` does not pay. The threshold uses `>=`, the same comparison as the exact-match
metric, so training credit and evaluation never disagree at the boundary (the paper says
"exceeds ... e.g. 0.75" for the reward and ">= 0.75" for the metric).

Binary variant (paper ablation, `binary=True`): format as above, and `value` = 1.0 when
the prediction is an exact match (`shop_r1.metrics.exact_match`) else 0; type and
attribute are 0. The rationale's self-certainty reward is in `shop_r1.self_certainty`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from shop_r1.actions import Action
from shop_r1.metrics import exact_match
from shop_r1.parser import parse_cached
from shop_r1.rouge import rouge_l

COMPONENTS = ("format", "type", "attribute", "value")


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the hierarchical reward; defaults are the paper's."""

    format: float = 0.5  # valid single JSON object with rationale and action
    type: float = 0.3  # predicted action type equals the gold type
    click_name: float = 0.2  # click: a non-empty name
    tas_name: float = 0.1  # type_and_submit: a non-empty name
    tas_text: float = 0.1  # type_and_submit: a non-empty text
    tas_name_value: float = 0.1  # type_and_submit: weight of ROUGE-L(name)
    dars: float = 1000.0  # difficulty-aware reward scaling of the long-text value
    threshold: float = 0.75  # ROUGE-L below this earns no value credit
    binary: bool = False  # ablation: 1 for an exact match instead of the hierarchy
    alpha: float = 0.005  # weight of the rationale self-certainty reward
    strict: bool = True  # strict parser (format reward); False = lenient

    def __post_init__(self) -> None:
        for key, value in asdict(self).items():
            if isinstance(value, bool):
                continue
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"rewards.{key}: must be a finite number >= 0, got {value}")
        if self.threshold > 1:
            raise ValueError(f"rewards.threshold: must be in [0, 1], got {self.threshold}")

    def bounds(self) -> dict[str, float]:
        """Largest value each component can take (used by tests and sanity checks)."""
        if self.binary:
            return {"format": self.format, "type": 0.0, "attribute": 0.0, "value": 1.0}
        return {
            "format": self.format,
            "type": self.type,
            "attribute": max(self.click_name, self.tas_name + self.tas_text),
            "value": max(self.dars, self.tas_name_value + self.dars),
        }


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or a chat list whose last message counts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):  # multimodal parts: [{"type": "text", "text": ...}]
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


@lru_cache(maxsize=4096)
def _gold_from_str(value: str) -> Action:
    try:
        return Action.from_json(json.loads(value))
    except ValueError as exc:
        raise ValueError(f"gold_action {value[:80]!r}: {exc}") from None


def gold_action_of(value: Any) -> Action:
    """The gold Action from a `gold_action` column value (JSON string, dict or Action)."""
    if isinstance(value, Action):
        return value
    if isinstance(value, str):
        return _gold_from_str(value)
    try:
        return Action.from_json(value)
    except ValueError as exc:
        raise ValueError(f"gold_action: {exc}") from None


def _credit(score: float, threshold: float) -> float:
    return score if score >= threshold else 0.0


def _score(text: str, gold: Action, cfg: RewardConfig) -> tuple[float, float, float, float]:
    parsed = parse_cached(text, cfg.strict)
    if not parsed.ok or parsed.action is None:
        return (0.0, 0.0, 0.0, 0.0)
    pred = parsed.action
    if cfg.binary:
        return (cfg.format, 0.0, 0.0, 1.0 if exact_match(pred, gold, cfg.threshold) else 0.0)
    if pred.type != gold.type:
        return (cfg.format, 0.0, 0.0, 0.0)
    pred_name, pred_text = pred.name or "", pred.text or ""
    attribute = value = 0.0
    if gold.type == "click":
        attribute = cfg.click_name if pred_name.strip() else 0.0
        value = cfg.dars * _credit(rouge_l(pred_name, gold.name or ""), cfg.threshold)
    elif gold.type == "type_and_submit":
        attribute = (cfg.tas_name if pred_name.strip() else 0.0) + (
            cfg.tas_text if pred_text.strip() else 0.0
        )
        value = cfg.tas_name_value * _credit(
            rouge_l(pred_name, gold.name or ""), cfg.threshold
        ) + cfg.dars * _credit(rouge_l(pred_text, gold.text or ""), cfg.threshold)
    return (cfg.format, cfg.type, attribute, value)


def _gold_key(value: Any) -> str:
    """A hashable, cheap-to-hash key for a gold action (its JSON string)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Action):
        return json.dumps(value.to_json())
    return json.dumps(value, sort_keys=True, default=str)


@lru_cache(maxsize=64)
def _scorer(cfg: RewardConfig) -> Any:
    """A memoised scorer per config: TRL calls the four components one after another on
    the same batch, so each (completion, gold) pair is parsed and scored once. Keys are
    plain strings because hashing the dataclasses on every call costs more than scoring."""

    @lru_cache(maxsize=8192)
    def score(text: str, gold_key: str) -> tuple[float, float, float, float]:
        return _score(text, _gold_from_str(gold_key), cfg)

    return score


def _score_cached(text: str, gold: Any, cfg: RewardConfig) -> tuple[float, float, float, float]:
    return _scorer(cfg)(text, _gold_key(gold))


def reward_components(text: str, gold: Action, cfg: RewardConfig | None = None) -> dict[str, float]:
    """All components and their sum for one completion, exactly as training computes them."""
    cfg = cfg or RewardConfig()
    gold_action_of(gold)  # validates; raises ValueError naming the field
    parts = _score_cached(completion_text(text), gold, cfg)
    out = dict(zip(COMPONENTS, parts, strict=True))
    out["total"] = sum(parts)
    return out


class _Component:
    """One reward component as a picklable TRL reward function named after it."""

    component = ""

    def __init__(self, cfg: RewardConfig | None = None) -> None:
        self.cfg = cfg or RewardConfig()
        # TRL logs each reward function as rewards/<__name__>/mean.
        self.__name__ = self.component

    def __call__(
        self, completions: list[Any], gold_action: list[Any] | None = None, **kwargs: Any
    ) -> list[float]:
        if gold_action is None:
            raise ValueError(
                f"reward {self.component!r} needs the dataset column 'gold_action' "
                "(JSON string of the gold action); build RL rows with shop_r1.data.prompts.rl_rows"
            )
        index = COMPONENTS.index(self.component)
        score = _scorer(self.cfg)
        scored = [
            score(completion_text(c), _gold_key(g))
            for c, g in zip(completions, gold_action, strict=True)
        ]
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and scored:
            self._log(log_metric, completions, gold_action)
        return [parts[index] for parts in scored]

    def _log(self, log_metric: Any, completions: list[Any], gold_action: list[Any]) -> None:
        """Extra per-batch metrics; overridden where a component has something to add."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.cfg})"


class FormatReward(_Component):
    """0.5 for a valid output; logs the parse-failure rate."""

    component = "format"

    def _log(self, log_metric: Any, completions: list[Any], gold_action: list[Any]) -> None:
        failed = sum(not parse_cached(completion_text(c), self.cfg.strict).ok for c in completions)
        log_metric("parse_failure_rate", failed / len(completions))


class TypeReward(_Component):
    """0.3 for the right action type; logs the predicted and the gold type mix (shop_r1.watch)."""

    component = "type"

    def _log(self, log_metric: Any, completions: list[Any], gold_action: list[Any]) -> None:
        counts = {"click": 0, "type_and_submit": 0, "terminate": 0}
        for c in completions:
            parsed = parse_cached(completion_text(c), self.cfg.strict)
            if parsed.action is not None:
                counts[parsed.action.type] += 1
        gold = dict.fromkeys(counts, 0)
        for g in gold_action:
            gold[gold_action_of(g).type] += 1
        for kind, count in counts.items():
            log_metric(f"pred_type/{kind}", count / len(completions))
            # the batch's own gold mix: a collapse is a prediction share far from it
            log_metric(f"gold_type/{kind}", gold[kind] / len(completions))


class AttributeReward(_Component):
    """Presence of the name (click) or name and text (type_and_submit)."""

    component = "attribute"


class ValueReward(_Component):
    """DARS-scaled ROUGE-L credit (or the binary exact-match reward); logs exact match."""

    component = "value"

    def _log(self, log_metric: Any, completions: list[Any], gold_action: list[Any]) -> None:
        hits = 0
        for c, g in zip(completions, gold_action, strict=True):
            parsed = parse_cached(completion_text(c), self.cfg.strict)
            if parsed.action is not None:
                hits += exact_match(parsed.action, gold_action_of(g), self.cfg.threshold)
        log_metric("exact_match", hits / len(completions))


def build_reward_funcs(cfg: RewardConfig | None = None) -> list[_Component]:
    """The four action-reward components in TRL order (self-certainty is added by the trainer)."""
    cfg = cfg or RewardConfig()
    return [FormatReward(cfg), TypeReward(cfg), AttributeReward(cfg), ValueReward(cfg)]
