"""Run configs: shipped YAML loads, unknown keys fail with file:line, precedence, all errors at once."""

from pathlib import Path

import pytest

from shop_r1.config import (
    CONFIG_CLASSES,
    GRPORunConfig,
    SFTRunConfig,
    load_config,
    parse_set,
    render_config,
)
from shop_r1_doctor.errors import ToolError

SHIPPED = Path(__file__).resolve().parents[2] / "shop_r1" / "configs"


@pytest.mark.parametrize("command", sorted(CONFIG_CLASSES))
def test_every_shipped_yaml_loads(command):
    cfg, source = load_config(command, yaml_path=SHIPPED / f"{command}.yaml")
    assert isinstance(cfg, CONFIG_CLASSES[command])
    assert source and all(v.endswith(f"{command}.yaml") for v in source.values())


def test_unknown_key_names_file_line_and_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 1.0e-5\nnum_generatoins: 4\n")
    with pytest.raises(ToolError, match=r"c\.yaml:2: num_generatoins: unknown setting"):
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
