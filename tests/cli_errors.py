"""What every failing `shop-r1` command must look like: one error line, no traceback."""

from __future__ import annotations

from typing import Any


def error_line(result: Any, code: int | None = 2) -> str:
    """The single `...: error: ...` line of a CliRunner result (asserting its shape)."""
    out, err = result.stdout, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in out + err, err[-2000:]
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 1, f"expected one error line, got:\n{err[-2000:]}"
    if code is not None:
        assert result.exit_code == code, (result.exit_code, lines[0])
    return lines[0]
