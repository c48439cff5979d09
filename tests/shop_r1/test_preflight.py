"""Each plan-dependent failure stops the run with its code, through the real CLI too."""

import json

from machines import machine_snapshot, snapshot_path
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.config import GRPORunConfig, SFTRunConfig
from shop_r1.preflight import prepare
from shop_r1_doctor.memory import KNOWN_SHAPES


def _rows(n):
    return [
        {"prompt": [{"role": "user", "content": "p"}], "completion": [], "gold_action": "{}"}
    ] * n


def _codes(prepared, ignore=()):
    return [f.code for f in prepared.errors(ignore)]


def test_dataset_smaller_than_one_step_stops_the_run(tmp_path):
    cfg = SFTRunConfig(model="m", data="d", output_dir=str(tmp_path), global_batch_size=64)
    p = prepare(
        cfg,
        snapshot=machine_snapshot("cpu"),
        rows=(_rows(10), []),
        shape=KNOWN_SHAPES["0.5b"],
        seq_len=512,
    )
    assert "TRAINER_ZERO_STEPS_TINY_DATASET" in _codes(p)
    assert _codes(p, ignore=["TRAINER_ZERO_STEPS_TINY_DATASET"]) == []


def test_grpo_counts_prompts_per_step(tmp_path):
    cfg = GRPORunConfig(
        model="m", data="d", output_dir=str(tmp_path), global_batch_size=64, num_generations=8
    )
    ok = prepare(
        cfg,
        snapshot=machine_snapshot("cpu"),
        rows=(_rows(8), []),
        shape=KNOWN_SHAPES["0.5b"],
        seq_len=256,
    )
    short = prepare(
        cfg,
        snapshot=machine_snapshot("cpu"),
        rows=(_rows(7), []),
        shape=KNOWN_SHAPES["0.5b"],
        seq_len=256,
    )
    assert "TRAINER_ZERO_STEPS_TINY_DATASET" not in _codes(ok)
    assert "TRAINER_ZERO_STEPS_TINY_DATASET" in _codes(short)


def test_model_too_large_for_the_gpu(tmp_path):
    cfg = SFTRunConfig(model="m", data="d", output_dir=str(tmp_path), master_weights="fp32")
    p = prepare(
        cfg,
        snapshot=machine_snapshot("t4"),
        rows=(_rows(100), []),
        shape=KNOWN_SHAPES["7b"],
        seq_len=4096,
    )
    assert "MODEL_TOO_LARGE_FOR_GPU" in _codes(p)
    assert p.snapshot["plan"]["model_params"] == KNOWN_SHAPES["7b"].params


def test_cli_stops_on_a_tiny_dataset_before_loading_the_model(tmp_path):
    from shop_r1.data.io import write_sessions
    from shop_r1.data.synth import generate_sessions

    write_sessions(generate_sessions(3, seed=0), tmp_path / "s.jsonl")
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
    from shop_r1.tiny import train_tokenizer

    train_tokenizer(["hello world"] * 10, vocab_size=300).save_pretrained(model)
    result = CliRunner().invoke(
        app,
        [
            "train",
            "sft",
            "--model",
            str(model),
            "--data",
            str(tmp_path / "s.jsonl"),
            "--output-dir",
            str(tmp_path / "out"),
            "--dry-run",
            "--snapshot",
            str(snapshot_path("cpu")),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "TRAINER_ZERO_STEPS_TINY_DATASET" in result.output
    assert not (tmp_path / "out").exists()


def test_self_certainty_under_group_scaling_is_flagged_only_when_set(tmp_path):
    def codes(**kw):
        cfg = GRPORunConfig(model="m", data="d", output_dir=str(tmp_path), **kw)
        p = prepare(
            cfg,
            snapshot=machine_snapshot("cpu"),
            rows=(_rows(64), []),
            shape=KNOWN_SHAPES["0.5b"],
            seq_len=256,
        )
        return [f.code for f in p.findings]

    assert "GRPO_SELF_CERTAINTY_GROUP_SCALED" not in codes()  # the default is off
    assert "GRPO_SELF_CERTAINTY_GROUP_SCALED" in codes(self_certainty_weight=0.005)
    assert "GRPO_SELF_CERTAINTY_GROUP_SCALED" not in codes(
        self_certainty_weight=0.005, scale_rewards="batch"
    )


def test_one_disk_check_from_the_plan_and_the_probed_free_disk(tmp_path):
    """The doctor's DISK_FULL_AT_CHECKPOINT is the trainer's disk check: 0.5B with fp32
    masters keeps 2 checkpoints of 12 B/param + a 4 B/param final model (~14 GiB)."""
    snap = machine_snapshot("cpu")
    cfg = SFTRunConfig(model="m", data="d", output_dir=str(tmp_path / "out"))
    rows, shape = (_rows(100), []), KNOWN_SHAPES["0.5b"]
    snap["host"] = {**snap.get("host", {}), "disk_free_bytes": {str(tmp_path): 2 * 1024**3}}
    full = prepare(cfg, snapshot=snap, rows=rows, shape=shape, seq_len=512)
    assert "DISK_FULL_AT_CHECKPOINT" in _codes(full)
    snap["host"]["disk_free_bytes"] = {str(tmp_path): 64 * 1024**3}
    roomy = prepare(cfg, snapshot=snap, rows=rows, shape=shape, seq_len=512)
    assert "DISK_FULL_AT_CHECKPOINT" not in _codes(roomy)


def test_rows_longer_than_max_length_warn_through_the_doctor(tmp_path):
    cfg = SFTRunConfig(model="m", data="d", output_dir=str(tmp_path), max_length=256)
    p = prepare(
        cfg,
        snapshot=machine_snapshot("cpu"),
        rows=(_rows(100), []),
        shape=KNOWN_SHAPES["0.5b"],
        seq_len=900,
    )
    assert [f.code for f in p.findings if f.code == "TRAINER_ROWS_TRUNCATED"] == [
        "TRAINER_ROWS_TRUNCATED"
    ]
    assert p.snapshot["plan"]["longest_sample_tokens"] == 900


def test_the_snapshot_imports_what_the_plan_decides_on():
    """Liger is decided for SFT and GRPO, vLLM for GRPO: a snapshot without the import
    plans as if it failed (GRPO planned Liger off on an H100 where it imports)."""
    from shop_r1.preflight import wanted_imports

    assert wanted_imports(SFTRunConfig()) == ("liger_kernel",)
    assert wanted_imports(GRPORunConfig()) == ("liger_kernel", "vllm")
    assert wanted_imports(GRPORunConfig(liger_kernel="on", use_vllm="off")) == ("liger_kernel",)
    assert wanted_imports(GRPORunConfig(liger_kernel="off", use_vllm="off")) == ()
    assert wanted_imports(None) == ()
