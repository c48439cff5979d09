"""The GRPO rollout watch (shop_r1.watch) and its log signature, on logs recorded on the
H100 and on hand-computed decision tables."""

from __future__ import annotations

import ast
import re

import pytest
from golden import GOLDEN, finding_blocks
from repo_paths import FIXTURES

from shop_r1.watch import RolloutWatch, WatchLimits
from shop_r1_doctor.logscan import diagnose_log

LOGS = FIXTURES / "device_logs"


def _trl_dicts(text: str) -> list[dict]:
    """The metric dicts TRL printed, in order (a progress bar may precede each on its line)."""
    return [ast.literal_eval(m) for m in re.findall(r"\{'loss': .*?\}", text)]


def _watch_over(dicts: list[dict]) -> RolloutWatch:
    watch = RolloutWatch(echo=False)
    for step, logs in enumerate(dicts, 1):
        watch.observe(step, logs)
    return watch


def test_recorded_base_model_run_is_called_stuck_once_with_the_sft_fix():
    dicts = _trl_dicts((LOGS / "h100_launch_grpo_base_model.log").read_text(encoding="utf-8"))
    assert len(dicts) == 4  # 4 steps, each with frac_reward_zero_std '1'
    watch = _watch_over(dicts)
    assert [f.code for f in watch.findings] == ["GRPO_NO_REWARD_SIGNAL"]
    found = watch.findings[0]
    assert found.title.startswith("steps 1-3:")  # reported at the third stuck step, once
    assert "train sft" in (found.fix or "") and "parse failures 100%" in found.detail


def test_recorded_sft_then_grpo_run_has_reward_signal():
    text = (LOGS / "h100_learning_sft_grpo_vllm.log").read_text(encoding="utf-8")
    dicts = [d for d in _trl_dicts(text) if "frac_reward_zero_std" in d]
    assert len(dicts) == 16  # steps 1, 2, 4, ..., 30 (logging_steps 2)
    assert _watch_over(dicts).findings == []


def test_log_signature_reads_the_recorded_logs_right():
    stuck = diagnose_log((LOGS / "h100_launch_grpo_base_model.log").read_text(encoding="utf-8"))
    assert stuck.matches and stuck.matches[0].match.signature.code == "GRPO_NO_REWARD_SIGNAL"
    healthy = (LOGS / "h100_learning_sft_grpo_vllm.log").read_text(encoding="utf-8")
    codes = {m.match.signature.code for m in diagnose_log(healthy).matches}
    assert "GRPO_NO_REWARD_SIGNAL" not in codes


@pytest.mark.parametrize(
    ("zero_std", "expected"),
    [
        ([1, 1, 1], ["GRPO_NO_REWARD_SIGNAL"]),
        ([1, 1], []),  # two steps can be easy batches
        ([1, 1, 0.5, 1, 1], []),  # "in a row": a mixed step resets the count
        ([1, 1, 0.5, 1, 1, 1], ["GRPO_NO_REWARD_SIGNAL"]),
        ([0.999, 1, 1], []),
        (["1", "1.0", 1.0], ["GRPO_NO_REWARD_SIGNAL"]),  # TRL's newer string values
        ([1, 1, 1, 1, 1, 1], ["GRPO_NO_REWARD_SIGNAL"]),  # reported once
    ],
)
def test_stuck_table(zero_std, expected):
    watch = _watch_over([{"train/frac_reward_zero_std": z} for z in zero_std])
    assert [f.code for f in watch.findings] == expected


def test_stuck_without_parse_failures_does_not_blame_the_format():
    watch = _watch_over([{"frac_reward_zero_std": 1, "parse_failure_rate": 0.2}] * 3)
    assert "parse failures" not in watch.findings[0].detail
    assert "train sft" not in (watch.findings[0].fix or "")


def _mix(pred: tuple[float, float, float], gold: tuple[float, float, float]) -> dict:
    kinds = ("click", "type_and_submit", "terminate")
    logs = {f"pred_type/{k}": v for k, v in zip(kinds, pred, strict=True)}
    logs.update({f"gold_type/{k}": v for k, v in zip(kinds, gold, strict=True)})
    return logs


