"""`shop-r1 train grpo` through the real entry point: a tiny local model trains to exit 0,
and a dataset smaller than one generation batch stops the run (exit 1) before any model
loads, unless the code is ignored."""

import json
from pathlib import Path

import pytest
from cli_errors import error_line
from golden import GOLDEN, finding_blocks
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from machines import snapshot_path  # noqa: E402

from shop_r1.cli import app  # noqa: E402
from shop_r1.config import GRPORunConfig  # noqa: E402
from shop_r1.data.io import write_sessions  # noqa: E402
from shop_r1.data.prompts import sft_rows  # noqa: E402
from shop_r1.data.synth import generate_sessions  # noqa: E402
from shop_r1.preflight import prepare  # noqa: E402
from shop_r1.tiny import make_tiny_model_and_tokenizer  # noqa: E402
from shop_r1_doctor.memory import KNOWN_SHAPES  # noqa: E402

CPU_SNAPSHOT = snapshot_path("cpu")
CODE = "TRAINER_ZERO_STEPS_TINY_DATASET"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A random-init Qwen2-shaped model + BPE tokenizer saved like a Hub checkpoint."""
    torch.set_num_threads(2)
    rows = sft_rows(generate_sessions(6, seed=0), context="latest", max_tokens=120)
    texts = [m["content"] for r in rows for m in r["prompt"] + r["completion"]]
    model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=600)
    out = tmp_path_factory.mktemp("tiny_model")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _sessions(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "sessions.jsonl"
    write_sessions(generate_sessions(n, seed=0), path)
    return path


def _grpo(model: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "train",
        "grpo",
        "--model",
        str(model),
        "--data",
        str(data),
        "--output-dir",
        str(out),
        "--snapshot",
        str(CPU_SNAPSHOT),
        "--report-to",
        "none",
        "--set",
        "context=latest",
        "--set",
        "max_prompt_tokens=100",
        *extra,
    ]


@pytest.mark.slow
def test_cli_grpo_trains_a_tiny_local_model(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    out = tmp_path / "grpo"
    args = _grpo(
        tiny_model_dir,
        _sessions(tmp_path, 4),
        out,
        "--max-steps",
        "3",
        "--global-batch-size",
        "4",
        "--num-generations",
        "2",
        "--max-completion-length",
        "8",
        "--learning-rate",
        "1e-2",
        "--set",
        "logging_steps=1",
        "--set",
        "temperature=1.0",
        # A random-init model earns no Shop-R1 reward (no valid JSON), so every advantage
        # is 0; weight decay still moves the weights if and only if optimizer steps ran on
        # the model that was saved (the tiny-model API smoke test checks the reward path)
        "--set",
        "weight_decay=0.1",
    )
    # a console wide enough that the output path is never wrapped (a long TMPDIR would)
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "preflight ok" in result.output and f"saved to {out}" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 3 and "first_reward" in summary, summary
    # no completion parsed at any of the 3 logged steps: the rollout watch said so
    assert summary["findings"] == ["GRPO_NO_REWARD_SIGNAL"], summary
    assert "GRPO_NO_REWARD_SIGNAL" in result.output
    assert (out / "tokenizer_config.json").is_file()
    before = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    after = AutoModelForCausalLM.from_pretrained(out)
    moved = sum(
        (a - b).abs().sum().item()
        for a, b in zip(after.parameters(), before.parameters(), strict=True)
    )
    assert moved > 0  # the optimizer stepped: the saved weights are not the initial ones

    # The resolved config sits next to the weights: --config takes it back, and eval
    # rebuilds held-out prompts the way training built them (context, budget, split).
    from shop_r1.config import load_config

    run_file = out / "shop_r1_run.yaml"
    again, _ = load_config("grpo", yaml_path=run_file)
    assert (again.context, again.max_prompt_tokens, again.max_steps) == ("latest", 100, 3)
    sessions = tmp_path / "sessions.jsonl"

    def evaluate(out_dir: str, *extra: str):
        args = ["eval", "--model", str(out), "--data", str(sessions), "--output-dir", out_dir]
        return CliRunner().invoke(app, [*args, "--limit", "2", "--max-new-tokens", "4", *extra])

    evaluated = evaluate(str(tmp_path / "ev"), "--split", "all")
    assert evaluated.exit_code == 0, evaluated.output
    assert f"from {run_file}: seed=0, test_fraction=0.1, context=latest, max_prompt_tokens=100" in (
        evaluated.output
    )
    meta = json.loads((tmp_path / "ev" / "metrics.json").read_text())["eval"]
    assert meta["context"] == "latest"
    run_file.write_text("context: [unclosed\n")
    broken = evaluate(str(tmp_path / "ev2"))
    # a ToolError: the CLI's error boundary prints it as one line (file:line: what)
    message = error_line(broken)
    assert message.startswith(f"shop-r1: error: {run_file}:2: not valid YAML")


def test_cli_grpo_stops_on_fewer_prompts_than_one_generation_batch(
    tiny_model_dir, tmp_path, golden
):
    # 3 sessions -> 10 training prompts; 64 completions / 2 per prompt = 32 prompts per batch
    args = _grpo(
        tiny_model_dir,
        _sessions(tmp_path, 3),
        tmp_path / "out",
        "--global-batch-size",
        "64",
        "--num-generations",
        "2",
    )
    stopped = CliRunner().invoke(app, args)
    assert stopped.exit_code == 1, stopped.output
    text = " ".join(stopped.output.split())  # rich wraps lines at the terminal width
    assert "10 dataset rows < 32 prompts per GRPO generation batch" in text, text
    # once, from the doctor's plan check, as the doctor's block (render/findings.py)
    blocks = finding_blocks(stopped.output)
    assert [(sev, code) for sev, code, _ in blocks] == [("error", CODE)]
    golden(GOLDEN / "findings" / "train-preflight-tiny-dataset.txt", blocks[0][2])
    assert not (tmp_path / "out").exists()

    # --json: stdout is the document, its findings as every --json document carries them
    planned = CliRunner().invoke(app, [*args, "--dry-run", "--json"])
    assert planned.exit_code == 1, planned.output
    doc = json.loads(planned.stdout)
    (row,) = [f for f in doc["findings"] if f["code"] == CODE]
    assert set(row) == {"code", "severity", "title", "detail", "fix", "urls", "subject"}
    assert (row["severity"], doc["errors"]) == ("error", [CODE])
    assert finding_blocks(planned.stderr)[0][:2] == ("error", CODE)  # the human block: stderr

    let_through = CliRunner().invoke(app, [*args, "--ignore", CODE, "--dry-run"])
    assert let_through.exit_code == 0, let_through.output
    assert f"[{CODE}] (ignored)" in let_through.output and "preflight ok" in let_through.output


def _rows(n):
    return [{"prompt": [{"role": "user", "content": "p"}], "gold_action": "{}"}] * n


def test_generation_batch_larger_than_the_optimizer_step_counts(tmp_path):
    # 8 completions per step (4 prompts) but 32 per rollout: TRL needs 16 prompts
    cfg = GRPORunConfig(
        model="m",
        data="d",
        output_dir=str(tmp_path),
        global_batch_size=8,
        num_generations=2,
        generation_batch_size=32,
    )
    snap = json.loads(CPU_SNAPSHOT.read_text())
    shape = KNOWN_SHAPES["0.5b"]
    short = prepare(cfg, snapshot=snap, rows=(_rows(10), []), shape=shape, seq_len=64)
    enough = prepare(cfg, snapshot=snap, rows=(_rows(16), []), shape=shape, seq_len=64)
    assert short.plan.generation_batch_size == 32
    assert CODE in [f.code for f in short.errors()]
    assert CODE not in [f.code for f in enough.errors()]
