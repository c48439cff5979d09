"""The snapshot contract (`../shared/design/snapshot.md`): load, validate, save.

A snapshot is plain JSON. Every field is optional: a missing field means "not known",
`null` means "looked, and it is absent". Checks read it through `facts.Facts`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shop_r1_doctor.errors import ToolError

SNAPSHOT_SCHEMA = "shop-r1.snapshot/1"
REPORT_SCHEMA = "shop-r1.report/1"
SNAPSHOT_MAJOR = 1


def schema_major(schema: str, kind: str) -> int | None:
    """`shop-r1.snapshot/1` -> 1; None when the string is not of that kind."""
    prefix = f"shop-r1.{kind}/"
    if not isinstance(schema, str) or not schema.startswith(prefix):
        return None
    head = schema[len(prefix) :].split(".", 1)[0]
    return int(head) if head.isdigit() else None


def validate_snapshot(data: Any, source: str = "<snapshot>") -> dict[str, Any]:
    """Accept a snapshot or a whole report (its `snapshot` field); reject anything else."""
    if isinstance(data, dict) and schema_major(data.get("schema", ""), "report") is not None:
        data = data.get("snapshot")
    if not isinstance(data, dict):
        raise ToolError(f"{source}: not a shop-r1 snapshot (expected a JSON object)")
    schema = data.get("schema")
    major = schema_major(schema, "snapshot") if schema is not None else None
    if schema is None:
        raise ToolError(f"{source}: missing field 'schema' (expected {SNAPSHOT_SCHEMA!r})")
    if major is None:
        raise ToolError(f"{source}: field 'schema' is {schema!r}, not a shop-r1 snapshot")
    if major != SNAPSHOT_MAJOR:
        raise ToolError(
            f"{source}: snapshot schema {schema!r} is not supported by this shop-r1 "
            f"(reads {SNAPSHOT_SCHEMA}); upgrade shop-r1"
        )
    for section in ("host", "driver", "cuda_toolkit", "packages", "imports", "env", "plan"):
        value = data.get(section)
        if value is not None and not isinstance(value, dict):
            raise ToolError(f"{source}: field '{section}' must be an object or null")
    if isinstance(data.get("plan"), dict):
        from shop_r1_doctor.runplan import decode_plan

        decode_plan(data["plan"], source, at="plan")  # every bad field, each named
    gpus = data.get("gpus")
    if gpus is not None and not (isinstance(gpus, list) and all(isinstance(g, dict) for g in gpus)):
        raise ToolError(f"{source}: field 'gpus' must be a list of objects")
    return data


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """Read a saved snapshot (or a `--json` report) with one-line errors."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolError(f"{p}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    snap = validate_snapshot(data, str(p))
    if not set(snap) - BOOKKEEPING:  # checking nothing would print "no issues found"
        raise ToolError(
            f"{p}: the snapshot holds no facts (no host, gpus, packages, ... fields); "
            "save a full one with `shop-r1 doctor --save FILE`"
        )
    return snap


# Top-level fields that record how a snapshot was made, not what the machine is.
BOOKKEEPING = frozenset({"schema", "created", "tool_version", "probes", "probes_seconds"})


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def save_snapshot(snapshot: dict[str, Any], path: str | Path) -> None:
    p = Path(path)
    from shop_r1_doctor.atomic import write_text

    try:
        write_text(p, dump_json(snapshot))
    except OSError as exc:
        raise ToolError(f"{p}: cannot write snapshot: {exc}") from None
