"""Predictions from a local model: batched greedy `generate()` with left padding.

torch/transformers are imported inside the functions so the CLI stays fast to start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shop_r1_doctor.errors import ToolError


def pick_device(requested: str = "auto") -> str:
    import torch

    if requested != "auto":
        return requested
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def load_model(path_or_id: str, *, device: str = "auto") -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode; bf16 on GPUs that support it, fp32 on CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = pick_device(device)
    dtype = torch.float32
    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        dtype = torch.bfloat16
    try:
        tokenizer = AutoTokenizer.from_pretrained(path_or_id)
        model = AutoModelForCausalLM.from_pretrained(path_or_id, dtype=dtype)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ToolError(
            f"--model {path_or_id}: cannot load it ({first}); give a local checkpoint "
            "directory or a Hub id reachable from here"
        ) from None
    # transformers types `to` through a decorator that takes the model first (stubs gap)
    model.to(torch.device(device))  # type: ignore[arg-type]
    model.eval()
    return model, tokenizer


def chat_ids(
    tokenizer: Any, messages: Sequence[dict], *, add_generation_prompt: bool = True
) -> list[int]:
    """Token ids of `messages` under the tokenizer's own chat template."""
    if not getattr(tokenizer, "chat_template", None):
        raise ToolError(
            "the tokenizer has no chat template; eval renders prompts with the model's own "
            "template, so use an instruct/chat checkpoint or one saved by `shop-r1 train`"
        )
    ids = tokenizer.apply_chat_template(
        list(messages), add_generation_prompt=add_generation_prompt, tokenize=True
    )
    # transformers 5 may return a BatchEncoding instead of a plain list.
    if hasattr(ids, "keys") and "input_ids" in ids:
        ids = ids["input_ids"]
    return list(ids)


def generate_local(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Sequence[dict]],
    *,
    max_new_tokens: int = 256,
    batch_size: int = 16,
    on_done: Callable[[int], None] | None = None,
) -> list[str]:
    """Greedy completions for chat prompts, in input order.

    Prompts are sorted by length so each batch pads little; left padding keeps every
    prompt's last token next to the first generated one, as decoder-only models need.
    """
    import torch

    if batch_size < 1:
        raise ToolError(f"--batch-size: {batch_size} must be >= 1")
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = tokenizer.eos_token_id
    if pad_id is None:
        raise ToolError("the tokenizer has neither a pad nor an eos token; cannot batch prompts")
    eos_id = tokenizer.eos_token_id

    encoded = [chat_ids(tokenizer, m) for m in prompts]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    device = next(model.parameters()).device
    model.eval()  # no dropout; training may have left it in train mode
    outputs: list[str] = [""] * len(encoded)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        width = max(len(encoded[i]) for i in batch)
        input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            ids = encoded[i]
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        with torch.no_grad():
            generated = model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=pad_id,
                eos_token_id=eos_id,
                use_cache=True,  # training with gradient checkpointing turns it off
            )
        new_tokens = generated[:, width:]  # [batch, <= max_new_tokens]
        for row, i in enumerate(batch):
            outputs[i] = tokenizer.decode(new_tokens[row], skip_special_tokens=True)
        if on_done is not None:
            on_done(len(batch))
    return outputs
