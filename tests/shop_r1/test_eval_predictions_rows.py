"""predictions.jsonl carries each step's gold and verdict, and the paired comparison of
two runs (benchmarks/paired_eval.py) reads them: hand-computed rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_paths import load_script

from shop_r1.actions import Action
from shop_r1.eval import EvalResult, EvalRow, score, write_outputs


def _answer(type_: str, name: str | None = None, text: str | None = None) -> str:
    action = {"type": type_, "name": name or "", "text": text or ""}
    return json.dumps({"rationale": "r", "action": action})


GOLD_SEARCH = Action("type_and_submit", "search_input", "red running shoes for women")
# (completion, type_ok, exact) against GOLD_SEARCH; threshold 0.75 on ROUGE-L F1.
ROWS = [
    (_answer("type_and_submit", "search_input", "red running shoes for women"), True, True),
    # 4 of 5 gold tokens, no extra: P 1, R 0.8, F1 0.889 >= 0.75 -> exact
    (_answer("type_and_submit", "search_input", "red running shoes women"), True, True),
    # 3 of 5: P 1, R 0.6, F1 0.75 -> exactly at the threshold: exact
    (_answer("type_and_submit", "search_input", "red running shoes"), True, True),
    # 2 of 5: F1 0.571 -> right type, not exact
    (_answer("type_and_submit", "search_input", "red shoes"), True, False),
    (_answer("click", "search_button"), False, False),
    ("I think the shopper will search.", False, False),  # no JSON at all
]


def _result() -> EvalResult:
    rows = [EvalRow(f"s#{i}", [], GOLD_SEARCH) for i in range(len(ROWS))]
    completions = [c for c, _, _ in ROWS]
    return EvalResult(rows, completions, [None] * len(rows), score(rows, completions))


def test_each_row_carries_gold_and_its_verdict(tmp_path: Path) -> None:
    write_outputs(_result(), tmp_path)
    lines = (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(x) for x in lines]
    assert [(r["type_ok"], r["exact"]) for r in records] == [(t, e) for _, t, e in ROWS]
    assert records[0]["gold"] == {
        "type": "type_and_submit",
        "name": "search_input",
        "text": "red running shoes for women",
    }
    # the per-row verdicts add up to the run's metrics: one definition of "exact"
    metrics = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["exact_match"] == sum(r["exact"] for r in records) / len(records)


def _paired():
    return load_script("benchmarks/paired_eval.py")


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [
        (0, 0, 1.0),
        (0, 6, 2 / 64),  # 2 * P(X <= 0), X ~ Bin(6, 1/2)
        (1, 5, 2 * 7 / 64),  # 2 * (1 + 6) / 64
        (3, 3, 1.0),  # capped at 1
        (2, 10, 2 * (1 + 12 + 66) / 4096),
    ],
)
def test_mcnemar_exact(only_a: int, only_b: int, p: float) -> None:
    assert _paired().mcnemar_exact(only_a, only_b) == pytest.approx(p)


def test_paired_comparison_counts_discordant_steps(tmp_path: Path) -> None:
    def write(name: str, exact: list[bool]) -> Path:
        d = tmp_path / name
        d.mkdir()
        rows = [
            {"id": f"s#{i}", "completion": "", "exact": e, "type_ok": e}
            for i, e in enumerate(exact)
        ]
        (d / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return d

    paired = _paired()
    a = paired.load(write("a", [True, True, False, False, False, True]))
    b = paired.load(write("b", [True, False, True, True, True, True]))
    r = paired.compare(a, b, "exact")
    assert (r["only_a"], r["only_b"]) == (1, 3)
    assert r["a"] == pytest.approx(3 / 6) and r["b"] == pytest.approx(5 / 6)
    assert r["diff"] == pytest.approx(2 / 6)
    low, high = r["ci95"]
    assert low <= 2 / 6 <= high and -1 <= low and high <= 1
    assert r["mcnemar_p"] == pytest.approx(2 * (1 + 4) / 16)


def test_pooled_comparison_averages_each_steps_difference_over_pairs(tmp_path: Path) -> None:
    def rows(exact: list[bool]) -> dict[str, dict]:
        return {f"s#{i}": {"exact": e, "type_ok": True} for i, e in enumerate(exact)}

    paired = _paired()
    # pair 1: +1 on step 0, -1 on step 3; pair 2: +1 on steps 0 and 1
    p1 = (rows([False, True, False, True]), rows([True, True, False, False]))
    p2 = (rows([False, False, True, True]), rows([True, True, True, True]))
    r = paired.pooled([p1, p2], "exact")
    # per step: (1 + 1) / 2, (0 + 1) / 2, 0, (-1 + 0) / 2 -> mean 0.25
    assert r["diff"] == pytest.approx(0.25) and r["pairs"] == 2
    assert r["a"] == pytest.approx(4 / 8) and r["b"] == pytest.approx(6 / 8)
    low, high = r["ci95"]
    assert -0.5 <= low <= 0.25 <= high <= 1.0
    assert paired.pooled([p1, p2], "type_ok")["ci95"] == [0.0, 0.0]


def test_old_predictions_without_verdicts_are_refused_in_one_line(tmp_path: Path) -> None:
    f = tmp_path / "predictions.jsonl"
    f.write_text('{"id": "s#0", "completion": "x"}\n')
    with pytest.raises(SystemExit, match=r"predictions.jsonl:1: exact: missing"):
        _paired().load(f)
