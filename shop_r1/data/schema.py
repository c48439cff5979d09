"""The project's data model and its canonical on-disk row.

One row per SESSION (JSONL line or parquet row):

    {"session_id": "synth-0-000001",
     "steps": [{"url": "https://shop.example/", "page": "<html>...</html>",
                "action": {"type": "type_and_submit", "name": "search_input", "text": "trail running shoes"},
                "rationale": "I need new trail shoes, so I'll search for them."}, ...],
     "meta": {"source": "synth"}}                      # optional, free-form object

`page` is the simplified HTML the shopper saw before acting (every interactable
element has a `name="..."` attribute); `url` may be null. A step is addressed as
`<session_id>#<step index from 0>`: that is the `id` of SFT/RL rows and of gold rows
that `shop-r1 score` expands from a session file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from shop_r1.actions import FIELDS_BY_TYPE, Action

SESSION_KEYS = {"session_id", "steps", "meta"}
STEP_KEYS = {"page", "action", "rationale", "url"}


@dataclass(frozen=True)
class Step:
    """What the shopper saw (`page`), did (`action`) and why (`rationale`)."""

    page: str
    action: Action
    rationale: str
    url: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "page": self.page,
            "action": self.action.to_json(),
            "rationale": self.rationale,
        }


@dataclass
class Session:
    """One shopping session: its steps in order."""

    session_id: str
    steps: list[Step]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "session_id": self.session_id,
            "steps": [s.to_json() for s in self.steps],
        }
        if self.meta:
            row["meta"] = self.meta
        return row


def step_id(session_id: str, index: int) -> str:
    """The id of one step (SFT/RL rows, score gold rows)."""
    return f"{session_id}#{index}"


def validate_action(obj: Any, where: str = "action") -> Action:
    """A gold action: `Action.from_json` plus non-empty name/text (ValueError otherwise)."""
    try:
        action = Action.from_json(obj)
    except ValueError as exc:
        raise ValueError(f"{where}{str(exc).removeprefix('action')}") from None
    for name in FIELDS_BY_TYPE[action.type]:
        if not str(getattr(action, name)).strip():
            raise ValueError(f"{where}.{name}: empty (a gold {action.type} needs a {name})")
    return action


def session_from_json(row: Any) -> Session:
    """Parse and validate one session row; ValueError lists every problem found."""
    if not isinstance(row, dict):
        raise ValueError(f"row: expected an object, got {type(row).__name__}")
    problems: list[str] = []
    for key in sorted(set(row) - SESSION_KEYS):
        problems.append(f"{key}: unknown key (allowed: {', '.join(sorted(SESSION_KEYS))})")
    sid = row.get("session_id")
    if not isinstance(sid, str) or not sid:
        problems.append("session_id: expected a non-empty string")
    meta = row.get("meta") or {}
    if isinstance(meta, str):  # parquet stores meta as a JSON string (see io.write_sessions)
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = None
    if not isinstance(meta, dict):
        problems.append("meta: expected an object")
    raw_steps = row.get("steps")
    steps: list[Step] = []
    if not isinstance(raw_steps, list) or not raw_steps:
        problems.append("steps: expected a non-empty list")
        raw_steps = []
    for i, raw in enumerate(raw_steps):
        try:
            steps.append(_step_from_json(raw, f"steps[{i}]"))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    return Session(session_id=str(sid), steps=steps, meta=dict(meta) if meta else {})


def _step_from_json(raw: Any, where: str) -> Step:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    problems: list[str] = []
    for key in sorted(set(raw) - STEP_KEYS):
        problems.append(f"{where}.{key}: unknown key")
    page, rationale, url = raw.get("page"), raw.get("rationale"), raw.get("url")
    if not isinstance(page, str) or not page.strip():
        problems.append(f"{where}.page: expected non-empty HTML text")
    if not isinstance(rationale, str) or not rationale.strip():
        problems.append(f"{where}.rationale: expected a non-empty string")
    if url is not None and not isinstance(url, str):
        problems.append(f"{where}.url: expected a string or null")
    action: Action | None = None
    try:
        action = validate_action(raw.get("action"), f"{where}.action")
    except ValueError as exc:
        problems.append(str(exc))
    if problems or action is None:
        raise ValueError("; ".join(problems))
    return Step(page=str(page), action=action, rationale=str(rationale), url=url)
