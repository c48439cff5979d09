"""Padding-free SFT without flash-attn: a varlen attention kernel for transformers.

TRL's `padding_free` collator concatenates the rows of a micro batch into one sequence
and passes the example boundaries as `cu_seq_lens_q/k` (plus `position_ids` that restart
at 0 per example). flash-attn's varlen kernel reads them; without flash-attn,
transformers falls back to building a (tokens x tokens) block-diagonal mask for sdpa
(exact, but the kernel then computes every tile of the packed square) or a FlexAttention
BlockMask (needs torch.compile). PyTorch >= 2.9 ships FlashAttention-2's varlen kernel
itself (`torch.nn.attention.varlen.varlen_attn`, Ampere or newer); this module registers
it with transformers' `AttentionInterface` as `sdpa_varlen`, so no extra package is needed.

Never attends across examples: every path slices by `cu_seq_lens`. Off the GPU (or in
fp32) it runs one causal SDPA call per example, which is what the CPU test compares with
unpacked rows. Importing this module imports nothing heavy; `register()` does.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any

NAME = "sdpa_varlen"
# varlen_attn appeared in torch 2.9 (is_causal flag; no GQA); 2.10+ takes window_size and
# enable_gqa. `_varlen_call` reads the signature instead of trusting a version number.
MIN_TORCH = (2, 9)
_registered = False


def register() -> str:
    """Register `sdpa_varlen` with transformers (idempotent); returns the name to pass as
    `attn_implementation`. Its mask function is flash-attention's: no mask at all when
    the batch is padding-free (the boundaries travel as `cu_seq_lens`), the 2D padding
    mask otherwise, so no (tokens x tokens) mask is ever built."""
    global _registered
    if _registered:
        return NAME
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask

    AttentionInterface.register(NAME, varlen_attention_forward)
    AttentionMaskInterface.register(NAME, flash_attention_mask)
    _registered = True
    return NAME


@functools.lru_cache(maxsize=1)
def kernel_available() -> bool:
    """torch's own varlen flash kernel can run here (CUDA, cc >= 8.0, torch >= 2.9)."""
    import torch

    if not torch.cuda.is_available():
        return False
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.get_device_capability() >= (8, 0)


def _cu_seqlens_from_positions(position_ids: Any) -> Any:
    """Example boundaries of a packed row from positions that restart at 0."""
    import torch

    pos = position_ids[0]
    starts = (pos == 0).nonzero().flatten()
    total = torch.tensor([pos.numel()], device=pos.device)
    return torch.cat([starts, total]).to(torch.int32)


@functools.lru_cache(maxsize=1)
def _varlen_params() -> frozenset[str]:
    """varlen_attn's keyword names (read once: this runs in every layer's forward)."""
    from torch.nn.attention.varlen import varlen_attn

    return frozenset(inspect.signature(varlen_attn).parameters)


def _varlen_call(q: Any, k: Any, v: Any, cu: Any, max_len: int, scale: float | None) -> Any:
    """torch's varlen_attn on (tokens, heads, dim) tensors, causal, across torch versions."""
    from torch.nn.attention.varlen import varlen_attn

    params = _varlen_params()
    kwargs: dict[str, Any] = {}
    if "scale" in params:
        kwargs["scale"] = scale
    if "window_size" in params:
        kwargs["window_size"] = (-1, 0)  # causal
    else:
        kwargs["is_causal"] = True
    groups = q.shape[1] // k.shape[1]
    if groups > 1:
        if "enable_gqa" in params:
            kwargs["enable_gqa"] = True
        else:
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
    return varlen_attn(q, k, v, cu, cu, max_len, max_len, **kwargs)


