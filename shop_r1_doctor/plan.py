"""`--plan FILE`: what the user is about to run, so plan-dependent failures are caught.

The file is YAML or JSON (JSON is read by the same YAML parser), a mapping of the
RunPlan's fields (`shop_r1_doctor.runplan`), optionally under a top-level `plan:` key
and with a `schema: shop-r1.runplan/1` line. Unknown or mistyped fields fail with one
line naming the file, the line and the field: a typo must not silently disable a check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shop_r1_doctor.runplan import FIELDS, RunPlan, load_runplan

# The accepted field names (the RunPlan's fields); kept for readers of the old module.
PLAN_FIELDS = FIELDS


def validate_plan(data: Any, source: str, lines: dict[str, int] | None = None) -> dict[str, Any]:
    return RunPlan.from_dict(data, source, lines).to_dict()


def load_plan(path: str | Path) -> dict[str, Any]:
    """A plan file validated field by field, as the snapshot's `plan` section."""
    return load_runplan(path).to_dict()