@pytest.mark.parametrize(
    ("steps", "collapsed"),
    [
        # the H100 run's shape: click 97-100% of rollouts, 80% of the gold
        ([_mix((0.97, 0.02, 0.01), (0.8, 0.15, 0.05))] * 5, True),
        ([_mix((0.97, 0.02, 0.01), (0.8, 0.15, 0.05))] * 4, False),  # window not full
        # exactly at both limits: 95% share, gold leaves exactly 10% to other types
        ([_mix((0.95, 0.05, 0.0), (0.9, 0.1, 0.0))] * 5, True),
        ([_mix((0.94, 0.06, 0.0), (0.8, 0.2, 0.0))] * 5, False),  # share below 95%
        ([_mix((0.99, 0.01, 0.0), (0.91, 0.09, 0.0))] * 5, False),  # the gold is one type
        # unparsed rollouts do not count: 0.48 of 0.5 parsed is 96% click
        ([_mix((0.48, 0.02, 0.0), (0.8, 0.2, 0.0))] * 5, True),
        ([_mix((0.0, 0.0, 0.0), (0.8, 0.2, 0.0))] * 5, False),  # nothing parsed: no mix
        # terminate, the paper's small-model collapse
        ([_mix((0.0, 0.02, 0.98), (0.8, 0.1, 0.1))] * 5, True),
        # healthy: the prediction mix follows the gold mix
        ([_mix((0.8, 0.15, 0.05), (0.8, 0.15, 0.05))] * 8, False),
    ],
)
def test_collapse_table(steps, collapsed):
    codes = [f.code for f in _watch_over(steps).findings]
    assert codes == (["GRPO_TYPE_COLLAPSE"] if collapsed else [])


def test_collapse_is_judged_over_the_window_not_one_step():
    healthy = _mix((0.8, 0.15, 0.05), (0.8, 0.15, 0.05))
    collapsed = _mix((1.0, 0.0, 0.0), (0.8, 0.15, 0.05))
    # one collapsed step among healthy ones: 84% click over the window
    assert _watch_over([healthy] * 4 + [collapsed]).findings == []
    watch = _watch_over([healthy] * 4 + [collapsed] * 5)
    assert [f.code for f in watch.findings] == ["GRPO_TYPE_COLLAPSE"]
    # at step 8 the window holds 1 healthy + 4 collapsed steps: (0.8 + 4) / 5 = 96% click
    assert watch.findings[0].title.startswith("steps 4-8: 96% of the rollouts predict `click`")


def test_limits_are_the_knobs():
    steps = [_mix((0.9, 0.1, 0.0), (0.7, 0.3, 0.0))] * 3
    assert _watch_over(steps).findings == []
    watch = RolloutWatch(WatchLimits(collapse_window=3, collapse_share=0.9), echo=False)
    for step, logs in enumerate(steps, 1):
        watch.observe(step, logs)
    assert [f.code for f in watch.findings] == ["GRPO_TYPE_COLLAPSE"]


def test_echo_prints_the_doctors_finding_block_to_stderr(capsys, golden):
    watch = RolloutWatch()
    for step in range(1, 5):
        watch.observe(step, {"frac_reward_zero_std": 1, "parse_failure_rate": 1})
    out = capsys.readouterr()
    assert out.out == ""  # stdout is the trainer's; the watch speaks on stderr
    # one block (render/findings.py), once, whatever the later steps say
    assert [(sev, code) for sev, code, _ in finding_blocks(out.err)] == [
        ("warning", "GRPO_NO_REWARD_SIGNAL")
    ]
    golden(GOLDEN / "findings" / "watch-no-reward-signal.txt", out.err)


def test_recorded_two_gpu_server_run_has_reward_signal():
    text = (LOGS / "h200x2_launch_grpo_server_ignore.log").read_text(encoding="utf-8")
    dicts = [d for d in _trl_dicts(text) if "frac_reward_zero_std" in d]
    assert len(dicts) == 6  # 6 steps, logging_steps 1, weight sync to `trl vllm-serve`
    assert _watch_over(dicts).findings == []
    codes = {m.match.signature.code for m in diagnose_log(text).matches}
    assert "GRPO_NO_REWARD_SIGNAL" not in codes


def test_recorded_fixed_two_gpu_script_ran_from_the_base_model_without_signal():
    text = (LOGS / "h200x2_launch_grpo_server.log").read_text(encoding="utf-8")
    dicts = [d for d in _trl_dicts(text) if "frac_reward_zero_std" in d]
    assert len(dicts) == 6
    assert [f.code for f in _watch_over(dicts).findings] == ["GRPO_NO_REWARD_SIGNAL"]
    assert "training done in 36s" in text and "error:" not in text
