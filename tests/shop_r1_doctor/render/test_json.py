"""The `--json` report contract (shop-r1.report/1)."""

from __future__ import annotations

import json

from golden import GOLDEN

from shop_r1_doctor.diagnose import Diagnosis, diagnose
from shop_r1_doctor.render.json import render_json


def test_report_round_trips():
    original = json.loads((GOLDEN / "broken.report.json").read_text())
    assert json.loads(render_json(Diagnosis.from_json(original))) == original


def test_report_contract_fields():
    report = json.loads(
        render_json(Diagnosis.from_json(json.loads((GOLDEN / "broken.report.json").read_text())))
    )
    assert report["schema"] == "shop-r1.report/1"
    assert report["snapshot"]["schema"] == "shop-r1.snapshot/1"
    assert report["summary"] == {"errors": 3, "warnings": 1, "infos": 1}
    for f in report["findings"]:
        assert set(f) >= {"code", "severity", "title", "detail", "fix", "urls"}
    severities = [f["severity"] for f in report["findings"]]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)


def test_ascii_only_json_is_the_same_data():
    diagnosis = Diagnosis.from_json(json.loads((GOLDEN / "broken.report.json").read_text()))
    text = render_json(diagnosis, ascii_only=True)
    text.encode("ascii")
    assert json.loads(text) == json.loads(render_json(diagnosis))


def test_recorded_h100_report_golden(golden):
    snap = json.loads((GOLDEN / "h100-replayed.snapshot.json").read_text())
    golden(GOLDEN / "h100.report.json", render_json(diagnose(snap)))
