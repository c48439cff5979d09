"""`--json`: the `shop-r1.report/1` contract, stable and versioned."""

from __future__ import annotations

import json

from shop_r1_doctor.diagnose import Diagnosis
from shop_r1_doctor.render.findings import finding_json


def render_json(diagnosis: Diagnosis, *, ascii_only: bool = False) -> str:
    """`ascii_only` escapes non-ASCII (\\uXXXX) for consoles that cannot encode it.
    Findings go out as every `--json` document carries them (render/findings.py)."""
    doc = {**diagnosis.to_json(), "findings": [finding_json(f) for f in diagnosis.findings]}
    return json.dumps(doc, indent=2, ensure_ascii=ascii_only) + "\n"
