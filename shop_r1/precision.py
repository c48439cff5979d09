"""Where the hidden states live when the weights are fp32 masters under autocast.

A model loaded in fp32 and trained under bf16 autocast runs its matrix products in bf16,
but the embedding's output is fp32, so every residual add keeps the stream between
layers in fp32: each layer casts it down for its projections and the adds, norms and
casts move twice the bytes a bf16 model moves. Casting the embedding's output to
autocast's dtype gives the stream a bf16 model has (Megatron-LM's default too:
`fp32_residual_connection` is off), while the weights, their gradients and AdamW's
moments stay fp32. Measured on the H100, Qwen2.5-0.5B shape, real rows:
benchmarks/results/h100_bf16_hidden_993be1b/.
"""

from __future__ import annotations

from typing import Any


def cast_hidden_states_to_autocast(model: Any) -> Any:
    """Hook the input embedding so its output takes autocast's dtype while autocast is
    on; outside autocast (evaluation, generation in fp32) the output is left as it is,
    since the fp32 layers would refuse a bf16 input there. Returns the hook's handle."""
    import torch

    def cast(_module: Any, _inputs: Any, output: Any) -> Any:
        device = output.device.type
        if torch.is_autocast_enabled(device):
            dtype = torch.get_autocast_dtype(device)
            if output.dtype != dtype and output.is_floating_point():
                return output.to(dtype)
        return output

    return model.get_input_embeddings().register_forward_hook(cast)


def apply(model: Any, plan: Any) -> Any:
    """The plan's `hidden_dtype` on `model` (a no-op unless the plan asks for the cast)."""
    if plan.master_weights == "fp32" and plan.hidden_dtype != "fp32":
        return cast_hidden_states_to_autocast(model)
    return None


_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def cast_reference(trainer: Any, plan: Any) -> str | None:
    """The plan's `reference_dtype` on the trainer's frozen reference model, in place.

    Left as TRL made it where a cast would undo TRL's own layout: a reference sharded by
    DeepSpeed or FSDP (the engine owns its parameters) or one whose LM head TRL keeps in
    fp32 (`cast_lm_head_to_fp32`). Returns None when cast (or nothing to do), else why not."""
    import torch

    ref = getattr(trainer, "ref_model", None)
    if ref is None or plan.reference_dtype is None:
        return None
    dtype = getattr(torch, _TORCH_DTYPES[plan.reference_dtype])
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(
        trainer, "is_fsdp_enabled", False
    ):
        return "the reference model is sharded by DeepSpeed/FSDP"
    if getattr(trainer.args, "cast_lm_head_to_fp32", False):
        return "cast_lm_head_to_fp32 keeps its LM head in fp32"
    if any(p.dtype != dtype for p in ref.parameters()):
        ref.to(dtype)
    return None
