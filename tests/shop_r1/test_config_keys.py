"""Config keys from YAML files and `--set`: shop-r1's own fields, TRL's names for them
(aliases), TRL's own fields (also grouped under `trl_args`), and the one-line errors for the rest.
Each row's expectation is worked out by hand from the rules in `shop_r1/config.py`."""

from __future__ import annotations

import re

import pytest

from shop_r1.config import (
    RUN_CONFIG,
    GRPORunConfig,
    SFTRunConfig,
    load_config,
    parse_set,
    render_config,
    training_data_settings,
    trl_values,
)
from shop_r1_doctor.errors import ToolError

pytest.importorskip("trl")  # TRL's field list decides what passes through

# (config, --set item, parsed overrides): TRL's names for shop-r1 settings become ours
ALIAS_ROWS = [
    (SFTRunConfig, "per_device_train_batch_size=4", {"micro_batch_size": 4}),
    (SFTRunConfig, "use_liger_kernel=true", {"liger_kernel": "on"}),
    (SFTRunConfig, "use_liger_kernel=false", {"liger_kernel": "off"}),
    (GRPORunConfig, "activation_checkpointing=true", {"gradient_checkpointing": "on"}),
    (SFTRunConfig, "bf16=true", {"dtype": "bf16"}),
    (SFTRunConfig, "bf16=false", {"dtype": "fp32"}),
    (GRPORunConfig, "fp16=true", {"dtype": "fp16"}),
    (GRPORunConfig, "fp16=false", {"dtype": "fp32"}),
    # own fields keep their name; a YAML bool on an auto/on/off switch becomes on/off
    (SFTRunConfig, "gradient_checkpointing=true", {"gradient_checkpointing": "on"}),
    (SFTRunConfig, "attn_implementation=sdpa", {"attn_implementation": "sdpa"}),
    # TRL fields keep their name, with TRL's types
    (GRPORunConfig, "top_p=0.9", {"top_p": 0.9}),
    (GRPORunConfig, "epsilon_high=2.8e-1", {"epsilon_high": 0.28}),
    (SFTRunConfig, "dataset_text_field=text", {"dataset_text_field": "text"}),
    # `str | bool` in TRL: a bool stays a bool (not shop-r1's "on")
    (
        GRPORunConfig,
        "include_num_input_tokens_seen=true",
        {"include_num_input_tokens_seen": True},
    ),
    # a TRL name's value is the flag's text, read by TRL's parser as `--run_name 5` is
    (GRPORunConfig, "run_name=5", {"run_name": "5"}),
    # a list: TRL's flag form (words) or a YAML list, the text TRL's parser cannot read
    (GRPORunConfig, "reward_weights=1.0 0.5", {"reward_weights": [1.0, 0.5]}),
    (GRPORunConfig, "reward_weights=[1.0, 0.5]", {"reward_weights": [1.0, 0.5]}),
    (SFTRunConfig, "per_device_train_batch_size=auto", {"micro_batch_size": "auto"}),
    (SFTRunConfig, "bf16=yes", {"dtype": "bf16"}),
    # the first `=` splits: a value may contain `=`
    (SFTRunConfig, "output_dir=runs/lr=1e-5", {"output_dir": "runs/lr=1e-5"}),
    # an empty value is the empty string (then the value rule names it), not null
    (GRPORunConfig, "vllm_server_host=", {"vllm_server_host": ""}),
    # not a YAML scalar: the text itself, for the type check to judge
    (SFTRunConfig, "lr_scheduler_type={oops", {"lr_scheduler_type": "{oops"}),
]


@pytest.mark.parametrize(("cls", "item", "want"), ALIAS_ROWS, ids=[r[1] for r in ALIAS_ROWS])
def test_set_item_resolves_to(cls, item, want):
    assert parse_set([item], cls) == want


def test_several_trl_fields_are_read_by_name():
    got = parse_set(["top_p=0.9", "epsilon_high=0.28", "seed=3"], GRPORunConfig)
    assert got == {"top_p": 0.9, "epsilon_high": 0.28, "seed": 3}


