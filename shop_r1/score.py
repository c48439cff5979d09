"""Offline scoring: gold actions joined by `id` to raw model outputs.

Gold file (JSONL or parquet), one of these row shapes per row:
- `{"id": ..., "action": {"type": ..., "name": ..., "text": ...}, ...}` (other fields allowed)
- `{"id": ..., "gold_action": "<action JSON string>", ...}` (the RL rows of `shop_r1.data.prompts`)
- a session row `{"session_id": ..., "steps": [...]}`: expands to one gold row per step
  with id `<session_id>#<step index>` (`shop_r1.data.schema.step_id`).
Pred file (JSONL): `{"id": ..., "completion": "<raw model output>"}` per line.

A prediction without gold, a duplicate id, or a malformed line is a ToolError naming
the file and line; so is an empty gold or prediction file (a score of nothing). Gold rows without a prediction are not scored; their count is
reported as `missing` (and is an error with `require_all`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shop_r1.actions import Action
from shop_r1.data.io import iter_rows
from shop_r1.data.schema import session_from_json, step_id, validate_action
from shop_r1.metrics import compute_metrics
from shop_r1.parser import parse_completion
from shop_r1.rewards import COMPONENTS, RewardConfig, reward_components
from shop_r1_doctor.errors import ToolError


def load_gold(path: str | Path) -> dict[str, Action]:
    """id -> gold action for every row of a gold file (see the module docstring)."""
    gold: dict[str, Action] = {}
    where: dict[str, int] = {}

    def add(key: Any, action: Action, line: int) -> None:
        if not isinstance(key, str | int) or isinstance(key, bool) or str(key) == "":
            raise ToolError(f"{path}:{line}: id: expected a non-empty string or integer")
        key = str(key)
        if key in gold:
            raise ToolError(f"{path}:{line}: id: duplicate {key!r} (first on line {where[key]})")
        gold[key], where[key] = action, line

    for line, row, error in iter_rows(path):
        if error:
            raise ToolError(f"{path}:{line}: {error}")
        if not isinstance(row, dict):
            raise ToolError(f"{path}:{line}: expected a JSON object")
        try:
            if "steps" in row and "session_id" in row:
                session = session_from_json(row)
                for i, step in enumerate(session.steps):
                    add(step_id(session.session_id, i), step.action, line)
            elif "action" in row:
                add(row.get("id"), validate_action(row["action"]), line)
            elif isinstance(row.get("gold_action"), str):
                add(
                    row.get("id"),
                    validate_action(json.loads(row["gold_action"]), "gold_action"),
                    line,
                )
            else:
                raise ValueError(
                    "expected `id` with `action` (object) or `gold_action` (JSON string), "
                    "or a session row with `session_id` and `steps`"
                )
        except ValueError as exc:
            raise ToolError(f"{path}:{line}: {exc}") from None
    return gold


def load_preds(path: str | Path, gold: dict[str, Action]) -> list[tuple[str, str]]:
    """(id, completion) in file order; every id must have gold and appear once."""
    if str(path).endswith(".parquet"):
        raise ToolError(f'{path}: predictions must be JSONL lines {{"id": ..., "completion": ...}}')
    preds: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for line, row, error in iter_rows(path):
        if error:
            raise ToolError(f"{path}:{line}: {error}")
        if (
            not isinstance(row, dict)
            or "id" not in row
            or not isinstance(row.get("completion"), str)
        ):
            raise ToolError(
                f'{path}:{line}: expected {{"id": ..., "completion": "<model output>"}}'
            )
        key = str(row["id"])
        if key in seen:
            raise ToolError(f"{path}:{line}: id: duplicate {key!r} (first on line {seen[key]})")
        if key not in gold:
            raise ToolError(f"{path}:{line}: id: {key!r} has no gold row; check --gold")
        seen[key] = line
        preds.append((key, row["completion"]))
    return preds


def score_files(
    gold_path: str | Path,
    pred_path: str | Path,
    *,
    with_rewards: bool = False,
    strict: bool = True,
    cfg: RewardConfig | None = None,
    require_all: bool = False,
) -> dict[str, Any]:
    """The `shop-r1.score/1` report for a gold file and a prediction file."""
    cfg = cfg or RewardConfig(strict=strict)
    gold = load_gold(gold_path)
    if not gold:
        raise ToolError(f"{gold_path}: no gold rows (the file is empty); check --gold")
    preds = load_preds(pred_path, gold)
    if not preds:  # scoring nothing would print 0.00% everywhere: a wrong number
        raise ToolError(
            f"{pred_path}: no predictions (the file is empty); write one "
            '{"id": ..., "completion": ...} line per gold row'
        )
    missing = len(gold) - len(preds)
    if require_all and missing:
        have = {k for k, _ in preds}
        first = next(k for k in gold if k not in have)
        raise ToolError(f"{pred_path}: {missing} gold id(s) have no prediction, e.g. {first!r}")
    golds = [gold[k] for k, _ in preds]
    parsed = [parse_completion(text, strict=strict) for _, text in preds]
    report = compute_metrics(golds, parsed, threshold=cfg.threshold)
    report["missing"] = missing
    report["parser"] = "strict" if strict else "lenient"
    if with_rewards:
        rows = []
        for (key, text), g in zip(preds, golds, strict=True):
            parts = reward_components(text, g, cfg)
            rows.append({"id": key, **{c: parts[c] for c in (*COMPONENTS, "total")}})
        report["rows"] = rows
    return report
