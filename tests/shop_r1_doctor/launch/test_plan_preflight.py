"""Every launch layout on the recorded machines: its preflight passes where `train` runs.

For each recorded machine (H100 without flash-attn or vLLM, 2x H200 without vLLM, CPU,
and an H100 and a 2x H200 with flash-attn + vLLM), every task, GPU count and way of choosing the profile (`--auto`:
matched from the facts; `--profile NAME`) is planned on the machine's own facts (vLLM
installed or not, consumer GPUs) and rendered like `shop-r1 launch` does. Each layout
either passes its preflight or is refused with one line:

- sft/grpo: the script's preflight is `train --dry-run` with the run's own arguments,
  i.e. the trainer's `prepare` (auto-configuration on the machine's facts + the doctor's
  checks), computed here on the snapshot; the RunPlan written next to the script never
  claims a value that `train`'s plan contradicts, and `doctor --plan` on it finds no
  error that `train` would not find.
- every layout that is written passes on its machine (no errors beyond the machine's own):
  where vLLM is absent GRPO generates with transformers;
- eval/vllm-server: `doctor --plan` on the written plan finds no new error; a vLLM server
  on a machine without vLLM is refused (`launch vllm-server: vLLM is not available ...`).

Regression: `launch grpo --profile hopper` assumed the profile's vLLM was installed, so on
the recorded H100 without vLLM its preflight stopped with VLLM_REQUESTED_NOT_INSTALLED.

Regression: `launch grpo --profile hopper` on the H100 without flash-attn used to write
`attn_implementation: flash_attention_2` and stop with FA_REQUESTED_NOT_INSTALLED while
`train` chose sdpa and ran.
"""

from __future__ import annotations

import json

import pytest
import yaml
from machines import machine_snapshot, snapshot_path

from shop_r1.config import load_config
from shop_r1.preflight import prepare
from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch
from shop_r1_doctor.launch.plan import layout_from_facts
from shop_r1_doctor.launch.script import sibling_names, train_args
from shop_r1_doctor.memory import KNOWN_SHAPES
from shop_r1_doctor.plan import load_plan
from shop_r1_doctor.profiles.model import get_profile
from shop_r1_doctor.runplan import RUNPLAN_SCHEMA

# recorded on the lent machines (h100, h200x2) or built for the trainer's tests
MACHINES = ["h100", "h200x2", "cpu", "h100-fa-vllm", "h200x2-fa-vllm"]
ROWS = [{"prompt": [{"role": "user", "content": "p"}], "completion": [], "gold_action": "{}"}] * 512
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def _layouts():
    for machine in MACHINES:
        facts = Facts(machine_snapshot(machine))
        profile, n_gpus, vllm, consumer = layout_from_facts(facts)
        for task in ("sft", "grpo", "eval", "vllm-server"):
            for gpus in range(1, n_gpus + 1) if n_gpus else [0]:
                yield pytest.param(
                    machine, profile, task, gpus, vllm, consumer,
                    id=f"{machine}-{task}-{gpus}gpu",
                )  # fmt: skip


def _launch(tmp_path, profile, task, gpus, vllm, consumer, config=None):
    req = LaunchRequest(
        task=task,
        profile=get_profile(profile),
        python="/opt/venv/bin/python3",
        gpus=gpus,
        model=MODEL,
        data="sessions.jsonl",
        output_dir=str(tmp_path / "out"),
        vllm_available=vllm,
        consumer_gpus=consumer,
        config=config or {},
    )
    plan = plan_launch(req)
    files = render_launch(plan, "run.sh").files
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return plan, files


def _train(tmp_path, task, snapshot):
    """What `train <task> --config run.config.yaml --dry-run` decides on this machine."""
    cfg, _ = load_config(
        task,
        yaml_path=tmp_path / "run.config.yaml",
        flags={"model": MODEL, "data": "sessions.jsonl", "output_dir": str(tmp_path / "out")},
    )
    return prepare(cfg, snapshot=snapshot, rows=(ROWS, []), shape=KNOWN_SHAPES["0.5b"], seq_len=512)


def _doctor_errors(tmp_path, snapshot):
    """What `doctor --plan run.plan.json` finds (the file read back through the contract)."""
    data = json.loads((tmp_path / "run.plan.json").read_text())
    assert data["schema"] == RUNPLAN_SCHEMA
    plan = load_plan(tmp_path / "run.plan.json")
    return sorted({f.code for f in run_checks({**snapshot, "plan": plan}) if f.severity == "error"})


