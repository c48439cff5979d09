"""Preparing a run on a machine that will not run it: `train --dry-run --snapshot <a GPU
machine>` on this CPU machine plans for the snapshot's GPU (TRL's config is checked except
device and precision, which only the target can pass), and on a light install (no `train`
extra: no torch, transformers, TRL) the commands that need it end in one line naming the
extra, exit 2, not a ModuleNotFoundError traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from machines import snapshot_path
from typer.testing import CliRunner

from shop_r1.cli import app


@pytest.fixture(scope="module")
def model_and_data(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny local model (config + tokenizer, no weights: a dry run loads none) and data."""
    from shop_r1.data.io import write_sessions
    from shop_r1.data.synth import generate_sessions
    from shop_r1.tiny import train_tokenizer

    root = tmp_path_factory.mktemp("elsewhere")
    write_sessions(generate_sessions(60, seed=0), root / "s.jsonl")
    model = root / "model"
    model.mkdir()
    config = {
        "model_type": "qwen2",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 300,
    }
    (model / "config.json").write_text(json.dumps(config))
    train_tokenizer(["hello world"] * 10, vocab_size=300).save_pretrained(model)
    return model, root / "s.jsonl"


@pytest.mark.parametrize(
    ("task", "machine"), [("sft", "h100"), ("grpo", "h100"), ("sft", "h200x2")]
)
def test_dry_run_plans_for_the_snapshots_gpu_on_a_cpu_machine(
    tmp_path, model_and_data, task, machine
):
    import torch

    if torch.cuda.is_available():
        pytest.skip("the case is a machine without a GPU")
    model, data = model_and_data
    argv = ["train", task, "--model", str(model), "--data", str(data)]
    argv += ["--output-dir", str(tmp_path / "out"), "--max-steps", "4", "--dry-run"]
    argv += ["--snapshot", str(snapshot_path(machine))]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "doesn't support bf16/gpu" not in result.output
    assert "TRL's config checked without device and precision (cuda, bf16)" in " ".join(
        result.output.split()
    )
    assert "preflight ok" in result.output
    planned = CliRunner().invoke(app, [*argv, "--json"])
    plan = json.loads(planned.stdout)["plan"]
    assert (plan["device"], plan["dtype"]) == ("cuda", "bf16")  # the snapshot's, not this one's
    assert not (tmp_path / "out").exists()


def test_without_a_snapshot_trl_checks_this_machine_as_it_is(tmp_path, model_and_data):
    from shop_r1.commands.train import trl_check_plan

    class Plan:  # a plan made for this machine: nothing to neutralise
        device = "cuda"

    plan = Plan()
    assert trl_check_plan(plan, planned_elsewhere=False) == (plan, "")


# The light install, as a login node has it: a meta path finder refuses the train extra's
# modules, so `import torch` fails exactly as where it is not installed.
LIGHT = """
import runpy, sys

class Light:
    names = {"torch", "transformers", "trl", "datasets", "accelerate", "vllm"}

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Light())
sys.argv = ["shop-r1", *sys.argv[1:]]
runpy.run_module("shop_r1.cli", run_name="__main__")
"""


def _light(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", LIGHT, *argv], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--output-dir", "demo"],
        ["eval", "--model", "{model}", "--data", "{data}", "--output-dir", "ev"],
        ["train", "sft", "--model", "{model}", "--data", "{data}", "--dry-run"],
        ["train", "grpo", "--model", "{model}", "--data", "{data}", "--dry-run"],
    ],
    ids=["demo", "eval-model", "train-sft-dry-run", "train-grpo-dry-run"],
)
def test_light_install_names_the_extra_in_one_line(tmp_path, model_and_data, argv):
    model, data = model_and_data
    proc = _light(*(a.format(model=model, data=data) for a in argv), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "needs the `train` extra" in proc.stderr
    assert "pip install 'shop-r1[train]'" in proc.stderr
    assert "torch" in proc.stderr
    assert not any(tmp_path.iterdir())  # nothing written


def test_light_install_still_runs_the_doctor_and_launch(tmp_path):
    """What a login node is for: the light install diagnoses and writes launch scripts."""
    proc = _light("launch", "sft", "--profile", "H100", "-o", "run.sh", "--data", "d", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "run.sh").is_file()


def test_the_light_install_check_finds_what_is_missing():
    from shop_r1.commands._common import missing_modules

    assert missing_modules(("json", "no_such_module_xyz")) == ["no_such_module_xyz"]


def test_light_install_reads_and_checks_a_run_config_without_trl(tmp_path):
    """The run config is TRL's class only where TRL is installed: without it a config is
    still printed and checked (`launch --config` on a login node), TRL's names unknown."""
    (tmp_path / "c.yaml").write_text("learning_rate: 1e-6\ntrl_args: {}\n")
    shown = _light("train", "grpo", "--config", "c.yaml", "--print-config", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("# GRPORunConfig") and "trl_args: {}" in shown.stdout
    (tmp_path / "bad.yaml").write_text("learning_rate: fast\ntop_p: 0.9\n")
    argv = ["launch", "sft", "--profile", "H100", "-o", "run.sh", "--config", "bad.yaml"]
    proc = _light(*argv, "--data", "d", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "bad.yaml:1: learning_rate: expected float, got 'fast'" in proc.stderr
    assert "bad.yaml:2: top_p: not a shop-r1 setting nor a TRL SFTConfig field" in proc.stderr
