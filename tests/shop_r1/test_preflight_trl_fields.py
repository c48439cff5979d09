"""TRL fields set in a config file or with --set reach the RunPlan the doctor's checks
judge: the preflight reads the RunPlan from the keywords TRL's config is built with.

Each row: a TRL field, the snapshot edit that makes its check applicable, and the code
that must appear (or go) once the field is set; through `load_config` (YAML and --set)
and through `train --dry-run --json`."""

import json
from pathlib import Path

import pytest
from machines import machine_snapshot
from typer.testing import CliRunner

from shop_r1.config import load_config, parse_set
from shop_r1.preflight import prepare
from shop_r1_doctor.memory import KNOWN_SHAPES

pytest.importorskip("trl")


def _windows_without_triton(snap):
    snap["host"]["os"] = "windows"
    snap["packages"]["triton"] = None


def _small_disk(snap):
    snap["host"]["disk_free_bytes"] = {"/": 8 * 1024**3}


def _no_env(snap):
    snap["env"] = {}


def _expandable_segments(snap):
    snap["env"] = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}


# (id, command, machine, snapshot edit, model shape, config values, TRL field, value,
#  RunPlan value, code, present once set)
ROWS = [
    (
        "auto_find_batch_size: GRPOConfig refuses it",
        "grpo",
        "cpu",
        None,
        "0.5b",
        {},
        "auto_find_batch_size",
        True,
        True,
        "TRL_GRPO_BATCH_REFUSED",
        True,
    ),
    (
        "steps_per_generation beside the trainer's generation_batch_size: TRL refuses both",
        "grpo",
        "cpu",
        None,
        "0.5b",
        {},
        "steps_per_generation",
        2,
        2,
        "TRL_GRPO_BATCH_REFUSED",
        True,
    ),
    (
        "fsdp shards the model over 8 processes: it fits",
        "sft",
        "h100",
        None,
        "7b",
        {"num_processes": 8, "master_weights": "fp32"},
        "fsdp",
        "full_shard",
        True,
        "MODEL_TOO_LARGE_FOR_GPU",
        False,
    ),
    (
        "torch_compile on Windows without Triton",
        "sft",
        "cpu",
        _windows_without_triton,
        "0.5b",
        {},
        "torch_compile",
        True,
        True,
        "WIN_TORCH_COMPILE_NO_TRITON",
        True,
    ),
    (
        "save_only_model: checkpoints without optimizer state fit the disk",
        "sft",
        "cpu",
        _small_disk,
        "0.5b",
        {},
        "save_only_model",
        True,
        True,
        "DISK_FULL_AT_CHECKPOINT",
        False,
    ),
    (
        "vllm_tensor_parallel_size 2 with forked workers",
        "grpo",
        "h100-fa-vllm",
        _no_env,
        "0.5b",
        {"use_vllm": "on", "vllm_mode": "colocate"},
        "vllm_tensor_parallel_size",
        2,
        2,
        "VLLM_FORKED_CUDA_REINIT",
        True,
    ),
    (
        "vllm_enable_sleep_mode: the pooled allocator breaks under expandable segments",
        "grpo",
        "h100-fa-vllm",
        _expandable_segments,
        "0.5b",
        {"use_vllm": "on", "vllm_mode": "colocate"},
        "vllm_enable_sleep_mode",
        True,
        True,
        "VLLM_EXPANDABLE_SEGMENTS",
        True,
    ),
]
IDS = [r[0] for r in ROWS]

ROWS_OF_DATA = [
    {"prompt": [{"role": "user", "content": "p"}], "completion": [], "gold_action": "{}"}
] * 200


def _prepared(command, machine, edit, shape, values, tmp_path, *, yaml_text="", sets=()):
    snap = machine_snapshot(machine)
    if edit:
        edit(snap)
    path = None
    if yaml_text:
        path = tmp_path / "run.yaml"
        path.write_text(yaml_text)
    from shop_r1.config import CONFIG_CLASSES

    flags = {"model": "m", "data": "d", "output_dir": "/out", **values}
    flags.update(parse_set(list(sets), CONFIG_CLASSES[command]))
    cfg, _ = load_config(command, yaml_path=path, flags=flags)
    return prepare(
        cfg,
        snapshot=snap,
        rows=(ROWS_OF_DATA, []),
        shape=KNOWN_SHAPES[shape],
        seq_len=512,
    )


def _codes(prepared):
    return {f.code: f.severity for f in prepared.findings}


@pytest.mark.parametrize(
    "command,machine,edit,shape,values,name,value,planned,code,present",
    [r[1:] for r in ROWS],
    ids=IDS,
)
@pytest.mark.parametrize("route", ["yaml", "set"])
def test_a_trl_field_reaches_the_runplan_and_its_check(
    command, machine, edit, shape, values, name, value, planned, code, present, route, tmp_path
):
    unset = _prepared(command, machine, edit, shape, values, tmp_path)
    if route == "yaml":
        text = f"{name}: {json.dumps(value)}\n"
        set_ = _prepared(command, machine, edit, shape, values, tmp_path, yaml_text=text)
    else:
        item = f"{name}={value if not isinstance(value, bool) else str(value).lower()}"
        set_ = _prepared(command, machine, edit, shape, values, tmp_path, sets=[item])
    assert set_.snapshot["plan"][name] == planned
    assert name not in unset.snapshot["plan"]
    assert getattr(set_.args, name) == value  # the field of TRL's config that runs
    if name == "vllm_enable_sleep_mode":
        # colocated vLLM already pools memory: the check is an error either way
        assert _codes(unset)[code] == _codes(set_)[code] == "error"
    else:
        assert (code in _codes(set_)) is present
        assert (code in _codes(unset)) is not present