@pytest.mark.parametrize(
    ("machine", "profile", "task", "gpus", "vllm", "consumer"), list(_layouts())
)
def test_launch_preflight_passes_where_train_runs(
    tmp_path, machine, profile, task, gpus, vllm, consumer
):
    snapshot = machine_snapshot(machine)
    facts = Facts(snapshot)
    if task == "vllm-server" and not vllm:  # refused, in one line, before writing
        with pytest.raises(ToolError) as err:
            _launch(tmp_path, profile, task, gpus, vllm, consumer)
        reason = str(err.value)
        assert reason.startswith("launch vllm-server: vLLM is not available") and "\n" not in reason
        assert facts.installed("vllm") is not True or facts.import_ok("vllm") is False
        assert not (tmp_path / "run.sh").exists()
        return
    plan, files = _launch(tmp_path, profile, task, gpus, vllm, consumer)
    # errors of the machine itself, whatever runs (the vLLM snapshot pins another torch)
    machine_errors = {f.code for f in run_checks(snapshot) if f.severity == "error"}
    doctor = _doctor_errors(tmp_path, snapshot)
    if task in ("eval", "vllm-server"):
        assert 'doctor --plan "$HERE/run.plan.json"' in files["run.sh"]
        assert set(doctor) <= machine_errors
        return
    # the script's preflight is the run's own `train`, with the run's own arguments
    args = train_args(sibling_names("run.sh"), plan)
    assert f"train {task} {args} --dry-run" in files["run.sh"]
    assert f"train {task} {args} \\" in files["run.sh"]
    prepared = _train(tmp_path, task, snapshot)
    train = sorted({f.code for f in prepared.errors()})
    # the written plan never contradicts what `train` will actually run ...
    ran = prepared.snapshot["plan"]
    contradicts = {k: (v, ran[k]) for k, v in plan.doctor_plan.items() if k in ran and ran[k] != v}
    assert contradicts == {}
    # ... so `doctor --plan` on it stops nothing that `train` would run
    assert set(doctor) <= set(train), (doctor, train)
    # a layout planned on this machine's own facts runs here
    assert set(train) - machine_errors == set() and set(doctor) <= machine_errors
    if task == "grpo":  # resolved by the preflight on the target, whatever generated it
        assert plan.run_config["use_vllm"] == "auto"
        assert (plan.generation == "transformers") is (not vllm)


def test_hopper_profile_on_h100_without_flash_attn_runs_sdpa(tmp_path):
    """The bug: the plan asked for the profile's flash_attention_2; train chose sdpa."""
    snapshot = machine_snapshot("h100")
    assert get_profile("hopper").attention == "flash_attention_2"
    plan, _ = _launch(tmp_path, "hopper", "grpo", 1, vllm=False, consumer=False)
    assert "attn_implementation" not in plan.doctor_plan
    assert _doctor_errors(tmp_path, snapshot) == []
    prepared = _train(tmp_path, "grpo", snapshot)
    assert prepared.plan.attn_implementation == "sdpa" and prepared.errors() == []


def test_a_fixed_attention_is_planned_and_stops_both_alike(tmp_path):
    """A user's config that fixes flash_attention_2 on that H100: both preflights stop."""
    snapshot = machine_snapshot("h100")
    config = {"attn_implementation": "flash_attention_2"}
    plan, files = _launch(tmp_path, "hopper", "sft", 1, False, False, config=config)
    assert plan.doctor_plan["attn_implementation"] == "flash_attention_2"
    assert yaml.safe_load(files["run.config.yaml"])["attn_implementation"] == "flash_attention_2"
    train = {f.code for f in _train(tmp_path, "sft", snapshot).errors()}
    assert "FA_REQUESTED_NOT_INSTALLED" in train
    assert "FA_REQUESTED_NOT_INSTALLED" in _doctor_errors(tmp_path, snapshot)


# `shop-r1 launch --profile NAME --snapshot FILE`: the named profile, the recorded facts
# (H100 with no vLLM); (argv tail, the run config's use_vllm or the one-line refusal)
CLI_CASES = [
    (["grpo", "--profile", "hopper", "--gpus", "2"], "auto"),
    (["grpo", "--profile", "hopper"], "auto"),
    (["grpo", "--auto"], "auto"),
    (
        ["vllm-server", "--profile", "hopper"],
        "launch vllm-server: vLLM is not available (not installed on snapshot {snap}); "
        "install it there: {python} -m pip install vllm=={vllm}",
    ),
]


@pytest.mark.parametrize(("argv", "want"), CLI_CASES, ids=[" ".join(c[0]) for c in CLI_CASES])
def test_launch_profile_plans_on_the_target_facts(tmp_path, argv, want):
    import sys

    from typer.testing import CliRunner

    from shop_r1.cli import app
    from tests.cli_errors import error_line

    snap = snapshot_path("h100")
    script = tmp_path / "run.sh"
    result = CliRunner().invoke(app, ["launch", *argv, "--snapshot", str(snap), "-o", str(script)])
    if argv[0] == "vllm-server":
        vllm = get_profile("hopper").vllm
        # the target's own interpreter (from its snapshot), not this machine's
        target_python = machine_snapshot("h100")["host"]["python"]["executable"]
        assert target_python != sys.executable
        expected = want.format(snap=snap, python=target_python, vllm=vllm)
        assert error_line(result) == f"shop-r1: error: {expected}"
        assert not script.exists()
        return
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((tmp_path / "run.config.yaml").read_text())
    assert config["use_vllm"] == want
    assert f"planned on the facts of snapshot {snap}: vLLM not installed" in result.output
    # and `train --dry-run`'s decision on the same facts stops nothing
    prepared = _train(tmp_path, "grpo", machine_snapshot("h100"))
    assert prepared.errors() == []
