"""Every value rule of the run configs at its boundary: the last valid value loads, the
first invalid one is a one-line error naming the field, the value and the rule."""

from __future__ import annotations

import pytest

from shop_r1.config import GRPORunConfig, SFTRunConfig
from shop_r1_doctor.errors import ToolError

# (field, last valid value, first invalid value, error text)
COMMON = [
    ("global_batch_size", 1, 0, "global_batch_size: must be >= 1, got 0"),
    ("logging_steps", 1, 0, "logging_steps: must be >= 1, got 0"),
    ("save_steps", 1, 0, "save_steps: must be >= 1, got 0"),
    ("num_processes", 1, 0, "num_processes: must be >= 1, got 0"),
    ("micro_batch_size", 1, 0, "micro_batch_size: must be >= 1 or 'auto', got 0"),
    (
        "gradient_accumulation_steps",
        1,
        0,
        "gradient_accumulation_steps: must be >= 1 or 'auto', got 0",
    ),
    ("test_fraction", 0.0, -0.01, "test_fraction: must be in [0, 1), got -0.01"),
    ("test_fraction", 0.99, 1.0, "test_fraction: must be in [0, 1), got 1.0"),
    ("learning_rate", 1e-9, 0.0, "learning_rate: must be > 0, got 0.0"),
    ("warmup_ratio", 0.0, -0.1, "warmup_ratio: must be in [0, 1), got -0.1"),
    ("warmup_ratio", 0.99, 1.0, "warmup_ratio: must be in [0, 1), got 1.0"),
    ("gpu_memory_headroom", 0.1, 0.09, "gpu_memory_headroom: must be in [0.1, 1], got 0.09"),
    ("gpu_memory_headroom", 1.0, 1.01, "gpu_memory_headroom: must be in [0.1, 1], got 1.01"),
    ("save_total_limit", 1, 0, "save_total_limit: must be >= 1, got 0"),
    ("max_steps", 1, 0, "max_steps: must be -1 (use epochs) or >= 1, got 0"),
    ("max_steps", -1, -2, "max_steps: must be -1 (use epochs) or >= 1, got -2"),
]
SFT_ONLY = [("max_length", 16, 15, "max_length: must be >= 16, got 15")]
GRPO_ONLY = [
    ("max_completion_length", 1, 0, "max_completion_length: must be >= 1, got 0"),
    ("temperature", 0.01, 0.0, "temperature: must be > 0, got 0.0"),
    ("beta", 0.0, -0.01, "beta: must be >= 0, got -0.01"),
    ("rouge_threshold", 1.0, 1.01, "rouge_threshold: must be in (0, 1], got 1.01"),
    ("rouge_threshold", 0.01, 0.0, "rouge_threshold: must be in (0, 1], got 0.0"),
    ("vllm_server_port", 1, 0, "vllm_server_port: must be a TCP port in [1, 65535], got 0"),
    (
        "vllm_server_port",
        65535,
        65536,
        "vllm_server_port: must be a TCP port in [1, 65535], got 65536",
    ),
    (
        "vllm_group_port",
        65535,
        65536,
        "vllm_group_port: must be a TCP port in [1, 65535], got 65536",
    ),
    (
        "vllm_gpu_memory_utilization",
        0.05,
        0.04,
        "vllm_gpu_memory_utilization: must be in [0.05, 0.95] or 'auto', got 0.04",
    ),
    (
        "vllm_gpu_memory_utilization",
        0.95,
        0.96,
        "vllm_gpu_memory_utilization: must be in [0.05, 0.95] or 'auto', got 0.96",
    ),
    ("num_generations", 2, 1, "num_generations: must be >= 2, got 1 (with one completion"),
]
ROWS = [(SFTRunConfig, *r) for r in COMMON + SFT_ONLY] + [
    (GRPORunConfig, *r) for r in COMMON + GRPO_ONLY
]

# extra settings a row needs so that only its own rule can fail
EXTRA = {
    (GRPORunConfig, "global_batch_size"): {"num_generations": 1},  # 1 and 0 are multiples of 1
    (GRPORunConfig, "num_generations"): {"global_batch_size": 64},
}


def _make(cls, field, value):
    extra = dict(EXTRA.get((cls, field), {}))
    if cls is GRPORunConfig and field == "global_batch_size":
        # num_generations 1 is invalid for GRPO: only check the batch rule's message
        extra = {"num_generations": 2} if value % 2 == 0 else {}
    return cls(**{**extra, field: value})


