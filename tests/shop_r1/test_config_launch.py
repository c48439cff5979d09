"""Run configs that `shop-r1 launch grpo` writes load through `shop-r1 train grpo`, and
their vLLM server address reaches TRL's GRPOConfig."""

from pathlib import Path

import pytest
from machines import machine_snapshot, snapshot_path
from typer.testing import CliRunner

from shop_r1.autoconfig import decide
from shop_r1.cli import app
from shop_r1.config import load_config
from shop_r1_doctor.memory import KNOWN_SHAPES


def _launch(tmp_path: Path, gpus: int) -> Path:
    script = tmp_path / "run.sh"
    result = CliRunner().invoke(
        app,
        # the target's facts (2x H200 with vLLM) decide the server layout
        [
            "launch",
            "grpo",
            "--profile",
            "hopper",
            "--gpus",
            str(gpus),
            "-o",
            str(script),
            "--snapshot",
            str(snapshot_path("h200x2-fa-vllm")),
        ],
    )
    assert result.exit_code == 0, result.output
    config = tmp_path / "run.config.yaml"
    assert config.is_file(), sorted(p.name for p in tmp_path.iterdir())
    return config


@pytest.mark.parametrize("gpus", [2, 4])
def test_generated_launch_config_loads_through_train_grpo(tmp_path, gpus):
    config = _launch(tmp_path, gpus)
    # the ports are picked free on the target at run time and passed as --set, as the
    # script does (`--set vllm_server_port="$VLLM_PORT" --set vllm_group_port="$GROUP_PORT"`)
    script = (tmp_path / "run.sh").read_text()
    assert '--set vllm_server_port="$VLLM_PORT" --set vllm_group_port="$GROUP_PORT"' in script
    ports = ["--set", "vllm_server_port=40001", "--set", "vllm_group_port=40002"]
    printed = CliRunner().invoke(
        app, ["train", "grpo", "--config", str(config), *ports, "--print-config"]
    )
    assert printed.exit_code == 0, printed.output
    lines = {line.split(":", 1)[0]: line for line in printed.output.splitlines()}
    for key, value in [
        ("vllm_mode", "server"),
        ("vllm_server_host", "127.0.0.1"),
        ("use_vllm", "auto"),
        ("num_processes", str(gpus - 1)),  # one GPU serves vLLM
    ]:
        assert lines[key].startswith(f"{key}: {value}  # [{config}]"), lines[key]
    assert lines["vllm_server_port"].startswith("vllm_server_port: 40001  # [flag]")
    assert lines["vllm_group_port"].startswith("vllm_group_port: 40002  # [flag]")
    # what --print-config prints loads back as the same config
    again = tmp_path / "printed.yaml"
    again.write_text(printed.output)
    flags = {"vllm_server_port": 40001, "vllm_group_port": 40002}
    assert (
        load_config("grpo", yaml_path=again)[0]
        == load_config("grpo", yaml_path=config, flags=flags)[0]
    )


def test_server_address_reaches_trl_grpo_config(tmp_path):
    pytest.importorskip("trl")
    from shop_r1 import trl_config

    config = tmp_path / "c.yaml"
    config.write_text(
        "use_vllm: 'on'\nvllm_mode: server\nvllm_server_host: 10.0.0.7\n"
        "vllm_server_port: 8123\nvllm_group_port: 51300\nreport_to: none\n"
        "dtype: fp32\n"  # TrainingArguments refuses bf16 on this CPU-only test machine
    )
    cfg, _ = load_config("grpo", yaml_path=config, flags={"output_dir": str(tmp_path)})
    snapshot = machine_snapshot("h200x2-fa-vllm")
    plan = decide(snapshot, cfg, KNOWN_SHAPES["0.5b"], seq_len=512)
    assert plan.use_vllm and plan.vllm_mode == "server"
    args = trl_config.build(cfg, plan).validate()
    assert (args.vllm_server_host, args.vllm_server_port, args.vllm_group_port) == (
        "10.0.0.7",
        8123,
        51300,
    )


def test_bad_ports_are_reported_by_field(tmp_path):
    from shop_r1_doctor.errors import ToolError

    with pytest.raises(ToolError) as err:
        load_config("grpo", flags={"vllm_server_port": 0, "vllm_group_port": 70000})
    assert "vllm_server_port: must be a TCP port" in str(err.value)
    assert "vllm_group_port: must be a TCP port" in str(err.value)
    with pytest.raises(ToolError, match="vllm_group_port: 8000 is also vllm_server_port"):
        load_config("grpo", flags={"vllm_group_port": 8000})


@pytest.mark.parametrize(
    ("task", "gpus", "nodes", "vllm", "procs"),
    [
        ("sft", 4, 1, False, 4),
        ("sft", 4, 2, False, 8),
        ("sft", 1, 3, False, 3),
        ("grpo", 4, 2, False, 8),
        ("grpo", 4, 2, True, 8),  # several nodes: vLLM colocated in each process
        ("grpo", 4, 1, True, 3),  # one node: one GPU serves vLLM
    ],
)
def test_generated_config_loads_as_the_trainer_loads_it_under_accelerate(
    tmp_path, monkeypatch, task, gpus, nodes, vllm, procs
):
    """Every process accelerate starts loads `run.config.yaml` with WORLD_SIZE set to the
    `--num_processes` the script passed: on several nodes that is the count of all nodes."""
    import re

    import yaml

    from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch
    from shop_r1_doctor.profiles.model import get_profile

    req = LaunchRequest(
        task=task,
        profile=get_profile("hopper"),
        python="/opt/venv/bin/python3",
        gpus=gpus,
        nodes=nodes,
        data="sessions.jsonl",
        vllm_available=vllm,
    )
    files = render_launch(plan_launch(req), "run.sh").files
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    launched = re.findall(
        r'accelerate\.commands\.launch .*--num_processes "(\d+)"', files["run.sh"]
    )
    assert launched == [str(procs)]
    assert yaml.safe_load(files["run.accelerate.yaml"])["num_processes"] == procs
    monkeypatch.setenv("WORLD_SIZE", launched[0])
    cfg, source = load_config(task, yaml_path=tmp_path / "run.config.yaml")
    assert cfg.num_processes == procs and source["num_processes"] == str(
        tmp_path / "run.config.yaml"
    )