def test_yaml_trl_fields_merge_with_flag_trl_args(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("top_p: 0.9\nuse_liger_kernel: false\nepsilon_high: 0.28\n")
    cfg, source = load_config(
        "grpo", yaml_path=path, flags={"trl_args": {"top_k": 20, "top_p": 0.8}}
    )
    assert trl_values(cfg) == {"top_p": 0.8, "epsilon_high": 0.28, "top_k": 20}
    assert cfg.top_p == 0.8 and cfg.top_k == 20  # TRL's own fields of the run config
    assert cfg.liger_kernel == "off" and source["top_p"] == source["top_k"] == "flag"


# (config, --set item, the whole one-line error)
BAD_SET_ROWS = [
    (
        SFTRunConfig,
        "learning_rate",
        "--set learning_rate: expected KEY=VALUE, e.g. --set learning_rate=1e-5",
    ),
    (SFTRunConfig, "=3", "--set =3: expected KEY=VALUE, e.g. --set learning_rate=1e-5"),
    (
        SFTRunConfig,
        "use_liger_kernel=yes please",
        "--set use_liger_kernel=yes please: use_liger_kernel: expected true or false, "
        "got 'yes please'",
    ),
    (
        GRPORunConfig,
        "top_p=high",
        "--set top_p=high: top_p: TRL expects float, got 'high'",
    ),
    # TRL's parser checks a choice field's value against TRL's choices
    (
        GRPORunConfig,
        "save_strategy=step",
        "--set save_strategy=step: save_strategy: 'step' is not one of TRL's 4 choices; "
        "did you mean steps?",
    ),
    (
        GRPORunConfig,
        "per_device_train_batch_size=four",
        "--set per_device_train_batch_size=four: per_device_train_batch_size: TRL expects int, "
        "got 'four'",
    ),
    # set by shop-r1 itself: not a pass-through TRL field
    (
        GRPORunConfig,
        "tf32=true",
        "--set tf32=true: tf32: a TRL GRPOConfig field that shop-r1 sets itself; "
        "run with --print-config to see shop-r1's settings",
    ),
    # GRPO's field is not SFT's, and the message names SFT's config
    (
        SFTRunConfig,
        "epsilon_high=0.28",
        "--set epsilon_high=0.28: epsilon_high: not a shop-r1 setting nor a TRL SFTConfig "
        "field; run with --print-config to see shop-r1's settings",
    ),
    (
        GRPORunConfig,
        "zzqx=1",
        "--set zzqx=1: zzqx: not a shop-r1 setting nor a TRL GRPOConfig field; "
        "run with --print-config to see shop-r1's settings",
    ),
]


@pytest.mark.parametrize(("cls", "item", "message"), BAD_SET_ROWS, ids=[r[1] for r in BAD_SET_ROWS])
def test_bad_set_item_is_one_line(cls, item, message):
    with pytest.raises(ToolError) as err:
        parse_set([item], cls)
    assert str(err.value) == message


# a typo is matched against shop-r1's fields, TRL's fields and TRL's alias names
@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("rouge_treshold", "rouge_threshold"),  # shop-r1 only
        ("epsilon_hihg", "epsilon_high"),  # TRL only
        ("use_liger_kernal", "use_liger_kernel"),  # alias only
    ],
)
def test_typo_suggests_the_setting(typo, meant):
    with pytest.raises(ToolError) as err:
        parse_set([f"{typo}=1"], GRPORunConfig)
    # at most three suggestions, joined with " or "
    found = re.search(r"; did you mean ([a-z_]+(?: or [a-z_]+){0,2})\? run with", str(err.value))
    assert found and meant in found.group(1).split(" or ")


