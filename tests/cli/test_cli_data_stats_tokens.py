"""`data stats --tokenizer` counts real tokens: compared with the tokenizer itself.

Under transformers 5 `apply_chat_template(tokenize=True)` returns a BatchEncoding (a
Mapping, not a dict), whose len() is its number of keys: every prompt counted as 2.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from shop_r1.cli import app
from shop_r1.commands.data import token_count
from shop_r1.data.io import write_sessions
from shop_r1.data.prompts import build_messages
from shop_r1.data.synth import generate_sessions
from shop_r1.tiny import train_tokenizer


def test_stats_counts_what_the_tokenizer_counts(tmp_path):
    sessions = generate_sessions(3, seed=2)
    texts = [
        m["content"] for s in sessions for i in range(len(s.steps)) for m in build_messages(s, i)
    ]
    tok = train_tokenizer(texts, vocab_size=400)
    tok_dir = tmp_path / "tok"
    tok.save_pretrained(tok_dir)
    data = tmp_path / "s.jsonl"
    write_sessions(sessions, data)

    # the reference: render the chat template as text, then tokenize that text
    expected = []
    for s in sessions:
        for i in range(len(s.steps)):
            text = tok.apply_chat_template(
                build_messages(s, i, context="full"), tokenize=False, add_generation_prompt=True
            )
            expected.append(len(tok(text, add_special_tokens=False)["input_ids"]))
    result = CliRunner().invoke(
        app, ["data", "stats", str(data), "--tokenizer", str(tok_dir), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema"] == "shop-r1.data-stats/1"
    ctx = report["context_tokens"]
    assert ctx["counted"] == len(expected)
    assert ctx["max"] == max(expected) and ctx["max"] > 50  # not 2 per prompt


def test_token_count_shapes():
    from transformers import BatchEncoding

    assert token_count([1, 2, 3]) == 3
    assert token_count(BatchEncoding({"input_ids": [1, 2, 3, 4], "attention_mask": [1] * 4})) == 4
    assert token_count({"input_ids": [[5, 6, 7]]}) == 3
