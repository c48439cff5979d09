"""Convert OPeRA (Hugging Face `NEU-HAI/OPeRA`, CC-BY-4.0) action-level rows to sessions.

OPeRA's `*_action` configs hold one row per action with (among others) `session_id`,
`action_id`, `timestamp`, `action_type`, `click_type`, `semantic_id` (the `name=` of the
element acted on), `url`, `simplified_html`, `rationale` and `input_text`. Mapping:

| OPeRA action_type        | project action                                         |
|--------------------------|--------------------------------------------------------|
| `click`                  | click(name=semantic_id)                                |
| `input` / `type`         | type_and_submit(name=semantic_id, text=input_text)     |
| `terminate`              | terminate                                              |

Rows are grouped by `session_id` and ordered by `timestamp` (ISO 8601, so text order is
time order), then `action_id`. OPeRA has a rationale for only some actions; a missing
one is filled with a plain template ("I'll click ...") and counted in the session's
`meta.rationale_filled`, so a user can filter those sessions out. Rows that cannot be
mapped (unknown type, no element name, no text for an input, no page) are skipped and
counted by reason in the returned report.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shop_r1.actions import Action
from shop_r1.data.schema import Session, Step
from shop_r1_doctor.errors import ToolError

HUB_ID = "NEU-HAI/OPeRA"
TYPE_MAP = {
    "click": "click",
    "input": "type_and_submit",
    "type": "type_and_submit",
    "type_and_submit": "type_and_submit",
    "terminate": "terminate",
}


def _readable(name: str) -> str:
    return name.rsplit(".", 1)[-1].replace("_", " ").replace("-", " ").strip() or name


def _fill_rationale(action: Action) -> str:
    if action.type == "click":
        return f"I'll click the {_readable(action.name or '')}."
    if action.type == "type_and_submit":
        return f"I'll search for {action.text}."
    return "I'm done here, so I'll close the page."


def _step(row: dict[str, Any]) -> tuple[Step | None, str | None, bool]:
    """(step, reason skipped, rationale filled)."""
    kind = TYPE_MAP.get(str(row.get("action_type") or "").strip().lower())
    if kind is None:
        return None, f"unknown action_type {row.get('action_type')!r}", False
    page = row.get("simplified_html") or ""
    if not isinstance(page, str) or not page.strip():
        return None, "no simplified_html", False
    name = str(row.get("semantic_id") or "").strip()
    text = str(row.get("input_text") or "").strip()
    if kind != "terminate" and not name:
        return None, f"{kind} without semantic_id", False
    if kind == "type_and_submit" and not text:
        return None, "input without input_text", False
    action = {
        "click": Action("click", name),
        "terminate": Action("terminate"),
        "type_and_submit": Action("type_and_submit", name, text),
    }[kind]
    rationale = str(row.get("rationale") or "").strip()
    filled = not rationale
    url = row.get("url") if isinstance(row.get("url"), str) else None
    return (
        Step(page=page, action=action, rationale=rationale or _fill_rationale(action), url=url),
        None,
        filled,
    )


def convert_rows(rows: Iterable[dict[str, Any]]) -> tuple[list[Session], dict[str, Any]]:
    """Sessions from OPeRA action rows, and a report {rows, sessions, steps, skipped, rationale_filled}."""
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    n_rows = 0
    for row in rows:
        n_rows += 1
        by_session[str(row.get("session_id") or "")].append(row)
    skipped: Counter[str] = Counter()
    sessions: list[Session] = []
    filled_total = 0
    for sid, group in by_session.items():
        if not sid:
            skipped["no session_id"] += len(group)
            continue
        group.sort(key=lambda r: (str(r.get("timestamp") or ""), str(r.get("action_id") or "")))
        steps, filled = [], 0
        for row in group:
            step, reason, was_filled = _step(row)
            if step is None:
                skipped[reason or "?"] += 1
                continue
            steps.append(step)
            filled += was_filled
        if steps:
            sessions.append(Session(sid, steps, {"source": HUB_ID, "rationale_filled": filled}))
            filled_total += filled
    report = {
        "rows": n_rows,
        "sessions": len(sessions),
        "steps": sum(len(s.steps) for s in sessions),
        "skipped": dict(skipped),
        "rationale_filled": filled_total,
    }
    return sessions, report


def read_opera_rows(
    source: str, *, config: str = "filtered_action", split: str = "train"
) -> Iterable[dict[str, Any]]:
    """Rows from local files (a .parquet/.jsonl file or a folder of them) or from the Hub."""
    path = Path(source)
    if path.exists():
        files = (
            sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".jsonl"))
            if path.is_dir()
            else [path]
        )
        if not files:
            raise ToolError(f"{path}: no .parquet or .jsonl files inside")
        return (row for f in files for row in _read_file(f))
    if "/" not in source or looks_local(source):
        raise ToolError(f"{source}: no such file or folder, and not a Hub dataset id like {HUB_ID}")
    try:
        import datasets
    except ImportError:
        raise ToolError(
            "loading from the Hub needs `datasets`: pip install 'shop-r1[train]'"
        ) from None
    try:
        return datasets.load_dataset(source, config, split=split)
    except Exception as exc:  # network, auth, unknown config: all surface as one line
        raise ToolError(f"{source} ({config}/{split}): cannot load from the Hub: {exc}") from None


def looks_local(ref: str) -> bool:
    """A reference written as a path (./x, ../x, /x, ~/x, x.jsonl), not a Hub id."""
    return ref.startswith(("./", "../", "/", "~")) or ref.endswith((".jsonl", ".parquet", ".json"))


def _read_file(path: Path) -> Iterable[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a corrupt file
            raise ToolError(f"{path}: cannot read parquet ({exc}); is it a parquet file?") from None
        yield from table.to_pylist()
        return
    with path.open("rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise ToolError(f"{path}:{line_no}: not UTF-8 text; is it a JSONL file?") from None
            except ValueError as exc:
                raise ToolError(f"{path}:{line_no}: not valid JSON ({exc})") from None
            if not isinstance(row, dict):
                raise ToolError(
                    f"{path}:{line_no}: expected a JSON object (an OPeRA action row), "
                    f"got {type(row).__name__}"
                )
            yield row
