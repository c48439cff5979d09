"""The GPU benchmarks run end to end on CPU at the tiny shape.

They only run for real on a lent GPU machine, where a broken call costs device time: a
helper's signature changed under `grpo_step.py` (`_snapshot(cfg)`) and the first GPU
call of the next session died at once. These runs take seconds here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from repo_paths import ROOT


def _bench(args: list[str], tmp_path) -> dict:
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, *args, "--json-out", str(out)],
        cwd=ROOT / "benchmarks",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_grpo_step_runs_and_leaves_nothing_behind(tmp_path):
    result = _bench(["grpo_step.py", "--model-shape", "tiny", "--steps", "2"], tmp_path)
    assert result["generation"] == "transformers"
    assert result["mean_step_s"] > 0
    assert 0 < result["rollout_share"] < 1
    # the run's folder (model, checkpoint) is gone: on a GPU it is ~18 GB at 1.5B
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("grpo_step_")]


def test_grpo_step_runs_a_variant_beside_its_baseline(tmp_path):
    # BACKEND:KEY=VALUE: the same backend with a run-config setting on top, one child each
    results = _bench(
        [
            "grpo_step.py",
            "--model-shape",
            "tiny",
            "--steps",
            "2",
            "--generation",
            "transformers,transformers:temperature=0.9:hidden_dtype=fp32",
        ],
        tmp_path,
    )
    assert [r["generation"] for r in results] == [
        "transformers",
        "transformers:temperature=0.9:hidden_dtype=fp32",
    ]
    assert results[0]["settings"] == {}
    assert results[1]["settings"] == {"temperature": 0.9, "hidden_dtype": "fp32"}


def test_sft_speed_runs_on_real_rows(tmp_path):
    sessions = tmp_path / "s.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "data",
            "synth",
            "--sessions",
            "30",
            "-o",
            str(sessions),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    result = _bench(
        [
            "sft_speed.py",
            "--model-shape",
            "tiny",
            "--steps",
            "3",
            "--warmup",
            "1",
            "--global-batch",
            "4",
            "--modes",
            "trl-default,auto-packed,auto-packed:logging_steps=2:noguard",
            "--data",
            str(sessions),
        ],
        tmp_path,
    )
    modes = {r["mode"]: r for r in result["results"]}
    variant = "auto-packed:logging_steps=2:noguard"
    assert set(modes) == {"trl-default", "auto-packed", variant}
    assert all(r["real_tokens_per_s"] > 0 for r in modes.values())
    # a variant's settings reach TRL's args; the guard is left out only there
    assert modes[variant]["variant"] == {"logging_steps": 2} and modes[variant]["guard"] is False
    assert "variant" not in modes["auto-packed"]


def test_sft_speed_names_a_missing_data_file_in_one_line(tmp_path):
    missing = tmp_path / "sessions.jsonl"
    proc = subprocess.run(
        [sys.executable, "sft_speed.py", "--data", str(missing), "--model-shape", "tiny"],
        cwd=ROOT / "benchmarks",
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith("sft_speed: ") and str(missing) in line
