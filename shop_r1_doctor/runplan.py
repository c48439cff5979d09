"""The RunPlan contract: what a run will do, for the checks that depend on it.

One typed, versioned record, produced in four places and consumed by the checks:

- `shop-r1 doctor --plan FILE` (a user's YAML/JSON file, validated here),
- `shop-r1 train`'s preflight (`shop_r1.preflight.plan_section`, from the trainer's
  auto-configuration on this machine's facts: what will actually run),
- `shop-r1 launch` (`launch/plan.py`: the GPU split, processes and vLLM layout it
  decides; settings the trainer auto-configures on the target are left out, and the
  script's preflight for sft/grpo is `train --dry-run` on the target),
- tests and recorded snapshots (the snapshot's `plan` section).

Every field is optional (absent = not known, the snapshot contract's rule). Each field
here is read by at least one check and every plan field a check reads is declared here;
`tests/shop_r1_doctor/test_plan_fields.py` holds both directions. Documented in docs/doctor.md
("The RunPlan contract").
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.schema import Reader, field_error, is_kind

RUNPLAN_SCHEMA = "shop-r1.runplan/1"
RUNPLAN_MAJOR = 1

_TYPE_NAMES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "true/false",
    "list": "list",
    "dict": "mapping",
}
# ModelShape's integer fields (shop_r1_doctor.memory) when a plan carries the full shape
SHAPE_KEYS = ("params", "layers", "hidden", "heads", "kv_heads", "intermediate", "vocab")


def _f(types: tuple[type, ...], help: str, allowed: tuple[Any, ...] | None = None) -> Any:
    return field(default=None, metadata={"types": types, "allowed": allowed, "help": help})


@dataclass(frozen=True)
class RunPlan:
    """What will run. None = not known (the check that needs it stays silent)."""

    task: str | None = _f((str,), "sft or grpo", ("sft", "grpo"))
    model: str | None = _f((str,), "model id or path")
    model_params: int | None = _f((int,), "parameter count (when the model is not known offline)")
    model_shape: dict[str, Any] | None = _f(
        (dict,), "the model's shape (params, layers, hidden, heads, kv_heads, intermediate, vocab)"
    )
    attn_implementation: str | None = _f((str,), "flash_attention_2, sdpa, eager, ...")
    bf16: bool | None = _f((bool,), "train in bf16")
    fp16: bool | None = _f((bool,), "train in fp16")
    master_fp32: bool | None = _f((bool,), "fp32 master weights with bf16/fp16 autocast")
    max_length: int | None = _f((int,), "max tokens per sample")
    predicted_peak_bytes: int | None = _f(
        (int,), "the trainer's predicted peak GPU memory per GPU (the colocate check reads it)"
    )
    longest_sample_tokens: int | None = _f(
        (int,), "tokens of the longest training sample (prompt + completion)"
    )
    gradient_checkpointing: bool | None = _f((bool,), "recompute activations")
    chunked_loss: bool | None = _f((bool,), "TRL's fused LM head (no full-vocab logits)")
    use_liger_kernel: bool | None = _f((bool,), "Liger's fused Triton kernels")
    fsdp: bool | None = _f((bool,), "FSDP shards weights/grads/optimizer over the processes")
    use_peft: bool | None = _f((bool,), "LoRA/PEFT training")
    torch_compile: bool | None = _f((bool,), "torch.compile the model")
    gradient_accumulation_fusion: bool | None = _f(
        (bool,), "Megatron's fused gradient accumulation (needs apex)"
    )
    num_processes: int | None = _f((int,), "training processes (accelerate/torchrun)")
    per_device_train_batch_size: int | None = _f((int,), "micro batch per process")
    gradient_accumulation_steps: int | None = _f((int,), "accumulation steps")
    steps_per_generation: int | None = _f((int,), "GRPO steps per generation batch")
    generation_batch_size: int | None = _f((int,), "GRPO completions per generation batch")
    num_generations: int | None = _f((int,), "GRPO completions per prompt")
    scale_rewards: str | None = _f((str,), "TRL GRPO reward scaling", ("group", "batch", "none"))
    self_certainty_weight: float | None = _f((float, int), "weight of a confidence-style reward")
    use_vllm: bool | None = _f((bool,), "GRPO generation through vLLM")
    vllm_mode: str | None = _f((str,), "TRL's vllm_mode", ("server", "colocate"))
    vllm_server_host: str | None = _f((str,), "host the trainer connects to")
    vllm_server_base_url: str | None = _f((str,), "URL the trainer connects to (instead of host)")
    vllm_server_port: int | None = _f((int,), "vLLM server port")
    vllm_group_port: int | None = _f((int,), "weight-sync group port")
    vllm_gpu_memory_utilization: float | None = _f(
        (float, int), "fraction of GPU memory for vLLM, in (0, 1]"
    )
    vllm_tensor_parallel_size: int | None = _f((int,), "vLLM tensor parallel size")
    vllm_enable_sleep_mode: bool | None = _f((bool,), "vLLM sleep mode in colocate mode")
    dataset: str | None = _f((str,), "dataset path or hf:// URL")
    dataset_rows: int | None = _f((int,), "training rows")
    output_dir: str | None = _f((str,), "where checkpoints go")
    save_total_limit: int | None = _f((int,), "checkpoints kept")
    save_only_model: bool | None = _f((bool,), "checkpoints without optimizer state")
    dataloader_num_workers: int | None = _f((int,), "DataLoader workers")
    dataloader_pin_memory: bool | None = _f((bool,), "pin host memory")
    use_ray: bool | None = _f((bool,), "the run needs Ray")
    env_refs: list[str] | None = _f((list,), "env vars the config references")

    def __post_init__(self) -> None:
        # Producers in code get the same validation as a user's file.
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                _check_value(f.name, value, "RunPlan", None)

    def to_dict(self) -> dict[str, Any]:
        """The snapshot's `plan` section: known fields only."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value
        return out

    def to_file(self) -> dict[str, Any]:
        """What a plan file holds: the schema, then the fields (`doctor --plan` reads it)."""
        return {"schema": RUNPLAN_SCHEMA, **self.to_dict()}

    @classmethod
    def from_dict(
        cls, data: Any, source: str = "<plan>", lines: Mapping[str, int] | None = None
    ) -> RunPlan:
        """Validate a mapping field by field; errors are one line `source:line: field: why`
        (schema.field_error). `lines`: key path -> line (schema.line_index)."""
        lines = lines or {}
        if isinstance(data, dict) and set(data) == {"plan"}:
            data = data["plan"]
            lines = {k[5:]: v for k, v in lines.items() if k.startswith("plan.")}
        if not isinstance(data, dict):
            raise field_error(
                source, lines.get(""), "", "a plan must be a mapping of fields (see docs/doctor.md)"
            )
        values: dict[str, Any] = {}
        for key, value in data.items():
            line = lines.get(str(key))
            if key == "schema":
                _check_schema(value, source, line)
                continue
            if str(key) not in FIELDS:
                close = difflib.get_close_matches(str(key), FIELDS, n=1)
                hint = (
                    f"did you mean '{close[0]}'?" if close else "known fields are in docs/doctor.md"
                )
                raise field_error(source, line, str(key), f"unknown plan field; {hint}")
            if value is None:
                continue
            _check_value(str(key), value, source, line)
            values[str(key)] = float(value) if key == "vllm_gpu_memory_utilization" else value
        return cls(**values)


FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(RunPlan)}


def _check_schema(value: Any, source: str, line: int | None) -> None:
    prefix = "shop-r1.runplan/"
    head = value[len(prefix) :].split(".", 1)[0] if isinstance(value, str) else ""
    if not (isinstance(value, str) and value.startswith(prefix) and head.isdigit()):
        raise field_error(source, line, "schema", f"{value!r} is not a shop-r1 run plan")
    if int(head) != RUNPLAN_MAJOR:
        raise field_error(
            source,
            line,
            "schema",
            f"{value!r} is not supported (this shop-r1 reads {RUNPLAN_SCHEMA}); upgrade shop-r1",
        )


def _type_name(types: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES[t.__name__] for t in types)


def _check_value(key: str, value: Any, source: str, line: int | None) -> None:
    def fail(message: str, field: str = key) -> ToolError:
        return field_error(source, line, field, message)

    meta = FIELDS[key].metadata if key in FIELDS else None
    if meta is None:  # RunPlan's own fields are always known; this is for safety
        raise fail("unknown plan field")
    types, allowed = meta["types"], meta["allowed"]
    if not is_kind(value, types):
        raise fail(f"expected {_type_name(types)}, got {value!r}; fix the value")
    if allowed is not None and value not in allowed:
        raise fail(f"{value!r} is not one of {', '.join(allowed)}")
    if key == "env_refs" and not all(isinstance(v, str) for v in value):
        raise fail("expected a list of env var names")
    if key == "vllm_gpu_memory_utilization" and not 0 < value <= 1:
        raise fail(f"{value} is not in (0, 1]")
    if key == "model_shape":
        bad = [k for k in SHAPE_KEYS if not (isinstance(value.get(k), int) and value[k] > 0)]
        if bad:
            raise fail("missing or not a positive integer", f"model_shape.{bad[0]}")


def load_runplan(path: str | Path) -> RunPlan:
    """A plan file (YAML or JSON: JSON is YAML) validated field by field."""
    r, data = Reader.read(path, "plan (YAML or JSON)")
    return RunPlan.from_dict(data, str(path), r.lines)
