"""Read and write session files: JSONL (one JSON object per line) or parquet (`.parquet`).

Every problem is reported with `<file>:<line>` (JSONL line number, or parquet row
number from 1) so a bad row can be found and fixed; pyarrow is imported only for
parquet files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from shop_r1.data.schema import Session, session_from_json
from shop_r1_doctor.errors import ToolError


def is_parquet(path: str | Path) -> bool:
    return str(path).endswith(".parquet")


def iter_rows(
    path: str | Path, on_bytes: Callable[[int], None] | None = None
) -> Iterator[tuple[int, Any, str | None]]:
    """Yield (line, row, error) for every row; a row that is not UTF-8 JSON has error set.
    `on_bytes` gets the size of each line read (progress over the file's bytes)."""
    path = Path(path)
    if path.is_dir():
        raise ToolError(f"{path}: is a directory; pass a JSONL or .parquet file")
    if not path.is_file():
        raise ToolError(f"{path}: no such file; pass a JSONL or .parquet file")
    if is_parquet(path):
        yield from _iter_parquet(path)
        return
    try:
        yield from _iter_jsonl(path, on_bytes)
    except OSError as exc:  # EIO, a file that vanished: name it
        raise ToolError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _iter_jsonl(
    path: Path, on_bytes: Callable[[int], None] | None
) -> Iterator[tuple[int, Any, str | None]]:
    with path.open("rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            if on_bytes:
                on_bytes(len(raw))
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield line_no, None, f"not UTF-8 text (byte {exc.start + 1} of the line)"
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


def scan_sessions(
    path: str | Path, problems: list[str], on_bytes: Callable[[int], None] | None = None
) -> Iterator[Session]:
    """Stream the valid sessions of a file; each problem (`file:line: what`) is appended
    to `problems`. Memory: one row plus the set of session ids seen. A file without any
    row is a problem too: nothing to train or evaluate on."""
    seen: dict[str, int] = {}
    rows = 0
    for line, row, error in iter_rows(path, on_bytes):
        rows += 1
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
        yield session
    if not rows:
        problems.append(
            f"{path}: no sessions (the file is empty); make one with `shop-r1 data synth`"
        )


def check_sessions(
    path: str | Path, on_bytes: Callable[[int], None] | None = None
) -> tuple[list[Session], list[str]]:
    """Every session of a file and the list of problems, each `file:line: what`."""
    problems: list[str] = []
    sessions = list(scan_sessions(path, problems, on_bytes))
    return sessions, problems


def load_sessions(path: str | Path, progress: bool = False) -> list[Session]:
    """All sessions of a JSONL/parquet file; ToolError on the first bad row or an empty
    file. `progress`: show a progress bar over the file's bytes on a terminal."""
    if progress:
        from shop_r1_doctor.cli.output import progress as bar

        size = Path(path).stat().st_size if Path(path).is_file() else None
        with bar(f"reading {Path(path).name}", total=size, unit="bytes") as advance:
            sessions, problems = check_sessions(path, advance)
    else:
        sessions, problems = check_sessions(path)
    if problems:
        more = f" (and {len(problems) - 1} more; run `shop-r1 data validate {path}`)"
        raise ToolError(problems[0] + (more if len(problems) > 1 else ""))
    return sessions


PARQUET_BATCH = 5000  # rows per Arrow batch: bounded memory while writing parquet


def write_sessions(
    sessions: Iterable[Session],
    path: str | Path,
    on_row: Callable[[Session], None] | None = None,
) -> int:
    """Write sessions in the canonical row format, streaming (JSONL: one row in memory;
    parquet: one batch of rows plus the Arrow columns). The file appears only when
    complete (temporary file + rename), so a failure or Ctrl-C leaves nothing behind.
    `on_row` is called after each session (progress). Returns the number written."""
    from shop_r1_doctor.api import atomic_open, atomic_path

    path = Path(path)
    n = 0
    if is_parquet(path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = []
        batch: list[dict[str, Any]] = []
        for s in sessions:
            row = s.to_json()
            # Parquet needs one struct type: an empty meta becomes a JSON string column.
            row["meta"] = json.dumps(row.get("meta") or {}, ensure_ascii=False)
            batch.append(row)
            n += 1
            if on_row:
                on_row(s)
            if len(batch) >= PARQUET_BATCH:
                tables.append(pa.Table.from_pylist(batch))
                batch = []
        if batch or not tables:
            tables.append(pa.Table.from_pylist(batch))
        table = pa.concat_tables(tables, promote_options="default")
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
        return n
    with atomic_open(path) as fh:
        for s in sessions:
            fh.write(json.dumps(s.to_json(), ensure_ascii=False) + "\n")
            n += 1
            if on_row:
                on_row(s)
    return n
