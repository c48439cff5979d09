"""Every bad `--config` file gets one line, `FILE:LINE: FIELD: message`, from the doctor's
one schema reader (the shape of knowledge, profile and plan errors), through `train` and
through `launch --config` alike; TRL's own fields keep passing through."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.config import load_config, trl_values
from tests.cli_errors import error_line

# (id, command, file text, the whole error after `FILE`)
CASES = [
    (
        "unknown-key",
        "grpo",
        "seed: 1\nnum_generatoins: 4\n",
        ":2: num_generatoins: not a shop-r1 setting nor a TRL GRPOConfig field; did you mean "
        "num_generations or num_generations_eval or num_iterations? run with --print-config "
        "to see shop-r1's settings",
    ),
    (
        "wrong-type",
        "sft",
        "seed: 1\nlearning_rate: fast\n",
        ":2: learning_rate: expected float, got 'fast'",
    ),
    (
        "wrong-literal",
        "sft",
        "dtype: bf17\n",
        ":1: dtype: expected 'auto' | 'bf16' | 'fp16' | 'fp32', got 'bf17'",
    ),
    (
        "out-of-range",
        "sft",
        "seed: 1\n\nlearning_rate: 0\n",
        ":3: learning_rate: must be > 0, got 0.0",
    ),
    ("grpo-range", "grpo", "temperature: 0\n", ":1: temperature: must be > 0, got 0.0"),
    (
        "port-range",
        "grpo",
        "seed: 2\nvllm_server_port: 70000\n",
        ":2: vllm_server_port: must be a TCP port in [1, 65535], got 70000",
    ),
    (
        "cross-field",
        "sft",
        "micro_batch_size: 3\ngradient_accumulation_steps: 4\nglobal_batch_size: 64\n",
        ":3: global_batch_size: 64 != micro_batch_size 3 x gradient_accumulation_steps 4 x "
        "num_processes 1; set one of them to 'auto'",
    ),
    (
        "trl-field-type",
        "grpo",
        "seed: 1\ntop_p: high\n",
        ":2: top_p: TRL expects float, got 'high'",
    ),
    (
        "trl-args-nested",
        "grpo",
        "trl_args:\n  top_p: 0.9\n  epsilon_high: x\n",
        ":3: trl_args.epsilon_high: TRL expects float | null, got 'x'",
    ),
    ("trl-alias-type", "sft", "bf16: maybe\n", ":1: bf16: expected true or false, got 'maybe'"),
    (
        "not-a-mapping",
        "sft",
        "- seed: 1\n",
        ":1: a config file must be a mapping of setting: value",
    ),
    # an unknown key hides nothing: every bad key and value, each on its own line
    (
        "every-problem-at-once",
        "grpo",
        "seed: 1\nlr: 3\nper_device_train_batch_size: four\nbeta: -1\n",
        ":2: lr: not a shop-r1 setting nor a TRL GRPOConfig field; did you mean learning_rate? "
        "run with --print-config to see shop-r1's settings; {file}:3: "
        "per_device_train_batch_size: TRL expects int, got 'four'; {file}:4: beta: must be >= "
        "0, got -1.0",
    ),
    # a value set under TRL's name is reported under that name, on its line
    (
        "alias-named-as-written",
        "sft",
        "seed: 1\nper_device_train_batch_size: 0\n",
        ":2: per_device_train_batch_size: must be >= 1 or 'auto', got 0",
    ),
    (
        "trl-choice",
        "grpo",
        "seed: 1\nsave_strategy: step\n",
        ":2: save_strategy: 'step' is not one of TRL's 4 choices; did you mean steps?",
    ),
    # shop-r1's own field that TRL has with choices: TRL's choices
    (
        "own-field-trl-choice",
        "sft",
        "seed: 1\nlr_scheduler_type: cosin\n",
        ":2: lr_scheduler_type: 'cosin' is not one of TRL's 12 choices; did you mean cosine?",
    ),
    (
        "two-problems",
        "grpo",
        "beta: -1\ntemperature: hot\n",
        ":2: temperature: expected float, got 'hot'; {file}:1: beta: must be >= 0, got -1.0",
    ),
]


@pytest.mark.parametrize(("case", "command", "text", "error"), CASES, ids=[c[0] for c in CASES])
def test_bad_config_file_is_one_line_at_its_field(tmp_path, case, command, text, error):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    expected = f"{path}{error.format(file=path)}"
    for argv in (
        ["train", command, "--config", str(path), "--print-config"],
        [
            "launch",
            command,
            "--profile",
            "cpu",
            "-o",
            str(tmp_path / "l.sh"),
            "--config",
            str(path),
        ],
    ):
        line = error_line(CliRunner().invoke(app, argv))
        assert line == f"shop-r1: error: {expected}", argv
    assert not (tmp_path / "l.sh").exists()


def test_a_flag_value_is_not_blamed_on_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\ntemperature: 0\n")
    argv = ["train", "grpo", "--config", str(path), "--set", "beta=-1", "--print-config"]
    line = error_line(CliRunner().invoke(app, argv))
    assert line == (
        f"shop-r1: error: {path}:2: temperature: must be > 0, got 0.0; "
        "beta: must be >= 0, got -1.0 (from a flag)"
    )


def test_launcher_world_size_against_the_file(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\nnum_processes: 2\n")
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(Exception) as err:
        load_config("sft", yaml_path=path)
    assert str(err.value) == (
        f"{path}:2: num_processes: 2 (from {path}) but the launcher started WORLD_SIZE=4 "
        "processes; the batch arithmetic needs the real count: drop num_processes or make it match"
    )


def test_trl_passthrough_keys_still_load(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("top_p: 0.9\nper_device_train_batch_size: 2\ntrl_args:\n  epsilon_high: 0.28\n")
    cfg, source = load_config("grpo", yaml_path=path)
    assert trl_values(cfg) == {"top_p": 0.9, "epsilon_high": 0.28}
    assert cfg.micro_batch_size == 2 and source["micro_batch_size"] == str(path)


def test_launch_config_only_for_training_tasks(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\n")
    argv = [
        "launch",
        "eval",
        "--profile",
        "cpu",
        "-o",
        str(tmp_path / "l.sh"),
        "--config",
        str(path),
    ]
    line = error_line(CliRunner().invoke(app, argv))
    assert line == f"shop-r1: error: --config {path}: only sft and grpo take a training config"


def test_a_trl_users_yaml_loads_as_trl_reads_it(tmp_path):
    # quoted numbers and booleans, as `trl sft --config` reads them (its parser's types)
    path = tmp_path / "c.yaml"
    path.write_text(
        'per_device_train_batch_size: "4"\nbf16: "true"\nuse_liger_kernel: "no"\n'
        "save_strategy: epoch\nactivation_checkpointing: true\n"
    )
    cfg, source = load_config("sft", yaml_path=path)
    assert (cfg.micro_batch_size, cfg.dtype, cfg.liger_kernel) == (4, "bf16", "off")
    assert cfg.gradient_checkpointing == "on"
    assert trl_values(cfg) == {"save_strategy": "epoch"} and cfg.save_strategy == "epoch"
    assert source["micro_batch_size"] == str(path)


def test_file_and_set_problems_come_together(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\nzzqx: 2\n")
    line = error_line(
        CliRunner().invoke(
            app,
            ["train", "grpo", "--config", str(path), "--set", "top_p=high", "--print-config"],
        )
    )
    assert line == (
        f"shop-r1: error: {path}:2: zzqx: not a shop-r1 setting nor a TRL GRPOConfig field; "
        "run with --print-config to see shop-r1's settings; --set top_p=high: top_p: TRL "
        "expects float, got 'high'"
    )


def test_every_field_is_a_flag_as_trl_parses_it():
    argv = ["train", "grpo", "--top_p", "0.9", "--per-device-train-batch-size=4", "--bf16"]
    argv += ["--loss_type", "grpo", "--print-config"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    lines = dict(line.split("  # ")[0].split(": ", 1) for line in result.output.splitlines()[1:])
    assert lines["trl_args"] == "{top_p: 0.9}" and lines["micro_batch_size"] == "4"
    assert lines["dtype"] == "bf16" and lines["loss_type"] == "grpo"


def test_bad_flags_are_reported_together():
    argv = [
        "train",
        "sft",
        "--lr",
        "3e-5",
        "--top_k",
        "5",
        "stray",
        "--per_device_train_batch_size",
    ]
    line = error_line(CliRunner().invoke(app, [*argv, "x", "--print-config"]))
    assert line == (
        "shop-r1: error: --lr: not a shop-r1 setting nor a TRL SFTConfig field; did you mean "
        "learning_rate? run with --print-config to see shop-r1's settings; --top_k: not a "
        "shop-r1 setting nor a TRL SFTConfig field; run with --print-config to see shop-r1's "
        "settings; stray: unexpected argument; give settings as --NAME VALUE; "
        "--per_device_train_batch_size: TRL expects int, got 'x'"
    )
