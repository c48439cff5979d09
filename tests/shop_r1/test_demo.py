"""The demo pipeline end to end at toy size: every stage runs, is scored and reported."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from shop_r1.demo import STAGES, PipelineConfig, collapse_check, run_pipeline

pytestmark = pytest.mark.slow

# every stage at toy size: seconds on a CPU
TOY = dict(
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


def test_pipeline_runs_every_stage_and_writes_the_table(tmp_path):
    cfg = PipelineConfig(output_dir=str(tmp_path), **TOY)
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


def test_skipping_the_untrained_score_keeps_the_later_stages(tmp_path):
    cfg = PipelineConfig(output_dir=str(tmp_path), eval_before=False, **TOY)
    results = run_pipeline(cfg, log=lambda _: None)
    assert list(results["stages"]) == list(STAGES[1:])
    assert "eval_before_s" not in results["timings"]
    assert not (tmp_path / "eval-before").exists()
    assert (tmp_path / "eval-sft" / "predictions.jsonl").exists()


def test_sft_only_scores_sft_and_keeps_its_checkpoint_for_later_grpo_runs(tmp_path):
    # grpo_steps 0: one device call trains and scores SFT; GRPO runs start from it later
    cfg = PipelineConfig(output_dir=str(tmp_path), eval_before=False, **{**TOY, "grpo_steps": 0})
    results = run_pipeline(cfg, log=lambda _: None)
    assert list(results["stages"]) == [STAGES[1]]
    assert "grpo_summary" not in results and "collapse" not in results
    assert (tmp_path / "sft" / "config.json").exists()
    assert not (tmp_path / "grpo").exists() and not (tmp_path / "eval-grpo").exists()


def test_sft_and_grpo_stages_are_scored_through_one_loader(tmp_path, monkeypatch):
    """The SFT stage is scored on the reload GRPO then trains, not on SFT's in-memory
    model: on the H100 the two paths differed on 13 of 240 completions with the same
    weights, all exact-match flips one way, and that read as GRPO losing 2.5 points."""
    import shop_r1.eval
    import shop_r1.train_grpo
    import shop_r1.train_sft

    scored: dict[str, int] = {}
    trained: dict[str, int] = {}
    real_eval = shop_r1.eval.evaluate_model

    def spy_eval(model, *args, **kwargs):
        scored[f"stage{len(scored)}"] = id(model)
        return real_eval(model, *args, **kwargs)

    for mod, name in ((shop_r1.train_sft, "sft"), (shop_r1.train_grpo, "grpo")):
        real_train = mod.train

        def spy_train(*args, _real=real_train, _name=name, **kwargs):
            trained[_name] = id(kwargs["model"])
            return _real(*args, **kwargs)

        monkeypatch.setattr(mod, "train", spy_train)
    monkeypatch.setattr(shop_r1.eval, "evaluate_model", spy_eval)
    import shop_r1.demo

    real_unwrap = shop_r1.demo.without_autocast
    unwrapped: list[tuple[int, int]] = []  # (model, stages scored so far)

    def spy_unwrap(model):
        unwrapped.append((id(model), len(scored)))
        return real_unwrap(model)

    monkeypatch.setattr(shop_r1.demo, "without_autocast", spy_unwrap)
    cfg = PipelineConfig(output_dir=str(tmp_path), **TOY)
    run_pipeline(cfg, log=lambda _: None)
    before, sft, grpo = scored["stage0"], scored["stage1"], scored["stage2"]
    # the GRPO-trained model loses accelerate's autocast wrapper before it is scored
    assert unwrapped == [(trained["grpo"], 2)]
    assert before == trained["sft"]  # the model SFT trains, scored before it
    assert sft == grpo == trained["grpo"]  # both later stages: the reload GRPO trains
    assert sft != trained["sft"]


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


def _stage(pred: dict, gold: dict) -> dict:
    return {"prediction_mix": pred, "gold_mix": gold}


# the H100 run (SmolLM2-135M, GRPO lr 1e-5): held-out gold 81% click, SFT predicted
# type_and_submit on 18% of the steps, GRPO on none
GOLD = {"click": 0.8125, "type_and_submit": 0.1208, "terminate": 0.0667}
SFT = {"click": 0.8208, "type_and_submit": 0.1792, "terminate": 0.0}


@pytest.mark.parametrize(
    ("pred", "onto", "lost"),
    [
        ({"click": 1.0, "type_and_submit": 0.0, "terminate": 0.0}, "click", ["type_and_submit"]),
        (SFT, None, []),
        # 95% of the parsed predictions, gold leaves more than 10% to others: collapsed
        ({"click": 0.76, "type_and_submit": 0.04, "terminate": 0.0}, "click", []),
        ({"click": 0.75, "type_and_submit": 0.05, "terminate": 0.0}, None, []),
        # nothing parsed: every type SFT predicted is lost
        (
            {"click": 0.0, "type_and_submit": 0.0, "terminate": 0.0},
            None,
            ["click", "type_and_submit"],
        ),
    ],
)
def test_collapse_onto_any_type_and_types_lost(pred, onto, lost):
    result = collapse_check(_stage(pred, GOLD), _stage(SFT, GOLD))
    assert result["collapsed_onto"] == onto
    assert result["types_lost"] == lost


def test_the_graded_model_leaves_training_without_its_autocast_wrapper():
    """accelerate's bf16 `prepare` rewrites the model's own forward; scoring must not run
    through it when the stage before was scored without it."""
    import torch
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from shop_r1.demo import without_autocast

    # accelerate keeps one process-wide state; its own tests reset it the same way
    AcceleratorState._reset_state(reset_partial_state=True)
    model = torch.nn.Linear(4, 4)
    try:
        prepared = Accelerator(mixed_precision="bf16", cpu=True).prepare(model)
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)
    x = torch.randn(2, 4)
    assert prepared(x).dtype == torch.float32  # the wrapper casts outputs back...
    with torch.no_grad():  # ...but the matmul ran in bf16: not the loaded model's numbers
        assert not torch.equal(prepared(x), torch.nn.functional.linear(x, model.weight, model.bias))
    plain = without_autocast(prepared)
    with torch.no_grad():
        assert torch.equal(plain(x), torch.nn.functional.linear(x, model.weight, model.bias))
