"""benchmarks/plot_run.py on real TensorBoard logs: an H100 GRPO run of SmolLM2-135M
(benchmarks/results/h100_learning_smollm2_2026-11-22/lr1e-6/) and a tiny CPU GRPO run of `shop-r1 demo`'s
pipeline (tests/fixtures/tensorboard/, see its README)."""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES, ROOT, load_script

pytest.importorskip("tensorboard")

plot_run = load_script("benchmarks/plot_run.py")

H100 = ROOT / "benchmarks/results/h100_learning_smollm2_2026-11-22/lr1e-6"
TINY = FIXTURES / "tensorboard"
PNG = b"\x89PNG\r\n\x1a\n"


def _curves(path):
    return plot_run.grpo_curves(plot_run.read_scalars(path), path)


def test_h100_run_curves_are_trl_logs_in_step_order():
    curves = _curves(H100 / "grpo_T06.tfevents")
    steps = [s for s, _ in curves["reward"]]
    # logging_steps 2 over 30 steps, plus TRL's log of the first step
    assert steps == [1, *range(2, 31, 2)]
    assert curves["reward"][0][1] == pytest.approx(266.43, abs=0.01)
    # TRL's reward is the sum of the component means (weights 1): the tags line up by step
    for k, (step, total) in enumerate(curves["reward"]):
        parts = [curves["components"][c][k] for c in plot_run.COMPONENTS]
        assert all(s == step for s, _ in parts)
        assert sum(v for _, v in parts) == pytest.approx(total, rel=1e-5)
    assert all(v == pytest.approx(0.5, abs=0.01) for _, v in curves["components"]["format"])
    assert len(curves["exact_match"]) == len(steps)


def test_tiny_cpu_run_matches_what_the_trainer_recorded_itself():
    # the same run's summary.json (SummaryCallback: every logged reward and exact match)
    path = plot_run.event_file(TINY)
    assert path.name.startswith("events.out.tfevents.")
    curves = _curves(path)
    summary = json.loads((TINY / "summary.json").read_text())
    recorded = summary["reward_curve"]
    assert [s for s, _ in curves["reward"]] == [p["step"] for p in recorded]
    assert len(recorded) == summary["steps"]
    for (_, reward), (_, exact), point in zip(
        curves["reward"], curves["exact_match"], recorded, strict=True
    ):
        assert reward == pytest.approx(point["reward"], abs=2e-4)
        assert exact == pytest.approx(point["exact_match"], abs=2e-4)
    assert any(p["reward"] > 0 for p in recorded), "the fixture run earned no reward"


def test_an_sft_log_is_refused_with_one_line(tmp_path, capsys):
    sft = TINY / "sft.tfevents"
    assert plot_run.main(["--events", str(sft), "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plot_run: --events") and "no train/reward" in err
    assert "\n" not in err and not list(tmp_path.iterdir())


def test_missing_and_foreign_inputs_exit_2(tmp_path, capsys):
    assert plot_run.main(["--events", str(tmp_path / "nope"), "--out-dir", str(tmp_path)]) == 2
    garbage = tmp_path / "x.tfevents"
    garbage.write_bytes(b"not an event file\n")
    assert plot_run.main(["--events", str(garbage), "--out-dir", str(tmp_path)]) == 2
    bad = tmp_path / "m.json"
    bad.write_text('{"schema": "other/1"}')
    assert plot_run.main(["--eval", str(bad), "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [e.split(":")[0] for e in err] == ["plot_run"] * 3
    assert "no such file or folder" in err[0] and "no train/reward" in err[1]
    assert "score/1" in err[2]


def test_eval_files_give_labelled_stages():
    sft = plot_run.read_stages(f"SFT={H100 / 'sft_metrics.json'}")
    assert [label for label, _ in sft] == ["SFT"] and sft[0][1]["n"] == 240
    grpo = plot_run.read_stages(f"T0.6={H100 / 'learnT06.json'}")
    assert [label for label, _ in grpo] == ["T0.6: SFT + GRPO"]
    assert grpo[0][1]["exact_match"] == pytest.approx(100 / 240)


def test_tiny_run_eval_files_are_the_before_and_after_stages():
    stages = plot_run.read_stages(f"SFT={TINY / 'eval-sft.json'}") + plot_run.read_stages(
        f"SFT + GRPO={TINY / 'eval-grpo.json'}"
    )
    assert [label for label, _ in stages] == ["SFT", "SFT + GRPO"]
    for _, m in stages:
        assert sum(m["per_type"][t]["support"] for t in plot_run.TYPES) == m["n"] == 64


def test_both_pngs_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    rc = plot_run.main(
        [
            "--events",
            str(TINY),
            "--eval",
            f"SFT={TINY / 'eval-sft.json'}",
            "--eval",
            f"SFT + GRPO={TINY / 'eval-grpo.json'}",
            "--eval",
            str(H100 / "learnT06.json"),
            "--out-dir",
            str(tmp_path),
            "--name",
            "t",
        ]
    )
    assert rc == 0
    for name in ("t_curves.png", "t_per_type.png"):
        data = (tmp_path / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000