@pytest.mark.parametrize(
    ("cls", "field", "good", "bad", "message"),
    ROWS,
    ids=[f"{r[0].__name__}-{r[1]}-{r[3]}" for r in ROWS],
)
def test_value_rule_boundary(cls, field, good, bad, message):
    if cls is GRPORunConfig and field == "global_batch_size":
        good = 2  # the smallest GRPO batch: one group of two
    assert getattr(_make(cls, field, good), field) == good
    with pytest.raises(ToolError) as err:
        _make(cls, field, bad)
    text = str(err.value)
    assert text.startswith(f"{cls.__name__}: ") and message in text
    assert "\n" not in text


def test_several_errors_are_joined_on_one_line():
    with pytest.raises(ToolError) as err:
        GRPORunConfig(temperature=0.0, beta=-1.0, vllm_server_host="")
    text = str(err.value)
    assert text == (
        "GRPORunConfig: temperature: must be > 0, got 0.0; beta: must be >= 0, got -1.0; "
        "vllm_server_host: empty; give the server's address (e.g. 127.0.0.1)"
    )


def test_grpo_group_rules():
    with pytest.raises(
        ToolError, match="global_batch_size: 60 is not a multiple of num_generations 8"
    ):
        GRPORunConfig(global_batch_size=60)
    with pytest.raises(
        ToolError, match="generation_batch_size: 20 is not a multiple of num_generations 8"
    ):
        GRPORunConfig(generation_batch_size=20)
    assert GRPORunConfig(generation_batch_size=24).generation_batch_size == 24
    with pytest.raises(ToolError, match="vllm_group_port: 8000 is also vllm_server_port"):
        GRPORunConfig(vllm_server_port=8000, vllm_group_port=8000)
    assert GRPORunConfig(max_steps=-1, num_train_epochs=0.5).num_train_epochs == 0.5
    with pytest.raises(ToolError, match="num_train_epochs: must be > 0, got 0"):
        SFTRunConfig(max_steps=-1, num_train_epochs=0)
    assert SFTRunConfig(max_steps=5, num_train_epochs=0).max_steps == 5  # epochs unused then


# (config, field, value, the whole one-line error)
TYPE_ROWS = [
    (
        SFTRunConfig,
        "micro_batch_size",
        "big",
        "SFTRunConfig: micro_batch_size: expected int | 'auto', got 'big'",
    ),
    (SFTRunConfig, "learning_rate", "x", "SFTRunConfig: learning_rate: expected float, got 'x'"),
    (
        SFTRunConfig,
        "gradient_checkpointing",
        "maybe",
        "SFTRunConfig: gradient_checkpointing: expected 'auto' | 'on' | 'off', got 'maybe'",
    ),
    (
        SFTRunConfig,
        "liger_kernel",
        3,
        "SFTRunConfig: liger_kernel: expected 'auto' | 'on' | 'off', got 3",
    ),
    (SFTRunConfig, "report_to", None, "SFTRunConfig: report_to: expected str, got None"),
    (SFTRunConfig, "seed", 1.5, "SFTRunConfig: seed: expected int, got 1.5"),
    (SFTRunConfig, "num_processes", True, "SFTRunConfig: num_processes: expected int, got True"),
    (
        GRPORunConfig,
        "vllm_mode",
        "x",
        "GRPORunConfig: vllm_mode: expected 'auto' | 'colocate' | 'server', got 'x'",
    ),
]


@pytest.mark.parametrize(("cls", "field", "value", "message"), TYPE_ROWS)
def test_type_errors_name_the_expected_type(cls, field, value, message):
    with pytest.raises(ToolError) as err:
        cls(**{field: value})
    assert str(err.value) == message


def test_one_process_still_needs_a_dividing_micro_batch():
    with pytest.raises(
        ToolError, match="micro_batch_size: 3 does not divide the 64 rows per process"
    ):
        SFTRunConfig(micro_batch_size=3)
    with pytest.raises(ToolError, match=r"set one of them to 'auto'$"):
        SFTRunConfig(micro_batch_size=8, gradient_accumulation_steps=4)
    with pytest.raises(ToolError, match=r"the weight-sync group needs its own port$"):
        GRPORunConfig(vllm_server_port=9000, vllm_group_port=9000)
