"""`shop-r1 score` through the real CLI: report shape, rewards rows and input errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.data.io import write_sessions
from shop_r1.data.synth import generate_sessions
from shop_r1.rewards import reward_components
from shop_r1.score import score_files
from shop_r1_doctor.errors import ToolError

runner = CliRunner()
GOLD = [
    {"id": "1", "action": {"type": "click", "name": "buy"}, "page": "ignored"},
    {"id": "2", "action": {"type": "type_and_submit", "name": "q", "text": "trail running shoes"}},
    {"id": "3", "gold_action": json.dumps({"type": "terminate"})},
]
PRED = [
    {
        "id": "1",
        "completion": '{"rationale": "I want it.", "action": {"type": "click", "name": "buy"}}',
    },
    {
        "id": "2",
        "completion": '{"rationale": "Search.", "action": {"type": "type_and_submit", "name": "q", "text": "running shoes"}}',
    },
    {"id": "3", "completion": "I would leave."},
]


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_score_json_report_and_rewards(tmp_path):
    gold, pred = _write(tmp_path / "g.jsonl", GOLD), _write(tmp_path / "p.jsonl", PRED)
    result = runner.invoke(
        app, ["score", "--gold", str(gold), "--pred", str(pred), "--json", "--rewards"]
    )
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    assert r["schema"] == "shop-r1.score/1" and r["n"] == 3 and r["missing"] == 0
    assert r["exact_match"] == pytest.approx(2 / 3) and r["parse_failure_rate"] == pytest.approx(
        1 / 3
    )
    assert (
        r["per_type"]["terminate"]["recall"] == 0.0 and r["confusion"]["terminate"]["unparsed"] == 1
    )
    rows = {row["id"]: row for row in r["rows"]}
    assert rows["1"]["total"] == pytest.approx(1001.0)
    assert rows["2"] == {
        "id": "2",
        "format": 0.5,
        "type": 0.3,
        "attribute": pytest.approx(0.2),
        "value": pytest.approx(800.1),
        "total": pytest.approx(801.1),
    }
    assert rows["3"]["total"] == 0.0
    # exactly what training computes
    assert (
        rows["2"]["value"] == reward_components(PRED[1]["completion"], GOLD[1]["action"])["value"]
    )
    for key in ("exact_match", "type_accuracy", "type_macro_f1", "parse_failure_rate"):
        assert 0.0 <= r[key] <= 1.0


def test_score_terminal_and_markdown(tmp_path):
    gold, pred = _write(tmp_path / "g.jsonl", GOLD), _write(tmp_path / "p.jsonl", PRED)
    out = runner.invoke(app, ["score", "--gold", str(gold), "--pred", str(pred)]).output
    assert "exact action acc" in out and "66.67%" in out and "unparsed" in out
    md = runner.invoke(
        app, ["score", "--gold", str(gold), "--pred", str(pred), "--markdown"]
    ).output
    assert "| 3 | 66.67% | 66.67% |" in md


def test_score_session_files_as_gold(tmp_path):
    sessions = generate_sessions(3, seed=0)
    gold = tmp_path / "sessions.parquet"
    write_sessions(sessions, gold)
    step = sessions[1].steps[0]
    completion = json.dumps({"rationale": "r", "action": step.action.to_json()})
    pred = _write(
        tmp_path / "p.jsonl", [{"id": f"{sessions[1].session_id}#0", "completion": completion}]
    )
    r = score_files(gold, pred)
    assert r["n"] == 1 and r["exact_match"] == 1.0
    assert r["missing"] == sum(len(s.steps) for s in sessions) - 1
    with pytest.raises(ToolError, match="have no prediction"):
        score_files(gold, pred, require_all=True)


def test_score_accepts_gold_in_the_paper_format(tmp_path):
    """Gold rows written in the paper's output format ("" where the type has no field),
    as `action` objects and as `gold_action` strings, score like the compact ones."""
    paper = [
        {"id": "1", "action": {"type": "click", "name": "buy", "text": ""}},
        {
            "id": "2",
            "action": {"type": "type_and_submit", "name": "q", "text": "trail running shoes"},
        },
        {"id": "3", "gold_action": json.dumps({"type": "terminate", "name": "", "text": None})},
    ]
    preds = [
        *PRED[:2],
        {
            "id": "3",
            "completion": '{"rationale": "r", "action": {"type": "terminate", "name": "", "text": ""}}',
        },
    ]
    gold, pred = _write(tmp_path / "g.jsonl", paper), _write(tmp_path / "p.jsonl", preds)
    r = score_files(gold, pred)
    assert r["n"] == 3 and r["exact_match"] == 1.0 and r["parse_failure_rate"] == 0.0


@pytest.mark.parametrize(
    ("gold_rows", "pred_rows", "message"),
    [
        (GOLD, [PRED[0], {"id": "9", "completion": "x"}], r"p\.jsonl:2: id: '9' has no gold row"),
        (GOLD, [PRED[0], PRED[1], PRED[0]], r"p\.jsonl:3: id: duplicate '1' \(first on line 1\)"),
        (GOLD, [PRED[0], "{oops"], r"p\.jsonl:2: not valid JSON"),
        (GOLD, [{"id": "1", "text": "x"}], r"p\.jsonl:1: expected"),
        ([GOLD[0], GOLD[0]], PRED[:1], r"g\.jsonl:2: id: duplicate '1'"),
        (
            [{"id": "1", "action": {"type": "click"}}],
            PRED[:1],
            r"g\.jsonl:1: action\.name: missing",
        ),
        ([{"id": "1"}], PRED[:1], r"g\.jsonl:1: expected `id` with `action`"),
        (
            [{"id": "1", "action": {"type": "click", "name": "", "text": ""}}],
            PRED[:1],
            r"g\.jsonl:1: action\.name: empty",
        ),
        (
            [{"id": "1", "action": {"type": "click", "name": "buy", "text": "x"}}],
            PRED[:1],
            r"g\.jsonl:1: action\.text: a click action has no text",
        ),
    ],
)
def test_score_input_errors_name_file_and_line(tmp_path, gold_rows, pred_rows, message):
    gold, pred = _write(tmp_path / "g.jsonl", gold_rows), _write(tmp_path / "p.jsonl", pred_rows)
    with pytest.raises(ToolError, match=message):
        score_files(gold, pred)


def test_score_error_is_one_line_exit_2_through_the_entry_point(tmp_path):
    gold = _write(tmp_path / "g.jsonl", GOLD)
    pred = _write(tmp_path / "p.jsonl", [PRED[0], PRED[0]])
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "score",
            "--gold",
            str(gold),
            "--pred",
            str(pred),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "duplicate '1'" in proc.stderr
