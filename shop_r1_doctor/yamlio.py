"""YAML reading in one place: the C (libyaml) safe loader when present, and errors as
one line naming the file and line. Field access and field errors: `schema.Reader`.

The knowledge, profiles and log signatures are parsed on every doctor run; libyaml
parses them several times faster than the pure-Python loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from shop_r1_doctor.errors import ToolError

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=SafeLoader)


def read_yaml(path: str | Path, what: str = "file") -> tuple[str, Any]:
    """(text, data) of a YAML file; a missing, unreadable or malformed file raises
    `ToolError("<file>[:<line>]: ...")`. `what` names the file's role in the message."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ToolError(f"{p}: cannot read {what}: {reason}") from None
    try:
        return text, safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ToolError(f"{p}{line}: not valid YAML ({problem}); fix the {what}") from None
