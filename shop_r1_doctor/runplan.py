"""The RunPlan contract: what a run will do, for the checks that depend on it.

One typed, versioned record (`shop-r1.runplan/1`), produced in four places and read by
the checks as attributes (`facts.plan.num_processes`):

- `shop-r1 doctor --plan FILE` (a user's YAML/JSON file, `plan.load_plan`),
- `shop-r1 train`'s preflight (`shop_r1.preflight.plan_section`, from the trainer's
  auto-configuration on this machine's facts and the keywords TRL's config is built with,
  `trl_plan_fields`: what will actually run, TRL fields set in YAML or --set included),
- `shop-r1 launch` (`launch/plan.py`: the GPU split, processes and vLLM layout it
  decides; settings the trainer auto-configures on the target are left out, and the
  script's preflight for sft/grpo is `train --dry-run` on the target),
- tests and recorded snapshots (the snapshot's `plan` section, decoded here when a
  snapshot is loaded).

Every field is optional: None = not known, and the check that needs it stays silent. The
types are the contract: msgspec checks them in files, mypy in the producers' code; the
value rules the types cannot say live in `__post_init__`, so both get them. Each field
is read by at least one check (`tests/shop_r1_doctor/test_plan_fields.py`). Documented
in docs/doctor.md ("The RunPlan contract").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.schema import FieldError, Reader, decode_each, field_error, join, listing

RUNPLAN_SCHEMA = "shop-r1.runplan/1"
RUNPLAN_MAJOR = 1
KNOWN_AT = "known fields are in docs/doctor.md"


class PlanShape(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, omit_defaults=True
):
    """The model's shape (`memory.ModelShape`'s fields), so the memory checks need not
    guess it from the parameter count. Extras are optional: a plan file may give the
    seven numbers only; the trainer writes all of them."""

    params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tied_embeddings: bool | None = None
    head_dim: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        for name in ("params", "layers", "hidden", "heads", "kv_heads", "intermediate", "vocab"):
            if getattr(self, name) <= 0:
                raise FieldError(name, f"expected a positive integer, got {getattr(self, name)!r}")


class RunPlan(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, omit_defaults=True
):
    """What will run. None = not known (the check that needs it stays silent)."""

    task: Literal["sft", "grpo"] | None = None
    model: str | None = None  # model id or path
    model_params: int | None = None  # when the model is not known offline
    model_shape: PlanShape | None = None
    attn_implementation: str | None = None  # flash_attention_2, sdpa, eager, ...
    bf16: bool | None = None
    fp16: bool | None = None
    master_fp32: bool | None = None  # fp32 master weights with bf16/fp16 autocast
    # with master_fp32: the hidden states between layers stay fp32 (autocast's default);
    # False when the trainer casts them to the compute dtype. None: as master_fp32 says
    fp32_hidden: bool | None = None
    max_length: int | None = None  # max tokens per sample
    # the trainer's predicted peak GPU memory per GPU (the colocate check reads it)
    predicted_peak_bytes: int | None = None
    longest_sample_tokens: int | None = None  # prompt + completion of the longest sample
    gradient_checkpointing: bool | None = None
    chunked_loss: bool | None = None  # TRL's fused LM head (no full-vocab logits)
    use_liger_kernel: bool | None = None
    fsdp: bool | None = None
    use_peft: bool | None = None
    torch_compile: bool | None = None
    gradient_accumulation_fusion: bool | None = None  # Megatron's (needs apex)
    num_processes: int | None = None  # training processes (accelerate/torchrun)
    per_device_train_batch_size: int | None = None
    gradient_accumulation_steps: int | None = None
    steps_per_generation: int | None = None
    generation_batch_size: int | None = None
    num_generations: int | None = None
    # GRPO evaluation: its global batch must hold whole groups too (TRL's GRPOConfig)
    eval_strategy: Literal["no", "steps", "epoch"] | None = None
    per_device_eval_batch_size: int | None = None
    num_generations_eval: int | None = None
    auto_find_batch_size: bool | None = None  # GRPOConfig refuses it
    scale_rewards: Literal["group", "batch", "none"] | None = None
    # a file's `1` stays an integer: the snapshot section is written back as it was read
    self_certainty_weight: int | float | None = None
    use_vllm: bool | None = None
    vllm_mode: Literal["server", "colocate"] | None = None
    vllm_server_host: str | None = None
    vllm_server_base_url: str | None = None  # instead of host
    vllm_server_port: int | None = None
    vllm_group_port: int | None = None  # weight-sync group port
    vllm_gpu_memory_utilization: float | None = None  # in (0, 1]
    vllm_tensor_parallel_size: int | None = None
    vllm_enable_sleep_mode: bool | None = None
    dataset: str | None = None  # path or hf:// URL
    dataset_rows: int | None = None
    output_dir: str | None = None
    save_total_limit: int | None = None
    save_only_model: bool | None = None
    dataloader_num_workers: int | None = None
    dataloader_pin_memory: bool | None = None
    use_ray: bool | None = None
    env_refs: Annotated[list[str], listing("env var names")] | None = None

    def __post_init__(self) -> None:
        util = self.vllm_gpu_memory_utilization
        if util is not None and not 0 < util <= 1:
            raise FieldError("vllm_gpu_memory_utilization", f"{util} is not in (0, 1]")

    def to_dict(self) -> dict[str, Any]:
        """The snapshot's `plan` section: known fields only, in declaration order."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def to_file(self) -> dict[str, Any]:
        """What a plan file holds: the schema, then the fields (`doctor --plan` reads it)."""
        return {"schema": RUNPLAN_SCHEMA, **self.to_dict()}


