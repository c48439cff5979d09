"""`shop-r1 eval --model DIR` with a tiny random-init model saved to disk (no download)."""

from __future__ import annotations

import json

import pytest
from cli_errors import error_line
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from shop_r1.cli import app  # noqa: E402
from shop_r1.data.io import write_sessions  # noqa: E402
from shop_r1.data.prompts import sft_rows  # noqa: E402
from shop_r1.data.synth import generate_sessions  # noqa: E402
from shop_r1.generate import generate_local  # noqa: E402
from shop_r1.tiny import make_tiny_model_and_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    torch.set_num_threads(2)
    sessions = generate_sessions(6, seed=1)
    rows = sft_rows(sessions, context="latest", max_tokens=120)
    texts = [m["content"] for r in rows for m in r["prompt"] + r["completion"]]
    model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=600, hidden=32, intermediate=64)
    root = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    write_sessions(sessions, root / "sessions.jsonl")
    return model, tok, rows, root


def test_batched_left_padded_generation_matches_one_by_one(tiny):
    model, tok, _, _ = tiny
    # Prompts of different lengths in one batch: left padding must not change the output.
    prompts = [r["prompt"] for r in sft_rows(generate_sessions(2, seed=5), context="latest")][:5]
    assert len({len(p[1]["content"]) for p in prompts}) > 1
    one = generate_local(model, tok, prompts, max_new_tokens=6, batch_size=1)
    batched = generate_local(model, tok, prompts, max_new_tokens=6, batch_size=5)
    assert batched == one
    assert all(isinstance(t, str) and t for t in one)


def test_eval_cli_with_a_local_checkpoint(tiny, tmp_path):
    _, _, _, root = tiny
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            str(root / "model"),
            "--data",
            str(root / "sessions.jsonl"),
            "--output-dir",
            str(out),
            "--split",
            "all",
            "--context",
            "latest",
            "--limit",
            "7",
            "--max-new-tokens",
            "8",
            "--batch-size",
            "3",
            "--device",
            "cpu",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    # A random-init model writes no JSON: every output is an unparsed, wrong prediction.
    assert metrics["n"] == 7 and metrics["parse_failure_rate"] == 1.0
    assert metrics["exact_match"] == 0.0
    assert metrics["eval"]["model"].endswith("model") and metrics["eval"]["context"] == "latest"
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    from pathlib import Path

    from shop_r1.eval import load_rows

    rows = load_rows(Path(root / "sessions.jsonl"), split="all", context="latest", limit=7)
    assert [p["id"] for p in preds] == [r.id for r in rows]  # input order, joinable to gold
    assert len(preds) == 7 and all("completion" in p for p in preds)
    assert "n=7" in result.output and "parse_fail=100.00%" in result.output


def test_missing_model_is_one_line_error(tiny, tmp_path):

    _, _, _, root = tiny
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            str(tmp_path / "nope"),
            "--data",
            str(root / "sessions.jsonl"),
            "--output-dir",
            str(tmp_path / "o"),
            "--split",
            "all",
        ],
    )
    assert "--model" in error_line(result)
