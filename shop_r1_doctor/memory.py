"""A memory model for training (and vLLM serving) of decoder-only LLMs. Pure Python.

Used by the doctor (MODEL_TOO_LARGE_FOR_GPU, TRL_COLOCATE_MEMORY_BUDGET) and by the
trainer's auto-configuration. Calibrated on one H100 with random-init Qwen2.5 shapes
(`../shared/research/performance.md`): 0.5B, seq 2048 x 8, fp32 master weights +
bf16 autocast, full logits: measured 63 GiB peak (model 63.4); with gradient
checkpointing 39.8 GiB (model 40.8).

Activation bytes per layer and token, 2-byte activations, sdpa/flash attention,
HF Qwen2/Llama blocks (derived from what autograd saves, see `_layer_bytes_per_token`):
  2 RMSNorms (fp32 upcast inside)   12 h
  attention (q, out, o_proj input)   8 h + 4 kv_dim
  SwiGLU MLP (input, gate, act, up, product)  2 h + 8 I
  + 4 residual-path tensors       4 h
i.e. ~68 h for Qwen2.5-0.5B (I = 5.4 h), close to the ~60 sbh of the SwiGLU rule of
thumb. fp32 master + autocast keeps the residual stream in fp32: +8 h (measured 76 h).
Liger's fused kernels (`fused_kernels`) save less: RMSNorm keeps its bf16 input and
rstd (-8 h), SwiGLU recomputes the activation (-2 I), RoPE keeps only cos/sin (-2 h).
On the H100 that predicted 6.8 / 14.2 GiB less for 0.5B / 1.5B at 2048 x 8; measured
6.3 / 13.0.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

GIB = 1024**3
# DataLoader workers hand batches over through /dev/shm; below this (Docker's 64 MiB
# default) they die with 'Bus error' (DATALOADER_SHM_BUS_ERROR)
LOADER_SHM_MIN = GIB

# Real Hugging Face configs (config.json) of the Qwen2.5 family: data for the shape
# lookup and for random-init benchmark models (no download needed).
_QWEN2_COMMON: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_act": "silu",
    "attention_dropout": 0.0,
    "initializer_range": 0.02,
    "max_position_embeddings": 32768,
    "max_window_layers": 21,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 32768,
    "use_cache": True,
    "use_sliding_window": False,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
}
QWEN25_CONFIGS: dict[str, dict[str, Any]] = {
    "0.5b": {
        **_QWEN2_COMMON,
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    "1.5b": {
        **_QWEN2_COMMON,
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "num_hidden_layers": 28,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    "3b": {
        **_QWEN2_COMMON,
        "hidden_size": 2048,
        "intermediate_size": 11008,
        "num_hidden_layers": 36,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    "7b": {
        **_QWEN2_COMMON,
        "max_window_layers": 28,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    },
}

# bytes per parameter of the optimizer state, by optimizer and parameter dtype
_OPTIMIZER_STATES = {"adamw": 2.0, "adamw_8bit": 0.5, "sgd": 0.0, "adafactor": 0.05}
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# Full-logits loss path (HF ForCausalLMLoss): bf16 logits + fp32 upcast + fp32
# log-softmax + fp32 grad, ~13 bytes per token x vocab entry (measured).
LOGITS_BYTES_PER_ENTRY = 13
# TRL's fused LM head tiles (trl/kernels/chunked_logprob.py, TRL 1.16)
_CHUNK_TOKENS = 4096
_CHUNK_VOCAB = 32768


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a decoder-only transformer that memory and FLOPs depend on."""

    params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    head_dim: int = 0  # 0 = hidden // heads
    name: str = ""

    @property
    def dim_per_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.dim_per_head

    @classmethod
    def from_config_dict(cls, d: dict[str, Any], name: str = "") -> ModelShape:
        """Shape from a Hugging Face `config.json` dict (Qwen2, Llama, Mistral style).

        Raises ValueError naming the missing key."""
        nested = d.get("text_config")
        text: dict[str, Any] = nested if isinstance(nested, dict) else d
        for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
            if not isinstance(text.get(key), int):
                raise ValueError(f"model config: {key}: missing or not an integer")
        hidden = text["hidden_size"]
        heads = text["num_attention_heads"]
        kv_heads = text.get("num_key_value_heads") or heads
        head_dim = text.get("head_dim") or hidden // heads
        inter = text.get("intermediate_size") or 4 * hidden
        layers = text["num_hidden_layers"]
        vocab = text["vocab_size"]
        tied = bool(text.get("tie_word_embeddings", False))
        # Qwen2 has q/k/v biases without saying so in its config
        bias = bool(text.get("attention_bias", text.get("model_type") == "qwen2"))
        q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
        attn = hidden * q_dim + 2 * hidden * kv_dim + q_dim * hidden
        if bias:
            attn += q_dim + 2 * kv_dim
        if text.get("attention_bias") and text.get("model_type") != "qwen2":
            attn += hidden  # Llama/Mistral's attention_bias also biases o_proj (Qwen2 does not)
        per_layer = attn + 3 * hidden * inter + 2 * hidden
        params = layers * per_layer + vocab * hidden * (1 if tied else 2) + hidden
        return cls(
            params=params,
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            intermediate=inter,
            vocab=vocab,
            tied_embeddings=tied,
            head_dim=head_dim if head_dim != hidden // heads else 0,
            name=name,
        )


