"""Run configs: shipped YAML loads, unknown keys fail with file:line, precedence, all errors at once."""

import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.config import (
    CONFIG_CLASSES,
    GRPORunConfig,
    SFTRunConfig,
    load_config,
    parse_set,
    render_config,
)
from shop_r1_doctor.errors import ToolError

SHIPPED = ROOT / "shop_r1" / "configs"


def _command_of(path: Path) -> str:
    """A shipped config is named for its command: sft.yaml, grpo_long.yaml, ..."""
    command = path.stem.replace("-", "_").split("_")[0]
    assert command in CONFIG_CLASSES, f"{path.name}: name it <{'|'.join(CONFIG_CLASSES)}>*.yaml"
    return command


def test_every_command_ships_an_example_config():
    assert {_command_of(p) for p in SHIPPED.glob("*.yaml")} == set(CONFIG_CLASSES)


@pytest.mark.parametrize("path", sorted(SHIPPED.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_yaml_loads(path):
    command = _command_of(path)
    cfg, source = load_config(command, yaml_path=path)
    assert isinstance(cfg, CONFIG_CLASSES[command])
    assert source and all(v == str(path) for v in source.values())
    # and through the real command line, as a user would pass it
    result = CliRunner().invoke(app, ["train", command, "--config", str(path), "--print-config"])
    assert result.exit_code == 0, result.output
    assert f"# {CONFIG_CLASSES[command].__name__}" in result.output


@pytest.mark.parametrize("command", sorted(CONFIG_CLASSES))
def test_help_is_fast_and_imports_no_training_stack(command):
    # `--help` must not pay for torch/transformers/trl (seconds; broken installs crash)
    code = (
        "import sys; from typer.testing import CliRunner; "
        "from shop_r1.cli import app; "
        f"r = CliRunner().invoke(app, ['train', '{command}', '--help']); "
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'datasets', 'vllm') "
        "if m in sys.modules]; "
        "print(r.exit_code, heavy, '--config' in r.output)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    # no heavy module imported is what keeps --help fast (~0.2 s); no clock asserted
    assert out.stdout.split() == ["0", "[]", "True"], out.stdout + out.stderr


def test_unknown_key_names_file_line_and_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 1.0e-5\nnum_generatoins: 4\n")
    with pytest.raises(
        ToolError,
        match=r"c\.yaml:2: num_generatoins: not a shop-r1 setting.*did you mean num_generations",
    ):
        load_config("grpo", yaml_path=path)


def test_precedence_default_yaml_flag(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 1.0e-5\nseed: 7\n")
    cfg, source = load_config("sft", yaml_path=path, flags={"learning_rate": 3e-4, "seed": None})
    assert cfg.learning_rate == 3e-4 and source["learning_rate"] == "flag"
    assert cfg.seed == 7 and source["seed"] == str(path)
    assert cfg.max_length == SFTRunConfig().max_length and "max_length" not in source


def test_all_errors_reported_together():
    with pytest.raises(ToolError) as err:
        GRPORunConfig(num_generations=1, dtype="bf17", temperature="hot", micro_batch_size=0)
    text = str(err.value)
    for field in ("num_generations", "dtype", "temperature", "micro_batch_size"):
        assert f"{field}:" in text


def test_batch_arithmetic_must_add_up():
    with pytest.raises(ToolError, match="global_batch_size: 64 != micro_batch_size 3"):
        SFTRunConfig(micro_batch_size=3, gradient_accumulation_steps=4)
    with pytest.raises(ToolError, match="not a multiple of num_generations 8"):
        GRPORunConfig(global_batch_size=60)


def test_set_overrides_are_typed_and_checked():
    assert parse_set(["learning_rate=1e-5", "use-vllm=off"], GRPORunConfig) == {
        "learning_rate": 1e-5,
        "use_vllm": "off",
    }
    with pytest.raises(ToolError, match="--set nope=1"):
        parse_set(["nope=1"], GRPORunConfig)


def test_printed_config_loads_back(tmp_path):
    cfg, source = load_config("grpo", flags={"learning_rate": 2e-6, "num_generations": 4})
    path = tmp_path / "printed.yaml"
    path.write_text(render_config(cfg, source))
    again, _ = load_config("grpo", yaml_path=path)
    assert again == cfg


def test_training_data_settings_read_like_a_config_file(tmp_path):
    from shop_r1.config import RUN_CONFIG, load_config, render_config, training_data_settings
    from shop_r1_doctor.errors import ToolError

    assert training_data_settings(tmp_path) is None  # not a `shop-r1 train` output
    cfg, source = load_config("grpo", flags={"context": "latest", "seed": 7})
    (tmp_path / RUN_CONFIG).write_text(render_config(cfg, source))
    path, got = training_data_settings(tmp_path)
    assert got == {"seed": 7, "test_fraction": 0.1, "context": "latest", "max_prompt_tokens": None}
    (tmp_path / RUN_CONFIG).write_text("context: sideways\n")
    with pytest.raises(ToolError) as err:
        training_data_settings(tmp_path)
    assert str(err.value) == f"{path}:1: context: expected 'full' | 'latest', got 'sideways'"