def test_vllm_fields_of_the_other_mode_do_not_reach_the_runplan(tmp_path):
    """TRL reads the colocate fields only when colocated and the server fields only for a
    server (trl/generation/vllm_generation.py): a field of the mode that does not run
    is not judged."""
    common = {"use_vllm": "on"}
    server = _prepared(
        "grpo",
        "h100-fa-vllm",
        _expandable_segments,
        "0.5b",
        {**common, "vllm_mode": "server"},
        tmp_path,
        sets=["vllm_enable_sleep_mode=true", "vllm_tensor_parallel_size=2"],
    )
    plan = server.snapshot["plan"]
    assert "vllm_enable_sleep_mode" not in plan and "vllm_tensor_parallel_size" not in plan
    assert _codes(server)["VLLM_EXPANDABLE_SEGMENTS"] == "warning"
    assert "VLLM_FORKED_CUDA_REINIT" not in _codes(server)
    colocate = _prepared(
        "grpo",
        "h100-fa-vllm",
        None,
        "0.5b",
        {**common, "vllm_mode": "colocate"},
        tmp_path,
        sets=["vllm_server_base_url=http://0.0.0.0:8000"],
    )
    assert "vllm_server_base_url" not in colocate.snapshot["plan"]
    assert "TRL_VLLM_SERVER_UNREACHABLE" not in _codes(colocate)
    off = _prepared(
        "grpo",
        "h100-fa-vllm",
        _no_env,
        "0.5b",
        {"use_vllm": "off"},
        tmp_path,
        sets=["vllm_tensor_parallel_size=2"],
    )
    assert "vllm_tensor_parallel_size" not in off.snapshot["plan"]
    assert "VLLM_FORKED_CUDA_REINIT" not in _codes(off)


# --- the same through the real entry point: train --dry-run --json ---

SHAPES_JSON = {
    "0.5b": {
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    "7b": {
        "hidden_size": 3584,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "intermediate_size": 18944,
        "vocab_size": 152064,
    },
}


@pytest.fixture(scope="module")
def data_and_tokenizer(tmp_path_factory):
    from shop_r1.data.io import write_sessions
    from shop_r1.data.synth import generate_sessions
    from shop_r1.tiny import train_tokenizer

    root = tmp_path_factory.mktemp("trl_fields")
    write_sessions(generate_sessions(40, seed=0), root / "s.jsonl")
    tok = train_tokenizer(["hello world"] * 10, vocab_size=300)
    return root, tok


def _model_dir(root: Path, tok, shape: str) -> Path:
    model = root / f"model-{shape}"
    if not model.is_dir():
        model.mkdir()
        config = {"model_type": "qwen2", **SHAPES_JSON[shape]}
        (model / "config.json").write_text(json.dumps(config))
        tok.save_pretrained(model)
    return model


@pytest.mark.parametrize(
    "command,machine,edit,shape,values,name,value,planned,code,present",
    [r[1:] for r in ROWS],
    ids=IDS,
)
def test_train_dry_run_judges_a_trl_field_set_with_set(
    command,
    machine,
    edit,
    shape,
    values,
    name,
    value,
    planned,
    code,
    present,
    data_and_tokenizer,
    tmp_path,
):
    from shop_r1.cli import app

    root, tok = data_and_tokenizer
    snap = machine_snapshot(machine)
    if edit:
        edit(snap)
    out = tmp_path / "out"
    # the snapshot's free disk is keyed by path: the edited one names the output's root
    if edit is _small_disk:
        snap["host"]["disk_free_bytes"] = {str(tmp_path): 8 * 1024**3}
    snap_path = tmp_path / "snap.json"
    snap_path.write_text(json.dumps(snap))
    sets = [f"{k}={v}" for k, v in values.items()]

    def dry_run(*extra):
        args = ["train", command, "--model", str(_model_dir(root, tok, shape))]
        args += ["--data", str(root / "s.jsonl"), "--output-dir", str(out)]
        args += ["--snapshot", str(snap_path), "--report-to", "none", "--dry-run", "--json"]
        args += ["--set", "context=latest", "--set", "max_prompt_tokens=100"]
        for item in [*sets, *extra]:
            args += ["--set", item]
        result = CliRunner().invoke(app, args)
        assert result.exit_code in (0, 1), result.output
        start = result.stdout.index("{")
        return {f["code"]: f["severity"] for f in json.loads(result.stdout[start:])["findings"]}

    text = str(value).lower() if isinstance(value, bool) else str(value)
    before, after = dry_run(), dry_run(f"{name}={text}")
    if name == "vllm_enable_sleep_mode":
        assert before[code] == after[code] == "error"
    else:
        assert (code in after) is present and (code in before) is not present