# ------------------------------------------------------------- values checked by the config
def test_trl_fields_given_directly_are_checked_like_keys():
    with pytest.raises(ToolError) as err:
        load_config("grpo", flags={"trl_args": {"top_p": "high", "zzqx": 1}, "epsilon": "x"})
    assert str(err.value) == (
        "trl_args.top_p: TRL expects float, got 'high'; "
        "trl_args.zzqx: not a shop-r1 setting nor a TRL GRPOConfig field; "
        "run with --print-config to see shop-r1's settings; "
        "epsilon: TRL expects float, got 'x'"
    )
    assert trl_values(load_config("grpo", flags={"top_p": 0.9})[0]) == {"top_p": 0.9}


def test_mistyped_trl_args_is_reported():
    with pytest.raises(ToolError) as err:
        load_config("grpo", flags={"trl_args": "top_p=0.9"})
    assert str(err.value) == "trl_args: expected dict, got 'top_p=0.9'"


@pytest.mark.parametrize(
    ("field", "value", "want"),
    [
        ("liger_kernel", True, "on"),  # YAML `on` / `yes` load as True
        ("liger_kernel", False, "off"),
        ("learning_rate", "1e-5", 1e-5),  # YAML 1.1 loads `1e-5` as a string
    ],
)
def test_yaml_surprises_are_undone(field, value, want):
    assert getattr(SFTRunConfig(**{field: value}), field) == want


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # a bool is not a number, even where a float is expected (`learning_rate: yes`)
        ("learning_rate", True, "SFTRunConfig: learning_rate: expected float, got True"),
        (
            "max_prompt_tokens",
            "many",
            "SFTRunConfig: max_prompt_tokens: expected int | null, got 'many'",
        ),
    ],
)
def test_type_error_rows(field, value, message):
    with pytest.raises(ToolError) as err:
        SFTRunConfig(**{field: value})
    assert str(err.value) == message


# ------------------------------------------------------------- files
def test_a_mapping_value_is_a_type_error_of_its_field(tmp_path):
    # only `trl_args` groups TRL fields in a mapping; any other field given one is mistyped
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: {peak: 1.0e-5}\n")
    with pytest.raises(ToolError) as err:
        load_config("sft", yaml_path=path)
    # the file's line, as every input file's errors (shop_r1_doctor.schema)
    assert str(err.value) == f"{path}:1: learning_rate: expected float, got {{'peak': 1e-05}}"
    with pytest.raises(ToolError, match=r"^SFTRunConfig: learning_rate: expected float"):
        load_config("sft", flags={"learning_rate": {"peak": 1e-5}})


def test_mistyped_process_count_is_a_type_error_not_a_crash(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ToolError, match=r"^SFTRunConfig: num_processes: expected int, got 'two'"):
        load_config("sft", flags={"num_processes": "two"})


def test_config_file_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- learning_rate\n- seed\n")
    with pytest.raises(ToolError) as err:
        load_config("sft", yaml_path=path)
    assert str(err.value) == f"{path}:1: a config file must be a mapping of setting: value"