FIELDS: tuple[str, ...] = RunPlan.__struct_fields__

# RunPlan names for TRL keywords that TRL spells otherwise (transformers 5.2x renamed it)
TRL_NAMES = {"activation_checkpointing": "gradient_checkpointing"}


def trl_plan_fields(trl_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The RunPlan fields that TRL's config holds, as TRL gets them: the keywords its
    SFTConfig/GRPOConfig is built with (ours and the user's), vLLM fields only where they
    take effect (`trl_rules.vllm_fields_in_effect`). None is left out: TRL's default, or a
    value the trainer applies itself. `fsdp` is TRL's option string or list; the plan
    says whether it shards."""
    from shop_r1_doctor.trl_rules import vllm_fields_in_effect

    out: dict[str, Any] = {}
    for key, value in vllm_fields_in_effect(dict(trl_kwargs)).items():
        name = TRL_NAMES.get(key, key)
        if name not in FIELDS or value is None:
            continue
        out[name] = bool(value) if name == "fsdp" else value
    return out


def decode_plan(
    data: Any, source: str = "<plan>", lines: Mapping[str, int] | None = None, at: str = ""
) -> RunPlan:
    """A plan mapping as a RunPlan, or one ToolError listing EVERY problem as
    `source:line: field: why` (joined by `; `): unknown keys with a did-you-mean, wrong
    types and values naming the field. `at` prefixes field paths (a snapshot's `plan`);
    `lines` maps key paths to lines (schema.line_index). A file may nest the fields
    under a top-level `plan:` key and carry `schema: shop-r1.runplan/1`."""
    lines = lines or {}
    if isinstance(data, dict) and set(data) == {"plan"}:
        data = data["plan"]
        lines = {k[5:]: v for k, v in lines.items() if k.startswith("plan.")}
    reader = Reader(source, lines)
    if not isinstance(data, dict):
        raise field_error(
            source, reader.line(""), at, "a plan must be a mapping of fields (see docs/doctor.md)"
        )
    problems: list[tuple[str, str]] = []
    if "schema" in data:
        problems += _schema_problems(data["schema"])
    fields = {k: v for k, v in data.items() if k != "schema" and v is not None}
    plan, field_problems = decode_each(fields, RunPlan, "unknown plan field", KNOWN_AT)
    problems += field_problems
    if plan is None or problems:
        # the field is named from the document's root (`plan.bf16`), its line looked up
        # in the plan's own index
        raise ToolError(
            "; ".join(
                str(field_error(source, reader.line(path), join(at, path), message))
                for path, message in problems
            )
        )
    return plan


def _schema_problems(value: Any) -> list[tuple[str, str]]:
    prefix = "shop-r1.runplan/"
    head = value[len(prefix) :].split(".", 1)[0] if isinstance(value, str) else ""
    if not (isinstance(value, str) and value.startswith(prefix) and head.isdigit()):
        return [("schema", f"{value!r} is not a shop-r1 run plan")]
    if int(head) != RUNPLAN_MAJOR:
        why = f"{value!r} is not supported (this shop-r1 reads {RUNPLAN_SCHEMA}); upgrade shop-r1"
        return [("schema", why)]
    return []
