"""`--json`: the `shop-r1.report/1` contract, stable and versioned."""

from __future__ import annotations

import json

from shop_r1_doctor.diagnose import Diagnosis


def render_json(diagnosis: Diagnosis, *, ascii_only: bool = False) -> str:
    """`ascii_only` escapes non-ASCII (\\uXXXX) for consoles that cannot encode it."""
    return json.dumps(diagnosis.to_json(), indent=2, ensure_ascii=ascii_only) + "\n"
