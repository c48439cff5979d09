"""`--plan FILE`: what the user is about to run, so plan-dependent failures are caught.

The file is YAML or JSON (JSON is read by the same YAML parser), a mapping of the fields
below, optionally under a top-level `plan:` key. Unknown or mistyped fields fail with
one line naming the file, the line and the field: a typo must not silently disable a
check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.yamlio import read_yaml

# field -> (accepted types, allowed values or None, help). The snapshot contract's `plan`.
PLAN_FIELDS: dict[str, tuple[tuple[type, ...], tuple[Any, ...] | None, str]] = {
    "task": ((str,), ("sft", "grpo"), "sft or grpo"),
    "model": ((str,), None, "model id or path"),
    "model_params": ((int,), None, "parameter count (when the model is not known offline)"),
    "model_shape": (
        (dict,),
        None,
        "the model's shape (params, layers, hidden, heads, kv_heads, intermediate, vocab, "
        "tied_embeddings[, head_dim]) as `shop-r1 train` reads it from config.json",
    ),
    "predicted_peak_bytes": ((int,), None, "the trainer's predicted peak GPU memory per GPU"),
    "attn_implementation": ((str,), None, "flash_attention_2, sdpa, eager, ..."),
    "bf16": ((bool,), None, "train in bf16"),
    "fp16": ((bool,), None, "train in fp16"),
    "max_length": ((int,), None, "max tokens per sample"),
    "use_vllm": ((bool,), None, "GRPO generation through vLLM"),
    "vllm_mode": ((str,), ("server", "colocate"), "TRL's vllm_mode"),
    "vllm_server_host": ((str,), None, "host the trainer connects to"),
    "vllm_server_port": ((int,), None, "vLLM server port"),
    "vllm_group_port": ((int,), None, "weight-sync group port"),
    "vllm_gpu_memory_utilization": ((float, int), None, "fraction of GPU memory for vLLM"),
    "vllm_tensor_parallel_size": ((int,), None, "vLLM tensor parallel size"),
    "vllm_enable_sleep_mode": ((bool,), None, "vLLM sleep mode in colocate mode"),
    "num_processes": ((int,), None, "training processes (accelerate/torchrun)"),
    "per_device_train_batch_size": ((int,), None, "micro batch per process"),
    "gradient_accumulation_steps": ((int,), None, "accumulation steps"),
    "steps_per_generation": ((int,), None, "GRPO steps per generation batch"),
    "num_generations": ((int,), None, "GRPO completions per prompt"),
    "scale_rewards": ((str,), ("group", "batch", "none"), "TRL GRPO reward scaling"),
    "self_certainty_weight": ((float, int), None, "weight of a confidence-style reward"),
    "dataset": ((str,), None, "dataset path or hf:// URL"),
    "dataset_rows": ((int,), None, "training rows"),
    "output_dir": ((str,), None, "where checkpoints go"),
    "save_total_limit": ((int,), None, "checkpoints kept"),
    "gradient_checkpointing": ((bool,), None, "recompute activations"),
    "dataloader_num_workers": ((int,), None, "DataLoader workers"),
    "dataloader_pin_memory": ((bool,), None, "pin host memory"),
    "torch_compile": ((bool,), None, "torch.compile the model"),
    "use_ray": ((bool,), None, "the run needs Ray"),
    "use_peft": ((bool,), None, "LoRA/PEFT training"),
    "env_refs": ((list,), None, "env vars the config references"),
}


def _type_name(types: tuple[type, ...]) -> str:
    return " or ".join(
        {
            "str": "string",
            "int": "integer",
            "float": "number",
            "bool": "true/false",
            "list": "list",
        }[t.__name__]
        for t in types
    )


def _lines(text: str) -> dict[str, int]:
    """Top-level key -> 1-based line, for error messages (best effort)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if isinstance(node, yaml.MappingNode) and len(node.value) == 1:
        key, value = node.value[0]
        if getattr(key, "value", None) == "plan" and isinstance(value, yaml.MappingNode):
            node = value
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}


def validate_plan(data: Any, source: str, lines: dict[str, int] | None = None) -> dict[str, Any]:
    lines = lines or {}
    if isinstance(data, dict) and set(data) == {"plan"}:
        data = data["plan"]
    if not isinstance(data, dict):
        raise ToolError(f"{source}: a plan must be a mapping of fields (see docs/doctor.md)")
    plan: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{source}:{lines[key]}" if key in lines else source
        spec = PLAN_FIELDS.get(str(key))
        if spec is None:
            import difflib

            close = difflib.get_close_matches(str(key), PLAN_FIELDS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else "known fields are in docs/doctor.md"
            raise ToolError(f"{where}: {key}: unknown plan field; {hint}")
        types, allowed, _ = spec
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if value is not None and not ok:
            raise ToolError(
                f"{where}: {key}: expected {_type_name(types)}, got {value!r}; fix the value"
            )
        if allowed is not None and value is not None and value not in allowed:
            raise ToolError(f"{where}: {key}: {value!r} is not one of {', '.join(allowed)}")
        if key == "env_refs" and value is not None and not all(isinstance(v, str) for v in value):
            raise ToolError(f"{where}: env_refs: expected a list of env var names")
        if key == "vllm_gpu_memory_utilization" and value is not None and not 0 < value <= 1:
            raise ToolError(f"{where}: {key}: {value} is not in (0, 1]")
        plan[str(key)] = float(value) if key == "vllm_gpu_memory_utilization" else value
    return plan


def load_plan(path: str | Path) -> dict[str, Any]:
    """A plan file (YAML or JSON: JSON is YAML) validated field by field."""
    text, data = read_yaml(path, "plan (YAML or JSON)")
    return validate_plan(data, str(path), _lines(text))
