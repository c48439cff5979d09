"""The one plan of fixes: each rule has a test that fails when the rule is broken."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from machines import machine_snapshot
from repo_paths import FIXTURES
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1_doctor.diagnose import diagnose
from shop_r1_doctor.ingest import read_dump, snapshot_from_dump

THREE = FIXTURES / "fixplan" / "rtx5090-driver570.txt"  # RTX 5090, driver 570, torch cu124


def from_dump(path) -> dict:
    return snapshot_from_dump(*read_dump(str(path)))


def h100_broken() -> dict:
    """The recorded H100 venv with three packaging problems planted: a CPU torch, vLLM
    0.8.5 (another torch's pin) and transformers outside the profile's range."""
    snap = machine_snapshot("h100")
    pk = snap["packages"]
    pk["torch"] = {**pk.get("torch", {}), "version": "2.6.0+cpu"}
    snap["torch"] = {**(snap.get("torch") or {}), "version": "2.6.0+cpu", "cuda": None}
    pk["vllm"] = {"version": "0.8.5", "requires": ["torch==2.6.0"]}
    pk["flash-attn"] = {"version": "2.7.4.post1", "requires": ["torch"]}
    pk["transformers"] = {"version": "4.40.0", "requires": []}
    return snap


@pytest.fixture(scope="module")
def three():
    return diagnose(from_dump(THREE))


def commands(plan) -> list[str]:
    return [s.command for s in plan.steps if s.command]


def test_the_driver_prerequisite_comes_first(three):
    assert three.fix_plan is not None
    kinds = [(s.component, s.kind) for s in three.fix_plan.steps]
    assert kinds[0] == ("driver", "prerequisite")
    assert all(k == "install" for _, k in kinds[1:])


def test_never_a_cuda_build_the_driver_cannot_run(three):
    # driver 570.172.08 runs CUDA <= 12.8: cu128, never cu129/cu130
    torch = next(s for s in three.fix_plan.steps if s.component == "torch")
    assert "torch==2.11.0+cu128" in torch.text and torch.text.endswith("/whl/cu128")
    assert not any(re.search(r"cu129|cu13\d", c) for c in commands(three.fix_plan))
    # and the per-finding fix of the torch deviation agrees with the plan
    dev = [f for f in three.findings if f.title.startswith("torch 2.6.0")]
    assert dev and all("/whl/cu128" in f.fix for f in dev)


def test_one_flash_attn_and_one_vllm_command_at_most(three):
    for plan in (three.fix_plan, diagnose(h100_broken()).fix_plan):
        cmds = commands(plan)
        assert sum("flash-attn" in c for c in cmds) <= 1, cmds
        assert sum(re.search(r"\bvllm\b", c) is not None for c in cmds) <= 1, cmds


def test_every_command_names_the_environments_interpreter():
    d = diagnose(h100_broken())
    exe = d.snapshot["host"]["python"]["executable"]
    for c in commands(d.fix_plan):
        words = [w for w in shlex.split(c) if "=" not in w or w.startswith("-")]
        assert words[:3] == [exe, "-m", "pip"], c  # not `pip`, not `python3 -m pip`


def test_vllm_gets_the_profiles_torch_pinned_and_installs_follow_torch():
    d = diagnose(h100_broken())  # driver 580.159: the profile's cu130 runs
    order = [s.component for s in d.fix_plan.steps]
    assert order == ["torch", "vllm", "flash-attn", "libraries"], order
    vllm = d.fix_plan.steps[1].text
    assert "vllm==0.26.0" in vllm and "torch==2.11.0+cu130" in vllm
    libs = d.fix_plan.steps[3].text
    assert "transformers<6," in libs and ">=5.5.3" in libs and "torch==2.11.0+cu130" in libs


def test_vllm_that_needs_the_driver_step_is_deferred_not_installed(three):
    assert any(d.startswith("vLLM 0.26.0") for d in three.fix_plan.deferred)
    assert not any("vllm==" in c for c in commands(three.fix_plan))


def test_a_healthy_machine_off_profile_gets_information_and_no_plan():
    """An A100 on torch 2.8 + cu128, TRL 0.23, driver 570: works; the profile's stack is
    information (info), not four warnings."""
    snap = machine_snapshot("h100")
    snap["gpus"] = [
        {**g, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"} for g in snap["gpus"]
    ]
    snap["driver"] = {**snap.get("driver", {}), "version": "570.133.20"}
    pk = snap["packages"]
    pk["torch"] = {**pk["torch"], "version": "2.8.0+cu128"}
    snap["torch"] = {
        **snap["torch"],
        "version": "2.8.0+cu128",
        "cuda": "12.8",
        "capabilities": ["8.0"] * len(snap["gpus"]),
    }
    pk["trl"] = {**pk.get("trl", {}), "version": "0.23.0"}
    pk["transformers"] = {**pk.get("transformers", {}), "version": "4.56.2"}
    for name in ("vllm", "flash-attn", "torchvision"):
        pk.pop(name, None)
    snap["env"] = {k: v for k, v in snap.get("env", {}).items() if k != "TORCH_CUDA_ARCH_LIST"}
    d = diagnose(snap)
    assert d.profile == "ampere"
    devs = [f for f in d.findings if f.code == "PROFILE_DEVIATION"]
    assert devs and all(f.severity == "info" for f in devs), [(f.severity, f.title) for f in devs]
    assert d.summary.warnings == 0 and d.summary.errors == 0
    assert d.fix_plan is None


def test_a_deviation_tied_to_a_failing_check_stays_a_warning(three):
    torch_dev = next(f for f in three.findings if f.title.startswith("torch 2.6.0"))
    assert torch_dev.severity == "warning"  # VLLM_WHEEL_NO_SM120: torch has no sm_120


def test_doctor_from_and_report_propose_the_same_plan(tmp_path):
    runner = CliRunner()
    saved = tmp_path / "snap.json"
    doc = runner.invoke(app, ["doctor", "--from", str(THREE), "--json", "--save", str(saved)])
    assert doc.exit_code == 1, doc.output
    doctor_plan = json.loads(doc.stdout)["fix_plan"]
    rep = runner.invoke(app, ["report", "--snapshot", str(saved), "--json"])
    assert rep.exit_code == 0, rep.output
    assert json.loads(rep.stdout)["doctor"]["fix_plan"] == doctor_plan
    assert doctor_plan["schema"] == "shop-r1.fixplan/1"
    md = runner.invoke(app, ["report", "--snapshot", str(saved)])
    for step in doctor_plan["steps"]:
        assert step["text"] in md.stdout