def test_invalid_yaml_names_the_file_as_a_config(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("seed: 1\nlearning_rate: [1, 2\n")
    with pytest.raises(ToolError) as err:
        load_config("sft", yaml_path=path)
    assert str(err.value).startswith(f"{path}:") and str(err.value).endswith("; fix the config")


def test_value_error_names_the_file_once_or_not_at_all(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 0\n")
    with pytest.raises(ToolError) as err:
        load_config("sft", yaml_path=path)
    assert str(err.value) == f"{path}:1: learning_rate: must be > 0, got 0.0"
    with pytest.raises(ToolError) as err:
        load_config("sft", flags={"learning_rate": 0})
    assert str(err.value) == "SFTRunConfig: learning_rate: must be > 0, got 0.0"


# ------------------------------------------------------------- processes and the default batch
def test_launcher_world_of_one_disagrees_with_two_configured(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ToolError) as err:
        load_config("sft", flags={"num_processes": 2})
    assert str(err.value).startswith("num_processes: 2 (from flag) but the launcher started")
    assert str(err.value).endswith("drop num_processes or make it match")


# (generations, processes) -> the default global batch 64 rounded up to whole groups per process
@pytest.mark.parametrize(
    ("gens", "procs", "want"),
    [
        (3, None, 66),  # one process: still whole groups of 3
        (5, None, 65),
        (5, 2, 70),  # lcm(2, 5) = 10
        (1, 3, 66),  # lcm(3, 1) = 3 (then num_generations 1 is its own error)
    ],
)
def test_default_batch_is_whole_groups(monkeypatch, gens, procs, want):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    flags = {"num_generations": gens, **({"num_processes": procs} if procs else {})}
    if gens < 2:
        with pytest.raises(ToolError, match="num_generations: must be >= 2") as err:
            load_config("grpo", flags=flags)
        assert "global_batch_size" not in str(err.value)  # 66 splits over 3 processes
        return
    cfg, source = load_config("grpo", flags=flags)
    assert cfg.global_batch_size == want
    assert source["global_batch_size"].startswith("default rounded up to a multiple of")


def test_mistyped_generations_is_a_type_error_not_a_crash(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ToolError, match="num_generations: expected int, got 'many'"):
        load_config("grpo", flags={"num_generations": "many", "num_processes": 3})


# ------------------------------------------------------------- the printed config
def test_printed_config_round_trips_awkward_values(tmp_path):
    flags = {
        "output_dir": "runs/try...",  # YAML's end-of-document marker is `...` too
        "trl_args": {"reward_weights": [1.0, 0.5], "top_p": 0.9},
    }
    cfg, source = load_config("grpo", flags=flags)
    text = render_config(cfg, source)
    path = tmp_path / "printed.yaml"
    path.write_text(text)
    again, _ = load_config("grpo", yaml_path=path)
    assert again == cfg and again.output_dir == "runs/try..."
    lines = dict(line.split(": ", 1) for line in text.splitlines()[1:])
    assert lines["seed"].startswith("0  # [default] ")
    assert lines["output_dir"].startswith("runs/try...  # [flag] ")


def test_run_config_of_an_older_or_foreign_run(tmp_path):
    file = tmp_path / RUN_CONFIG
    file.write_text("")  # empty: every setting at its default
    assert training_data_settings(tmp_path) == (
        file,
        {"seed": 0, "test_fraction": 0.1, "context": "full", "max_prompt_tokens": None},
    )
    file.write_text("seed: 3\nbogus_key: 1\n")  # no command knows every key: read as SFT
    with pytest.raises(ToolError) as err:
        training_data_settings(tmp_path)
    text = str(err.value)
    assert text.startswith(f"{file}:2: bogus_key: not a shop-r1 setting nor a TRL SFTConfig")
    assert text.count(str(file)) == 1
    file.write_text("seed: [1\n")
    with pytest.raises(ToolError) as err:
        training_data_settings(tmp_path)
    assert str(err.value).endswith("fix the run config") and str(err.value).count(str(file)) == 1


# ------------------------------------------------------------- TRL's own refusals
@pytest.mark.parametrize(
    ("kwargs", "user", "field"),
    [
        # the field the user set, though the message names another first
        (
            {"log_completions_hub_repo": "me/runs", "log_completions": False},
            {"log_completions_hub_repo"},
            "log_completions_hub_repo",
        ),
        (
            {"num_generations": 3, "generation_batch_size": 8},
            {"num_generations"},
            "num_generations",
        ),
        # nothing the user set is named: the first field the message names
        ({"num_generations": 3, "generation_batch_size": 8}, set(), "generation_batch_size"),
    ],
)
def test_trl_refusal_is_one_line_naming_the_field(kwargs, user, field):
    from trl import GRPOConfig

    from shop_r1.config import trl_rejection

    full = {"output_dir": "/tmp/x", "use_cpu": True, "per_device_train_batch_size": 8, **kwargs}
    with pytest.raises(ValueError) as err:
        GRPOConfig(**full)
    line = trl_rejection("grpo", err.value, full, user)
    assert line.startswith(f"TRL's GRPOConfig rejects this config: {field}: ")
    assert "\n" not in line and str(err.value).splitlines()[0] in line