def _per_example_sdpa(q: Any, k: Any, v: Any, cu: Any, scale: float | None) -> Any:
    """One causal SDPA call per example: (heads, tokens, dim) in and out."""
    import torch
    import torch.nn.functional as F

    groups = q.shape[0] // k.shape[0]
    if groups > 1:
        k = k.repeat_interleave(groups, dim=0)
        v = v.repeat_interleave(groups, dim=0)
    bounds = cu.tolist()
    outs = [
        F.scaled_dot_product_attention(
            q[None, :, a:b], k[None, :, a:b], v[None, :, a:b], is_causal=True, scale=scale
        )[0]
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    return torch.cat(outs, dim=1)


def kernel_dtype(query: Any, module: Any = None) -> Any:
    """The dtype torch's varlen kernel runs this query in, or None when it cannot run
    (not on a GPU that has the kernel, or no half dtype to run in): `target_dtype`."""
    import torch

    if not query.is_cuda or not kernel_available():
        return None
    autocast = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
    linears = (m for m in (module.modules() if module is not None else ()) if hasattr(m, "weight"))
    weight = next((m.weight.dtype for m in linears if isinstance(m, torch.nn.Linear)), None)
    return target_dtype(query.dtype, autocast, weight)


def target_dtype(query: Any, autocast: Any, weight: Any) -> Any:
    """The kernel's dtype for a query of dtype `query`, given autocast's dtype (None when
    autocast is off) and the layer's weight dtype; None when none of them is bf16/fp16.

    The kernel takes bf16/fp16 only. With fp32 weights under bf16 autocast (the fp32
    master weights auto picks below lr 1e-4) q and k leave their projections in bf16 but
    RoPE multiplies them by fp32 cos/sin, so they arrive here in fp32; Liger's RoPE kernel
    keeps them in bf16, which is why this showed only without Liger. Sending them down the
    per-example path made packed SFT several times slower than TRL's defaults (H100,
    0.5B). transformers' flash-attention integration makes the same choice
    (`integrations.flash_attention.get_target_dtype`): autocast's dtype, else the
    weights'."""
    import torch

    half = (torch.bfloat16, torch.float16)
    if query in half:
        return query
    if query != torch.float32:
        return None
    if autocast is not None:
        return autocast if autocast in half else None
    return weight if weight in half else None


def _packed_boundaries(query: Any, key: Any, attention_mask: Any, kwargs: dict[str, Any]) -> Any:
    """`cu_seq_lens` of a packed (padding-free) forward, or None for any other forward.

    Packed means one row, no padding mask, queries and keys over the same tokens, with
    boundaries passed or readable from positions that restart at 0. A decoding step with a
    KV cache (one new query, all cached keys, positions not starting at 0) is not packed:
    reading boundaries there found none and crashed `torch.cat` in `generate()`."""
    if query.shape[0] != 1:
        return None
    cu = kwargs.get("cu_seq_lens_q")
    if cu is not None:
        return cu
    position_ids = kwargs.get("position_ids")
    if attention_mask is not None or position_ids is None or query.shape[2] != key.shape[2]:
        return None
    if int(position_ids[0, 0]) != 0:
        return None
    return _cu_seqlens_from_positions(position_ids)


def _sdpa_fallback(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any
) -> tuple[Any, None]:
    """Unpacked batches (padded rows, generation) through transformers' own sdpa."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if attention_mask is not None and attention_mask.ndim == 2:
        import torch

        # the flash-style 2D padding mask (True = keep) -> causal 4D bool mask
        q_len, kv_len = query.shape[2], key.shape[2]
        causal = torch.ones(q_len, kv_len, dtype=torch.bool, device=query.device).tril(
            kv_len - q_len
        )
        attention_mask = causal[None, None] & attention_mask[:, None, None, :].bool()
    for name in ("cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k"):
        kwargs.pop(name, None)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


def varlen_attention_forward(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers attention function: (batch, heads, seq, dim) in, (batch, seq, heads,
    dim) out, like the library's sdpa/flash functions."""
    cu = _packed_boundaries(query, key, attention_mask, kwargs)
    if cu is None:
        return _sdpa_fallback(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    import torch

    cu = cu.to(device=query.device, dtype=torch.int32)
    dtype = kernel_dtype(query, module)
    if dtype is not None:
        max_len = kwargs.get("max_length_q") or int((cu[1:] - cu[:-1]).max())
        out = _varlen_call(
            query[0].transpose(0, 1).to(dtype),
            key[0].transpose(0, 1).to(dtype),
            value[0].transpose(0, 1).to(dtype),
            cu,
            int(max_len),
            scaling,
        )
        return out[None], None  # (1, tokens, heads, dim)
    out = _per_example_sdpa(query[0], key[0], value[0], cu, scaling)
    return out.transpose(0, 1)[None].contiguous(), None


def packed_vs_unpacked(
    config: dict[str, Any],
    attn_implementation: str,
    lengths: list[int],
    *,
    device: str = "cpu",
    dtype: Any = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-example losses and the gradient of their sum, packed (TRL's padding-free
    collator, `attn_implementation`) against each example alone (sdpa), on one random-init
    model. Returns the largest relative loss difference, per example, and the relative
    gradient difference; a kernel that lets examples see each other shows in both."""
    import torch
    import torch.nn.functional as F
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from shop_r1.tiny import model_from_config_dict

    gen = torch.Generator().manual_seed(seed)
    examples = []
    for n in lengths:
        ids = torch.randint(1, config["vocab_size"], (n,), generator=gen).tolist()
        # first half is the prompt (no loss), the rest the completion
        examples.append({"input_ids": ids, "labels": [-100] * (n // 2) + ids[n // 2 :]})

    def token_losses(logits: Any, labels: Any) -> Any:
        return F.cross_entropy(logits[:-1].float(), labels[1:], ignore_index=-100, reduction="sum")

    def grads(model: Any) -> Any:
        return torch.cat([p.grad.float().flatten() for p in model.parameters()])

    ref = model_from_config_dict(config, seed=seed, dtype=dtype, attn_implementation="sdpa")
    ref = ref.to(device)
    ref_losses = []
    for ex in examples:
        input_ids = torch.tensor([ex["input_ids"]], device=device)
        loss = token_losses(
            ref(input_ids=input_ids).logits[0], torch.tensor(ex["labels"], device=device)
        )
        loss.backward()
        ref_losses.append(loss.detach())

    model = model_from_config_dict(
        config, seed=seed, dtype=dtype, attn_implementation=attn_implementation
    ).to(device)
    batch = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)(examples)
    batch = {k: v.to(device) if hasattr(v, "to") else v for k, v in batch.items()}
    labels = batch.pop("labels")[0]
    # use_cache=False as TRL's compute_loss passes it: with a cache, transformers stops
    # reading packed boundaries from position_ids (its sdpa/flex paths then mix examples)
    logits = model(**batch, use_cache=False).logits[0]
    bounds = batch["cu_seq_lens_q"].tolist()
    packed_losses = [token_losses(logits[a:b], labels[a:b]) for a, b in itertools.pairwise(bounds)]
    torch.stack(packed_losses).sum().backward()
    per_example = [
        float((p.detach() - r).abs() / r.abs().clamp_min(1e-12))
        for p, r in zip(packed_losses, ref_losses, strict=True)
    ]
    g_ref, g_packed = grads(ref), grads(model)
    return {
        "loss_rel_diff": per_example,
        "max_loss_rel_diff": max(per_example),
        "grad_rel_diff": float((g_packed - g_ref).norm() / g_ref.norm()),
        "losses": [round(float(x), 4) for x in ref_losses],
    }
