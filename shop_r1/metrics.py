"""Evaluation metrics of the paper (section 4): exact action match, type accuracy,
macro-F1 over the three types, per-type breakdown, confusion matrix, parse failures.

An output that does not parse is wrong: it is a miss of its gold type (it counts in
that type's support and lowers its recall) but a prediction of no type (no precision
denominator grows); the confusion matrix shows it in an `unparsed` column.
Macro-F1 averages the per-type F1 over the types that occur in the gold actions or the
parsed predictions (as scikit-learn does when no label list is given).

`compute_metrics` returns the `shop-r1.score/1` shape: fractions in [0, 1], counts as int.
"""

from __future__ import annotations

from typing import Any

from shop_r1.actions import ACTION_TYPES, Action
from shop_r1.parser import Parsed
from shop_r1.rouge import rouge_l

SCORE_SCHEMA = "shop-r1.score/1"
UNPARSED = "unparsed"


def exact_match(pred: Action, gold: Action, threshold: float = 0.75) -> bool:
    """terminate: type; click: type and name; type_and_submit: type, name, ROUGE-L(text) >= threshold."""
    if pred.type != gold.type:
        return False
    if gold.type == "terminate":
        return True
    if (pred.name or "").strip() != (gold.name or "").strip():
        return False
    if gold.type == "click":
        return True
    return rouge_l(pred.text or "", gold.text or "") >= threshold


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _f1(precision: float, recall: float) -> float:
    return _ratio(2 * precision * recall, precision + recall)


def compute_metrics(
    golds: list[Action], preds: list[Parsed], threshold: float = 0.75
) -> dict[str, Any]:
    """Score parsed predictions against gold actions (same order, same length)."""
    if len(golds) != len(preds):
        raise ValueError(f"{len(golds)} gold actions but {len(preds)} predictions")
    n = len(golds)
    confusion = {g: {p: 0 for p in (*ACTION_TYPES, UNPARSED)} for g in ACTION_TYPES}
    exact_by_type = dict.fromkeys(ACTION_TYPES, 0)
    for gold, parsed in zip(golds, preds, strict=True):
        pred = parsed.action if parsed.ok else None
        confusion[gold.type][pred.type if pred is not None else UNPARSED] += 1
        if pred is not None and exact_match(pred, gold, threshold):
            exact_by_type[gold.type] += 1

    per_type: dict[str, dict[str, Any]] = {}
    present: list[str] = []
    for kind in ACTION_TYPES:
        support = sum(confusion[kind].values())
        predicted = sum(confusion[g][kind] for g in ACTION_TYPES)
        hits = confusion[kind][kind]
        precision, recall = _ratio(hits, predicted), _ratio(hits, support)
        per_type[kind] = {
            "precision": precision,
            "recall": recall,
            "f1": _f1(precision, recall),
            "exact_match": _ratio(exact_by_type[kind], support),
            "support": support,
            "predicted": predicted,
        }
        if support or predicted:
            present.append(kind)

    unparsed = sum(confusion[g][UNPARSED] for g in ACTION_TYPES)
    return {
        "schema": SCORE_SCHEMA,
        "n": n,
        "threshold": threshold,
        "exact_match": _ratio(sum(exact_by_type.values()), n),
        "type_accuracy": _ratio(sum(confusion[k][k] for k in ACTION_TYPES), n),
        "type_macro_f1": _ratio(sum(per_type[k]["f1"] for k in present), len(present)),
        "parse_failure_rate": _ratio(unparsed, n),
        "per_type": per_type,
        "confusion": confusion,
    }
