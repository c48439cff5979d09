"""`--plan FILE`: YAML or JSON, unknown or mistyped fields fail naming file, line, field."""

from __future__ import annotations

import pytest

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.plan import PLAN_FIELDS, load_plan


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
