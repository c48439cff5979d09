"""Read and write session files: JSONL (one JSON object per line) or parquet (`.parquet`).

Every problem is reported with `<file>:<line>` (JSONL line number, or parquet row
number from 1) so a bad row can be found and fixed; pyarrow is imported only for
parquet files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from shop_r1.data.schema import Session, session_from_json
from shop_r1_doctor.errors import ToolError


def is_parquet(path: str | Path) -> bool:
    return str(path).endswith(".parquet")


def iter_rows(path: str | Path) -> Iterator[tuple[int, Any, str | None]]:
    """Yield (line, row, error) for every row; a row that is not JSON has error set."""
    path = Path(path)
    if not path.is_file():
        raise ToolError(f"{path}: no such file; pass a JSONL or .parquet file")
    if is_parquet(path):
        yield from _iter_parquet(path)
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line), None
            except ValueError as exc:
                yield line_no, None, f"not valid JSON ({exc})"


def _iter_parquet(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ToolError(f"{path}: reading parquet needs pyarrow; pip install pyarrow") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise ToolError(f"{path}: cannot read parquet ({exc}); is it a parquet file?") from None
    for row_no, row in enumerate(table.to_pylist(), 1):
        yield row_no, row, None


def check_sessions(path: str | Path) -> tuple[list[Session], list[str]]:
    """Every session of a file and the list of problems, each `file:line: what`."""
    sessions: list[Session] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for line, row, error in iter_rows(path):
        if error:
            problems.append(f"{path}:{line}: {error}")
            continue
        try:
            session = session_from_json(row)
        except ValueError as exc:
            problems.append(f"{path}:{line}: {exc}")
            continue
        if session.session_id in seen:
            problems.append(
                f"{path}:{line}: session_id: {session.session_id!r} already used on line "
                f"{seen[session.session_id]}"
            )
            continue
        seen[session.session_id] = line
        sessions.append(session)
    return sessions, problems


def load_sessions(path: str | Path) -> list[Session]:
    """All sessions of a JSONL/parquet file; ToolError on the first bad row."""
    sessions, problems = check_sessions(path)
    if problems:
        more = f" (and {len(problems) - 1} more; run `shop-r1 data validate {path}`)"
        raise ToolError(problems[0] + (more if len(problems) > 1 else ""))
    return sessions


def write_sessions(sessions: Iterable[Session], path: str | Path) -> int:
    """Write sessions in the canonical row format; returns the number written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [s.to_json() for s in sessions]
    if is_parquet(path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        for row in rows:
            row.setdefault("meta", {})
            # Parquet needs one struct type: an empty meta becomes a JSON string column.
            row["meta"] = json.dumps(row["meta"], ensure_ascii=False)
        pq.write_table(pa.Table.from_pylist(rows), path)
        return len(rows)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)
