"""Doctor findings that were false on the real H100 stack (issue 15): the colocate memory
check on a tiny real model, vLLM's import health per recorded package layout."""

from __future__ import annotations

import dataclasses
import time

import pytest
from doctor_checks_cases import COLOCATE, VLLM_OK, healthy, merge
from doctor_fakes import FAKEPKGS, dists, make_deps

from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.memory import GIB, ModelShape
from shop_r1_doctor.probes.collect import collect_snapshot
from shop_r1_doctor.probes.imports import GROUPS, probe_import_group

# The 1.44M-parameter Qwen2 of the vLLM smoke run on the H100 (hidden 256, 2 layers, vocab
# 1024): the plan predicted 10.4 GiB, the measured peak was 10.39 GiB, and the check,
# guessing a 0.5B shape from the count, said "training needs ~146.1 GiB".
TINY = ModelShape.from_config_dict(
    {
        "model_type": "qwen2",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 512,
        "vocab_size": 1024,
        "tie_word_embeddings": True,
    }
)
TINY_PLAN = {
    **COLOCATE,
    "model": "/tmp/tiny_vllm",
    "model_params": TINY.params,
    "max_length": 2048,
    "per_device_train_batch_size": 16,
    "vllm_gpu_memory_utilization": 0.1,
}


def _codes(plan: dict) -> dict[str, str]:
    findings = run_checks(Facts(merge(healthy(), {**VLLM_OK, "plan": plan})))
    return {f.code: f.title for f in findings}


def test_colocate_check_uses_the_plans_real_shape():
    shape = dataclasses.asdict(TINY)
    assert TINY.params < 2_000_000
    assert "TRL_COLOCATE_MEMORY_BUDGET" not in _codes({**TINY_PLAN, "model_shape": shape})
    # with the peak the plan predicted (10.4 GiB on the H100), still no finding
    peak = int(10.4 * GIB)
    codes = _codes({**TINY_PLAN, "model_shape": shape, "predicted_peak_bytes": peak})
    assert "TRL_COLOCATE_MEMORY_BUDGET" not in codes, codes


def test_colocate_check_quotes_the_plans_own_peak():
    """One memory model: when the plan carries its predicted peak, the finding's figure is
    that number, not a second estimate."""
    plan = {
        **TINY_PLAN,
        "model_shape": dataclasses.asdict(TINY),
        "predicted_peak_bytes": int(75.0 * GIB),
    }
    codes = _codes(plan)
    assert "training needs ~75.0 GiB" in codes["TRL_COLOCATE_MEMORY_BUDGET"], codes


def test_colocate_check_still_guesses_for_a_hand_written_plan():
    """A plan file with only `model_params` (no shape) keeps the nearest-Qwen2.5 guess: a
    3B model at 4096 tokens with vLLM taking 0.7 of the GPU does not fit."""
    plan = {**COLOCATE, "model_params": 3_090_000_000, "max_length": 4096}
    plan["vllm_gpu_memory_utilization"] = 0.7
    assert "TRL_COLOCATE_MEMORY_BUDGET" in _codes(plan)


@pytest.mark.parametrize("bad", [{"layers": 2}, {"params": "x"}])
def test_an_incomplete_shape_falls_back_to_the_guess(bad):
    plan = {**COLOCATE, "model_params": 3_090_000_000, "max_length": 4096, "model_shape": bad}
    plan["vllm_gpu_memory_utilization"] = 0.7
    codes = _codes(plan)
    assert "TRL_COLOCATE_MEMORY_BUDGET" in codes and "CHECK_FAILED" not in codes, codes


VLLM = next(g for g in GROUPS if g.key == "vllm")


@pytest.mark.parametrize(
    ("layout", "ok", "error"),
    [
        ("vllm_0_26", True, None),
        ("vllm_0_26_broken", False, "undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"),
        ("vllm_0_10", True, None),
        ("vllm_0_10_no_ops", False, "Failed to import from vllm._C"),
    ],
)
def test_vllm_import_judged_the_way_vllm_loads(tmp_path, layout, ok, error):
    """Per recorded vLLM layout: healthy ones import (0.26 has no `vllm._C`: the old probe
    called it broken), a kernel library that fails to load is an error even though vLLM
    only logs it, and the finding follows."""
    deps = make_deps(tmp_path, extra_path=(str(FAKEPKGS / layout),))
    sections, child = probe_import_group(deps, VLLM, timeout=20)
    imports = sections["imports"]
    assert imports["vllm"]["ok"] is True
    assert imports["vllm._custom_ops"]["ok"] is ok, imports
    assert (child.status == "ok") is ok, child
    fired = _codes_with({"imports": imports})
    if ok:
        assert "VLLM_IMPORT_FAILED" not in fired
    else:
        assert error in imports["vllm._custom_ops"]["error"]
        assert "VLLM_IMPORT_FAILED" in fired and error in fired["VLLM_IMPORT_FAILED"]


