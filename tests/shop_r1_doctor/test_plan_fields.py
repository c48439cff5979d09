"""`--plan FILE`: YAML or JSON, unknown or mistyped fields fail naming file, line, field."""

from __future__ import annotations

import re

import pytest
from repo_paths import ROOT

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.plan import PLAN_FIELDS, load_plan
from shop_r1_doctor.runplan import RUNPLAN_SCHEMA, RunPlan


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_plan(tmp_path):
    plan = load_plan(
        _write(tmp_path, "p.yaml", "task: grpo\nvllm_gpu_memory_utilization: 1\nbf16: true\n")
    )
    assert plan == {"task": "grpo", "vllm_gpu_memory_utilization": 1.0, "bf16": True}


def test_json_plan_under_plan_key(tmp_path):
    plan = load_plan(
        _write(tmp_path, "p.json", '{"plan": {"num_generations": 8, "env_refs": ["USER"]}}')
    )
    assert plan == {"num_generations": 8, "env_refs": ["USER"]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "task: grpo\nnum_generations: eight\n",
            "p.yaml:2: num_generations: expected integer, got 'eight'",
        ),
        ("bf16: 1\n", "p.yaml:1: bf16: expected true/false, got 1"),
        ("num_generations: true\n", "p.yaml:1: num_generations: expected integer, got True"),
        ("vllm_mode: remote\n", "p.yaml:1: vllm_mode: 'remote' is not one of server, colocate"),
        ("vllm_gpu_memory_utilization: 1.5\n", "vllm_gpu_memory_utilization: 1.5 is not in (0, 1]"),
        ("modle: x\n", "p.yaml:1: modle: unknown plan field; did you mean 'model'?"),
        ("- a\n- b\n", "a plan must be a mapping"),
        ("task: [grpo\n", "not valid YAML"),
        ("schema: shop-r1.runplan/2\n", "p.yaml:1: schema: 'shop-r1.runplan/2' is not supported"),
        ("schema: shop-r1.snapshot/1\n", "p.yaml:1: schema: 'shop-r1.snapshot/1' is not a shop-r1"),
        ("model_shape: {params: 5}\n", "p.yaml:1: model_shape.layers: missing or not a positive"),
    ],
)
def test_bad_plans_name_file_line_and_field(tmp_path, text, message):
    with pytest.raises(ToolError) as err:
        load_plan(_write(tmp_path, "p.yaml", text))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_contract_plan_fields_are_all_accepted():
    contract = [
        "task",
        "model",
        "model_params",
        "attn_implementation",
        "bf16",
        "max_length",
        "use_vllm",
        "vllm_mode",
        "num_processes",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "num_generations",
        "dataset_rows",
        "output_dir",
        "vllm_server_host",
        "vllm_gpu_memory_utilization",
    ]
    assert set(contract) <= set(PLAN_FIELDS)


# --- the RunPlan contract: what checks read == what a plan can say ---------------------

CHECKS_DIR = ROOT / "shop_r1_doctor" / "checks"
READ = re.compile(r'plan_(?:get|int|str|bool|float)\(\s*facts,\s*"([a-z0-9_]+)"')


def _fields_read_by_checks() -> set[str]:
    return {m for p in CHECKS_DIR.glob("*.py") for m in READ.findall(p.read_text())}


def test_every_plan_field_a_check_reads_is_accepted_by_plan_files():
    assert _fields_read_by_checks() - set(PLAN_FIELDS) == set()


def test_every_plan_field_is_read_by_a_check():
    """A field that no check reads is a promise nothing keeps: drop it or check it."""
    assert set(PLAN_FIELDS) - _fields_read_by_checks() == set()


def test_a_check_reading_an_undeclared_field_fails_loudly():
    from shop_r1_doctor.checks._base import plan_get
    from shop_r1_doctor.facts import Facts

    with pytest.raises(KeyError, match="not in the RunPlan contract"):
        plan_get(Facts({"plan": {"dataset_path": "x"}}), "dataset_path", str)


def test_producers_validate_like_plan_files():
    with pytest.raises(ToolError, match="RunPlan: vllm_mode: 'remote' is not one of"):
        RunPlan(vllm_mode="remote")
    with pytest.raises(TypeError):
        RunPlan(dataset_path="x")  # type: ignore[call-arg]
    plan = RunPlan(task="sft", bf16=True, model_shape=None)
    assert plan.to_dict() == {"task": "sft", "bf16": True}
    assert plan.to_file() == {"schema": RUNPLAN_SCHEMA, "task": "sft", "bf16": True}
    assert RunPlan.from_dict(plan.to_file()) == plan


def test_docs_list_every_plan_field():
    doc = (ROOT / "docs" / "doctor.md").read_text()
    assert [f for f in PLAN_FIELDS if f"| `{f}` |" not in doc] == []


def test_disk_check_finds_a_relative_output_dir_the_probe_resolved():
    """The host probe records `cwd/output_dir`; a plan says `runs/grpo`."""
    from shop_r1_doctor.checks import run_checks

    snap = {
        "host": {"disk_free_bytes": {"/srv/proj": 500 * 2**30, "/srv/proj/runs/grpo": 2**30}},
        "plan": {"output_dir": "runs/grpo", "model_params": 500_000_000, "save_total_limit": 2},
    }
    assert "DISK_FULL_AT_CHECKPOINT" in {f.code for f in run_checks(snap)}