KNOWN_SHAPES: dict[str, ModelShape] = {
    key: ModelShape.from_config_dict(cfg, name=f"Qwen2.5-{key.upper()}")
    for key, cfg in QWEN25_CONFIGS.items()
}


def shape_for_params(n: int) -> ModelShape:
    """The known Qwen2.5 shape nearest to `n` parameters (on a log scale)."""
    n = max(int(n), 1)
    return min(KNOWN_SHAPES.values(), key=lambda s: abs(math.log(s.params / n)))


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak training memory per GPU, in bytes, by component."""

    weights: int
    grads: int
    optimizer: int
    activations: int
    logits: int
    total: int

    def gib(self) -> dict[str, float]:
        return {k: round(v / GIB, 2) for k, v in asdict(self).items()}


def _layer_bytes_per_token(
    shape: ModelShape, act_bytes: int, fp32_residual: bool, fused_kernels: bool = False
) -> float:
    """Saved-for-backward bytes of one decoder layer per token (see the module docstring)."""
    h, inter, kv = shape.hidden, shape.intermediate, shape.kv_dim
    units = 12 * h + 8 * h + 4 * kv + 2 * h + 8 * inter + 4 * h  # for 2-byte activations
    if fused_kernels:
        units -= 8 * h + 2 * inter + 2 * h
    extra = 8 * h if fp32_residual else 0
    return units * act_bytes / 2 + extra


def estimate_training_memory(
    shape: ModelShape,
    *,
    seq_len: int,
    micro_batch: int,
    dtype: str = "bf16",
    optimizer: str = "adamw",
    master_fp32: bool = False,
    grad_checkpointing: bool = False,
    chunked_loss: bool = False,
    loss_tokens: int | None = None,
    attention: str = "sdpa",
    shards: int = 1,
    fused_kernels: bool = False,
    explicit_mask: bool = False,
    fp32_hidden: bool | None = None,
) -> MemoryEstimate:
    """Peak memory of one training step on one GPU.

    dtype: the compute dtype ("bf16", "fp16", "fp32"). master_fp32: weights, grads and
    optimizer kept in fp32 with autocast to `dtype` (what TRL does with a model loaded in
    fp32). loss_tokens: tokens whose logits are computed (default all; GRPO scores only
    completions). attention "eager" adds the s^2 score matrices. shards: FSDP world
    size (weights, grads and optimizer state are split across it). fused_kernels: Liger's
    RMSNorm / SwiGLU / RoPE kernels, which save fewer activations. A padding-free micro
    batch is one row of all its tokens: seq_len = its tokens, micro_batch = 1.
    explicit_mask: sdpa runs under a mask (rows padded to the longest, or packed rows
    without a varlen kernel): PyTorch turns the boolean mask into a bias of the compute
    dtype in every layer and keeps it for the backward pass, micro_batch x seq_len^2 x 2
    bytes a layer. Measured on the H100, 0.5B,
    one packed row of 21.5k tokens: +20.7 GiB (this term: +21.6).
    fp32_hidden: the stream between layers is fp32 (default: with fp32 masters under
    autocast, whose embedding output is fp32; False when the trainer casts it to the
    compute dtype, shop_r1.precision).
    """
    if dtype not in _DTYPE_BYTES:
        raise ValueError(f"dtype: {dtype!r} is not one of {sorted(_DTYPE_BYTES)}")
    if optimizer not in _OPTIMIZER_STATES:
        raise ValueError(f"optimizer: {optimizer!r} is not one of {sorted(_OPTIMIZER_STATES)}")
    act_bytes = _DTYPE_BYTES[dtype]
    mixed = master_fp32 and dtype != "fp32"
    # only fp32 masters under autocast carry an fp32 stream (pure low-precision weights
    # make a low-precision one whatever the caller says)
    fp32_stream = mixed and fp32_hidden is not False
    param_bytes = 4 if master_fp32 or dtype == "fp32" else act_bytes
    n = shape.params
    # autocast keeps a low-precision copy of each weight alive for the backward pass
    weights = n * param_bytes + (n * act_bytes if mixed else 0)
    grads = n * param_bytes
    optimizer_bytes = n * param_bytes * _OPTIMIZER_STATES[optimizer]
    weights, grads = weights // shards, grads // shards
    optimizer_bytes = optimizer_bytes / shards

    tokens = seq_len * micro_batch
    per_layer = tokens * _layer_bytes_per_token(shape, act_bytes, fp32_stream, fused_kernels)
    if attention == "eager":
        # bf16 scores + fp32 softmax, per head
        per_layer += micro_batch * shape.heads * seq_len * seq_len * (act_bytes + 4)
    if grad_checkpointing:
        residual = 4 if fp32_stream else act_bytes
        activations = shape.layers * tokens * shape.hidden * residual + per_layer
    else:
        activations = shape.layers * per_layer
    activations += tokens * shape.hidden * 6  # final norm
    if explicit_mask:
        kept = 1 if grad_checkpointing else shape.layers  # recomputed layers keep none
        activations += micro_batch * seq_len * seq_len * (kept * act_bytes + 1)

    scored = tokens if loss_tokens is None else loss_tokens
    if chunked_loss:
        # fp32 grad accumulators of lm_head and hidden + one projection tile
        tile = min(scored, _CHUNK_TOKENS) * min(shape.vocab, _CHUNK_VOCAB) * act_bytes
        logits = 4 * shape.vocab * shape.hidden + 4 * scored * shape.hidden + 2 * tile
    else:
        # the plain HF forward projects every position, not only the scored ones
        logits = LOGITS_BYTES_PER_ENTRY * tokens * shape.vocab
    parts = {
        "weights": weights,
        "grads": grads,
        "optimizer": int(optimizer_bytes),
        "activations": int(activations),
        "logits": int(logits),
    }
    return MemoryEstimate(**parts, total=sum(parts.values()))


def kv_cache_bytes_per_token(shape: ModelShape, dtype_bytes: int = 2) -> int:
    """K and V for every layer: 2 * layers * kv_heads * head_dim * bytes (vLLM budget)."""
    return 2 * shape.layers * shape.kv_dim * dtype_bytes


def inference_weights_bytes(shape: ModelShape, dtype_bytes: int = 2) -> int:
    return shape.params * dtype_bytes


def vllm_memory_fraction(
    shape: ModelShape,
    gpu_bytes: int,
    *,
    max_seq_len: int,
    concurrent_seqs: int,
    dtype_bytes: int = 2,
    overhead_bytes: int = 2 * GIB,
) -> float:
    """The `gpu_memory_utilization` a vLLM engine needs: weights + the KV cache for
    `concurrent_seqs` sequences of `max_seq_len` + activations/CUDA graphs overhead."""
    need = (
        inference_weights_bytes(shape, dtype_bytes)
        + kv_cache_bytes_per_token(shape, dtype_bytes) * max_seq_len * concurrent_seqs
        + overhead_bytes
    )
    return need / gpu_bytes


def checkpoint_bytes(
    params: int, *, weight_bytes: int = 4, optimizer: bool = True
) -> tuple[int, int]:
    """(one Trainer checkpoint, the final model) on disk, in bytes.

    A checkpoint holds the weights in their training dtype (4 bytes with fp32 master
    weights, 2 in pure bf16) and AdamW's two moments in the same dtype (`optimizer=False`:
    `save_only_model`); the final model is the weights alone. Scheduler/RNG state is
    kilobytes. The doctor's DISK_FULL_AT_CHECKPOINT is the one disk check using it."""
    weights = params * weight_bytes
    return weights + (2 * weights if optimizer else 0), weights


def flops_per_token(shape: ModelShape, seq_len: int) -> float:
    """Training FLOPs per token: 6N + 12*L*d*s (PaLM/nanoGPT MFU convention)."""
    return 6 * shape.params + 12 * shape.layers * shape.hidden * seq_len
