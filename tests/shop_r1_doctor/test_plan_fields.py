"""`--plan FILE`: YAML or JSON; every unknown or mistyped field is named (file, line, field)."""

from __future__ import annotations

import ast
import re

import pytest
from repo_paths import ROOT

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.plan import load_plan
from shop_r1_doctor.runplan import FIELDS, RUNPLAN_SCHEMA, PlanShape, RunPlan, decode_plan
from shop_r1_doctor.schema import FieldError


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
            "p.yaml:2: num_generations: expected an integer, got 'eight'",
        ),
        ("bf16: 1\n", "p.yaml:1: bf16: expected true/false, got 1"),
        ("num_generations: true\n", "p.yaml:1: num_generations: expected an integer, got True"),
        (
            "vllm_mode: remote\n",
            "p.yaml:1: vllm_mode: expected one of server, colocate, got 'remote'",
        ),
        ("vllm_gpu_memory_utilization: 1.5\n", "vllm_gpu_memory_utilization: 1.5 is not in (0, 1]"),
        ("modle: x\n", "p.yaml:1: modle: unknown plan field; did you mean 'model'?"),
        ("zzzz: x\n", "p.yaml:1: zzzz: unknown plan field; known fields are in docs/doctor.md"),
        ("env_refs: [HOME, 7]\n", "p.yaml:1: env_refs: expected a list of env var names"),
        ("- a\n- b\n", "a plan must be a mapping"),
        ("task: [grpo\n", "not valid YAML"),
        ("schema: shop-r1.runplan/2\n", "p.yaml:1: schema: 'shop-r1.runplan/2' is not supported"),
        ("schema: shop-r1.snapshot/1\n", "p.yaml:1: schema: 'shop-r1.snapshot/1' is not a shop-r1"),
        ("model_shape: {params: 5}\n", "p.yaml:1: model_shape.layers: missing"),
        (
            "model_shape: {params: 5, layers: 0, hidden: 1, heads: 1, kv_heads: 1,"
            " intermediate: 1, vocab: 1}\n",
            "p.yaml:1: model_shape.layers: expected a positive integer, got 0",
        ),
        ("plan:\n  task: grpo\n  bf16: 1\n", "p.yaml:3: bf16: expected true/false, got 1"),
    ],
)
def test_bad_plans_name_file_line_and_field(tmp_path, text, message):
    with pytest.raises(ToolError) as err:
        load_plan(_write(tmp_path, "p.yaml", text))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_plan_file_reports_every_error_at_once(tmp_path):
    text = "schema: shop-r1.runplan/2\ntask: grpo\nbf16: 1\nmodle: x\nvllm_mode: remote\n"
    with pytest.raises(ToolError) as err:
        load_plan(_write(tmp_path, "p.yaml", text))
    where = re.findall(rf"{re.escape(str(tmp_path / 'p.yaml'))}:(\d+): (\w+): ", str(err.value))
    assert where == [("1", "schema"), ("3", "bf16"), ("4", "modle"), ("5", "vllm_mode")]


def test_a_loaded_snapshot_names_the_plan_field(tmp_path):
    from shop_r1_doctor.snapshot import load_snapshot

    path = _write(
        tmp_path,
        "s.json",
        '{"schema": "shop-r1.snapshot/1", "gpus": [], "plan": {"bf16": "yes", "num_gpus": 2}}',
    )
    with pytest.raises(ToolError) as err:
        load_snapshot(path)
    assert str(err.value) == (
        f"{path}: plan.bf16: expected true/false, got 'yes'; "
        f"{path}: plan.num_gpus: unknown plan field; known fields are in docs/doctor.md"
    )


# --- the RunPlan contract: every field is read by some check ---------------------------


def _fields_read_by_checks() -> set[str]:
    """`facts.plan.<field>` anywhere in the checks (mypy proves each field exists)."""
    return {
        node.attr
        for path in (ROOT / "shop_r1_doctor" / "checks").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "plan"
        and getattr(node.value.value, "id", None) == "facts"
    }


def test_every_plan_field_is_read_by_a_check():
    """A field that no check reads is a promise nothing keeps: drop it or check it."""
    assert set(FIELDS) - _fields_read_by_checks() == set()


def test_producers_get_the_value_rules_and_write_known_fields_only():
    with pytest.raises(FieldError, match=r"1\.5 is not in \(0, 1\]"):
        RunPlan(vllm_gpu_memory_utilization=1.5)
    with pytest.raises(FieldError, match="expected a positive integer, got 0"):
        PlanShape(params=0, layers=1, hidden=1, heads=1, kv_heads=1, intermediate=1, vocab=1)
    with pytest.raises(TypeError):
        RunPlan(dataset_path="x")  # type: ignore[call-arg]
    plan = RunPlan(task="sft", bf16=True, model_shape=None)
    assert plan.to_dict() == {"task": "sft", "bf16": True}
    assert plan.to_file() == {"schema": RUNPLAN_SCHEMA, "task": "sft", "bf16": True}
    assert decode_plan(plan.to_file()) == plan


def test_a_plan_round_trips_byte_for_byte(tmp_path):
    """The snapshot's plan section is written back as it was read: field order, a file's
    integer weight, the trainer's full shape."""
    import json

    text = (
        '{"task": "grpo", "model_shape": {"params": 5, "layers": 1, "hidden": 8, "heads": 1,'
        ' "kv_heads": 1, "intermediate": 8, "vocab": 9, "tied_embeddings": false,'
        ' "head_dim": 0, "name": ""}, "self_certainty_weight": 1,'
        ' "vllm_gpu_memory_utilization": 0.5, "env_refs": ["HOME"]}'
    )
    assert json.dumps(load_plan(_write(tmp_path, "p.json", text))) == text


def test_docs_list_every_plan_field():
    doc = (ROOT / "docs" / "doctor.md").read_text()
    assert [f for f in FIELDS if f"| `{f}` |" not in doc] == []


def test_disk_check_finds_a_relative_output_dir_the_probe_resolved():
    """The host probe records `cwd/output_dir`; a plan says `runs/grpo`."""
    from shop_r1_doctor.checks import run_checks

    snap = {
        "host": {"disk_free_bytes": {"/srv/proj": 500 * 2**30, "/srv/proj/runs/grpo": 2**30}},
        "plan": {"output_dir": "runs/grpo", "model_params": 500_000_000, "save_total_limit": 2},
    }
    assert "DISK_FULL_AT_CHECKPOINT" in {f.code for f in run_checks(snap)}