def _codes_with(patch: dict) -> dict[str, str]:
    findings = run_checks(Facts(merge(healthy(), {**VLLM_OK, **patch, "plan": COLOCATE})))
    return {f.code: f"{f.title}: {f.detail}" for f in findings}


def _liger_deps(tmp_path, seconds: float):
    mark = tmp_path / "liger-imports.txt"
    deps = make_deps(
        tmp_path,
        extra_path=(str(FAKEPKGS / "liger_slow"),),
        dists=dists(liger_kernel="0.8.5"),
        environ={"PATH": "", "FAKE_LIGER_MARK": str(mark), "FAKE_LIGER_SECONDS": str(seconds)},
    )
    return deps, mark


def test_optional_kernel_is_not_imported_unless_the_plan_asks(tmp_path):
    """liger_kernel's import took ~19 s on the H100 (past the 20 s probe limit) on every
    doctor run; without a plan that uses it the doctor reads its metadata only."""
    deps, mark = _liger_deps(tmp_path, seconds=30)
    start = time.perf_counter()
    snap = collect_snapshot(deps=deps, timeout=20)
    assert time.perf_counter() - start < 10
    assert not mark.exists()
    rec = snap["imports"]["liger_kernel.transformers"]
    assert rec["ok"] is None and rec["version"] == "0.8.5" and "metadata" in rec["checked"]
    assert snap["probes"]["imports.liger_kernel"]["status"] == "skipped"
    # a plan asking for Liger on an unknown import: no finding claims it is broken
    facts = Facts({**snap, "plan": {"use_liger_kernel": True}})
    assert "LIGER_REQUESTED_NOT_INSTALLED" not in {f.code for f in run_checks(facts)}


def test_optional_kernel_import_is_cached_like_the_torch_facts(tmp_path):
    deps, mark = _liger_deps(tmp_path, seconds=0)
    first = collect_snapshot(deps=deps, timeout=20, want_imports=("liger_kernel",))
    assert first["imports"]["liger_kernel.transformers"]["ok"] is True
    assert mark.read_text().count("imported") == 1
    # the next run, asked or not, answers from the cache without importing again
    for want in (("liger_kernel",), ()):
        again = collect_snapshot(deps=deps, timeout=20, want_imports=want)
        assert again["imports"]["liger_kernel.transformers"]["ok"] is True
        assert again["probes"]["imports.liger_kernel"]["detail"] == "cached"
    assert mark.read_text().count("imported") == 1
    # a new liger-kernel version is a new key: imported again
    deps2 = dataclasses.replace(deps, dists=dists(liger_kernel="0.9.0"))
    collect_snapshot(deps=deps2, timeout=20, want_imports=("liger_kernel",))
    assert mark.read_text().count("imported") == 2


def test_speed_hints_quote_the_measured_figure():
    """The GRPO speed hint comes from knowledge/measured.yaml (the H100 grpo_step run),
    not a hard-coded "roughly 8-15x"; the launch plan and the profile finding quote it."""
    from shop_r1_doctor.knowledge import grpo_vllm_speedup, load_measured

    m = load_measured().grpo_vllm_colocate
    assert m is not None
    hint = grpo_vllm_speedup()
    assert f"{m.step_speedup:g}x per GRPO step" in hint
    assert f"{m.rollout_speedup:g}x per rollout" in hint
    assert "8-15" not in hint


def test_vllm_import_is_on_demand_and_cached(tmp_path):
    """vLLM's import took ~16 s on the H100: imported only when the plan uses vLLM (train
    grpo with use_vllm auto/on, doctor --plan with use_vllm), its answer then cached."""
    deps = make_deps(
        tmp_path, extra_path=(str(FAKEPKGS / "vllm_0_26"),), dists=dists(vllm="0.26.0")
    )
    plain = collect_snapshot(deps=deps, timeout=20)
    assert plain["imports"]["vllm"]["ok"] is None
    assert plain["probes"]["imports.vllm"]["status"] == "skipped"
    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.render.facts_text import vllm_headline

    assert "not checked" in vllm_headline(Facts(plain))
    wanted = collect_snapshot(deps=deps, timeout=20, want_imports=("vllm",))
    assert wanted["imports"]["vllm._custom_ops"]["ok"] is True
    assert "imports fine" in vllm_headline(Facts(wanted))
    again = collect_snapshot(deps=deps, timeout=20)
    assert again["imports"]["vllm._custom_ops"]["ok"] is True
    assert again["probes"]["imports.vllm"]["detail"] == "cached"
