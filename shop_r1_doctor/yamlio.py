"""YAML loading in one place: the C (libyaml) safe loader when present.

The knowledge, profiles and log signatures are parsed on every doctor run; libyaml
parses them several times faster than the pure-Python loader.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=SafeLoader)
