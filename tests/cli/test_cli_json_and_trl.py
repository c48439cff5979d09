"""`--json` carries a schema name on every command that prints data; TRL's own config
fields pass through to TRL's config object; --resume names its checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_errors import error_line
from machines import snapshot_path
from repo_paths import ROOT
from typer.testing import CliRunner

from shop_r1.autoconfig import AutoPlan
from shop_r1.cli import app
from shop_r1.config import GRPORunConfig, SFTRunConfig, load_config, parse_set, trl_values
from shop_r1.data.io import write_sessions
from shop_r1.data.synth import generate_sessions


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def _model_dir(tmp_path: Path) -> Path:
    from shop_r1.tiny import train_tokenizer

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps(
            {
                "model_type": "qwen2",
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "intermediate_size": 128,
                "vocab_size": 300,
            }
        )
    )
    train_tokenizer(["hello world"] * 10, vocab_size=300).save_pretrained(model)
    return model


def test_json_outputs_name_their_schema(tmp_path: Path) -> None:
    data = tmp_path / "s.jsonl"
    write_sessions(generate_sessions(40, seed=3), data)
    expected = {
        ("profiles", "list", "--json"): "shop-r1.profiles/1",
        ("profiles", "show", "hopper", "--json"): "shop-r1.profile/1",
        ("data", "stats", str(data), "--json"): "shop-r1.data-stats/1",
        ("data", "validate", str(data), "--json"): "shop-r1.data-validate/1",
        (
            "launch",
            "sft",
            "-o",
            str(tmp_path / "l.sh"),
            "--profile",
            "cpu",
            "--json",
        ): "shop-r1.launch/1",
        (
            "train",
            "sft",
            "--model",
            str(_model_dir(tmp_path)),
            "--data",
            str(data),
            "--output-dir",
            str(tmp_path / "out"),
            "--snapshot",
            str(snapshot_path("cpu")),
            "--dry-run",
            "--json",
            "--set",
            "max_steps=2",
        ): "shop-r1.train-plan/1",
    }
    for args, schema in expected.items():
        result = run(*args)
        assert result.exit_code in (0, 1), (args, result.output)
        assert json.loads(result.stdout)["schema"] == schema, args
    plan = json.loads(run(*list(expected)[-1]).stdout)
    assert plan["command"] == "sft" and plan["config"]["max_steps"] == 2
    assert not (tmp_path / "out").exists()  # a dry run writes nothing


def test_trl_fields_reach_trl_config() -> None:
    from shop_r1 import trl_config

    sets = [
        "top_p=0.9",
        "epsilon_high=0.28",
        "per_device_train_batch_size=2",
        "use_liger_kernel=false",
        "bf16=false",
    ]
    cfg, _ = load_config("grpo", flags=parse_set(sets, GRPORunConfig))
    assert cfg.micro_batch_size == 2 and cfg.liger_kernel == "off" and cfg.dtype == "fp32"
    assert trl_values(cfg) == {"top_p": 0.9, "epsilon_high": 0.28}
    plan = AutoPlan(micro_batch_size=2, gradient_accumulation_steps=32, generation_batch_size=64)
    trl_cfg = trl_config.build(cfg, plan).validate()
    assert trl_cfg.top_p == 0.9 and trl_cfg.epsilon_high == 0.28
    sft, _ = load_config("sft", flags=parse_set(["neftune_noise_alpha=5"], SFTRunConfig))
    assert trl_config.build(sft, AutoPlan()).validate().neftune_noise_alpha == 5


def test_trl_field_in_yaml_config_and_did_you_mean(tmp_path: Path) -> None:
    good = tmp_path / "g.yaml"
    good.write_text("top_p: 0.95\nlearning_rate: 1e-6\n")
    shown = run("train", "grpo", "--config", str(good), "--print-config")
    assert shown.exit_code == 0 and "trl_args: {top_p: 0.95}" in shown.stdout
    bad = tmp_path / "b.yaml"
    bad.write_text("learning_rate: 1e-6\nepsilon_hi: 0.2\n")
    line = error_line(run("train", "grpo", "--config", str(bad), "--print-config"))
    assert f"{bad}:2: epsilon_hi" in line and "did you mean epsilon_high" in line


def test_resume_names_the_checkpoint_or_refuses(tmp_path: Path) -> None:
    data = tmp_path / "s.jsonl"
    write_sessions(generate_sessions(40, seed=3), data)
    out = tmp_path / "out"
    args = [
        "train",
        "sft",
        "--model",
        str(_model_dir(tmp_path)),
        "--data",
        str(data),
        "--output-dir",
        str(out),
        "--snapshot",
        str(snapshot_path("cpu")),
        "--dry-run",
        "--resume",
    ]
    assert "--resume: no checkpoint-N directory" in error_line(run(*args))
    (out / "checkpoint-7").mkdir(parents=True)
    (out / "checkpoint-7" / "trainer_state.json").write_text("{}")
    result = run(*args)
    assert f"resuming from {out / 'checkpoint-7'}" in result.stderr, result.output


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_and_version(flag: str) -> None:
    result = run("data", "synth", flag)
    assert result.exit_code == 0 and "--sessions" in result.stdout
    assert "<bool>" not in result.stdout and "<str>" not in result.stdout
    assert run("--version").stdout.startswith("shop-r1 ")


# `name=value` in a fix that belongs to another tool (vLLM, Megatron, Ray, torch's TCPStore, a
# grader's timeout), not to `--set`
OTHER_TOOLS = {
    "attention_backend",
    "force_download",  # huggingface_hub's download and from_pretrained argument
    "gradient_accumulation_fusion",
    "include_dashboard",
    "local_dir",  # huggingface_hub's snapshot_download / hf_hub_download argument
    "num_workers",  # torch DataLoader's argument
    "parsing_timeout",  # math-verify's parse()
    "pin_memory",  # torch DataLoader's argument
    "timeout_seconds",  # math-verify's verify()
    "use_signals",  # timeout_decorator's
    "use_libuv",
    "weights_only",  # torch.load's argument
}


def test_every_fix_setting_is_accepted_by_set() -> None:
    """A fix line that says `name=value` names something `--set name=value` takes."""
    import re

    from shop_r1_doctor.errors import ToolError
    from shop_r1_doctor.yamlio import read_yaml

    _, data = read_yaml(ROOT / "shop_r1_doctor/knowledge/codes.yaml")
    codes = data.get("codes", data)
    checked = 0
    for code, entry in codes.items():
        if not isinstance(entry, dict):
            continue
        for name, value in re.findall(
            r"\b([a-z]+(?:_[a-z]+)+)=([\w.]+)", str(entry.get("fix", ""))
        ):
            if name in OTHER_TOOLS:
                continue
            accepted = False
            for cls in (SFTRunConfig, GRPORunConfig):
                try:
                    parse_set([f"{name}={value}"], cls)
                    accepted = True
                except ToolError:
                    pass
            assert accepted, f"{code}: fix says {name}={value}, which --set rejects"
            checked += 1
    assert checked >= 5
