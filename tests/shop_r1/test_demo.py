"""The demo pipeline end to end at toy size: every stage runs, is scored and reported."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from shop_r1.demo import STAGES, PipelineConfig, collapse_check, run_pipeline

pytestmark = pytest.mark.slow


def test_pipeline_runs_every_stage_and_writes_the_table(tmp_path):
    cfg = PipelineConfig(
        output_dir=str(tmp_path),
        sessions=20,
        context="latest",
        max_prompt_tokens=120,
        eval_limit=6,
        vocab_size=400,
        hidden=32,
        layers=1,
        intermediate=64,
        sft_steps=4,
        sft_batch=4,
        grpo_steps=1,
        grpo_batch=4,
        grpo_generations=2,
        max_new_tokens=12,
        eval_batch=6,
    )
    lines: list[str] = []
    results = run_pipeline(cfg, log=lines.append)
    assert list(results["stages"]) == list(STAGES)
    n = results["stages"]["before SFT"]["n"]
    assert 0 < n <= 6
    for stage in results["stages"].values():
        assert stage["schema"] == "shop-r1.score/1" and stage["n"] == n
    assert results["sft_summary"]["steps"] == 4 and results["grpo_summary"]["steps"] == 1
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["timings"]["total_s"] > 0
    report = (tmp_path / "report.md").read_text()
    assert all(f"| {s} |" in report for s in STAGES)
    for slug in ("before", "sft", "grpo"):
        assert (tmp_path / f"eval-{slug}" / "predictions.jsonl").read_text().count("\n") == n
    assert any(line.startswith("[SFT + GRPO]") for line in lines)


@pytest.mark.parametrize(
    ("pred", "gold", "collapsed"),
    [
        (0.10, 0.08, False),
        (0.30, 0.10, True),
        (0.90, 0.50, True),
        (0.60, 0.50, False),
        (0.20, 0.05, True),
        (0.12, 0.03, False),
    ],
)
def test_collapse_flag(pred, gold, collapsed):
    metrics = {"prediction_mix": {"terminate": pred}, "gold_mix": {"terminate": gold}}
    assert collapse_check(metrics)["collapsed_onto_terminate"] is collapsed
