"""`--plan FILE`: what the user is about to run, so plan-dependent failures are caught.

The file is YAML or JSON (JSON is read by the same YAML parser), a mapping of the
RunPlan's fields (`shop_r1_doctor.runplan`), optionally under a top-level `plan:` key
and with a `schema: shop-r1.runplan/1` line. Every unknown or mistyped field is reported
at once, each naming the file, the line and the field: a typo must not silently disable
a check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shop_r1_doctor.runplan import decode_plan
from shop_r1_doctor.schema import Reader


def load_plan(path: str | Path) -> dict[str, Any]:
    """A plan file, validated, as the snapshot's `plan` section."""
    reader, data = Reader.read(path, "plan (YAML or JSON)")
    return decode_plan(data, str(path), reader.lines).to_dict()
