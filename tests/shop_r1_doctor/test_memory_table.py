"""The memory model on a tiny shape, every number worked out by hand from the formulas in
`shop_r1_doctor/memory.py` (its module docstring): one row per switch, so a dropped term,
a wrong dtype width or a flipped branch changes a byte count.

Shape S: 2 layers, hidden 8, 2 heads of 4, 1 KV head (kv_dim 4), intermediate 16,
vocab 32, 1000 parameters. Per layer and token, 2-byte activations:
12h + 8h + 4kv + 2h + 8I + 4h = 96 + 64 + 16 + 16 + 128 + 32 = 352 bytes;
fused kernels save 8h + 2I + 2h = 112; an fp32 residual stream adds 8h = 64.
Batch: seq 4 x micro batch 2 = 8 tokens. Final norm: 8 tokens x 8 x 6 = 384 bytes.
Full logits: 13 x 8 tokens x 32 = 3328 bytes.
"""

from __future__ import annotations

import math

import pytest

from shop_r1_doctor.memory import (
    GIB,
    KNOWN_SHAPES,
    MemoryEstimate,
    ModelShape,
    checkpoint_bytes,
    estimate_training_memory,
    flops_per_token,
    inference_weights_bytes,
    kv_cache_bytes_per_token,
    shape_for_params,
    vllm_memory_fraction,
)

S = ModelShape(
    params=1000,
    layers=2,
    hidden=8,
    heads=2,
    kv_heads=1,
    intermediate=16,
    vocab=32,
    tied_embeddings=True,
)

# (case, keyword arguments, (weights, grads, optimizer, activations, logits))
ROWS = [
    # bf16 weights: 2 B/param; AdamW 2 states x 2 B; activations 2 layers x 8 x 352 + 384
    ("bf16", {}, (2000, 2000, 4000, 6016, 3328)),
    ("fp16 is as wide as bf16", {"dtype": "fp16"}, (2000, 2000, 4000, 6016, 3328)),
    # fp32 masters + bf16 autocast: 4 B/param + a 2-byte copy; residual +64 per token
    ("fp32 masters", {"master_fp32": True}, (6000, 4000, 8000, 7040, 3328)),
    # fp32 compute: 4-byte activations (704 per token), no extra copy, masters or not
    ("fp32", {"dtype": "fp32"}, (4000, 4000, 8000, 11648, 3328)),
    ("fp32 with masters", {"dtype": "fp32", "master_fp32": True}, (4000, 4000, 8000, 11648, 3328)),
    # checkpointing keeps each layer's input (2 x 8 x 8 x 2) plus one layer's activations
    ("checkpointing", {"grad_checkpointing": True}, (2000, 2000, 4000, 3456, 3328)),
    # ... with an fp32 residual (4 bytes) and that layer's fp32-residual activations
    (
        "checkpointing with masters",
        {"grad_checkpointing": True, "master_fp32": True},
        (6000, 4000, 8000, 4224, 3328),
    ),
    # eager: + micro batch 2 x 2 heads x 4 x 4 x (2 + 4) = 384 per layer
    ("eager attention", {"attention": "eager"}, (2000, 2000, 4000, 6784, 3328)),
    # chunked loss: 4 x 32 x 8 + 4 x 8 tokens x 8 + 2 x (8 x 32 x 2)
    ("chunked loss", {"chunked_loss": True}, (2000, 2000, 4000, 6016, 2304)),
    # ... scoring 3 tokens: 1024 + 4 x 3 x 8 + 2 x (3 x 32 x 2)
    ("chunked, 3 scored", {"chunked_loss": True, "loss_tokens": 3}, (2000, 2000, 4000, 6016, 1504)),
    # the plain forward projects every position, scored or not
    ("full logits, 3 scored", {"loss_tokens": 3}, (2000, 2000, 4000, 6016, 3328)),
    ("2 shards", {"shards": 2}, (1000, 1000, 2000, 6016, 3328)),
    # whole bytes per shard: 2000 // 3, 2000 // 3, int(4000 / 3)
    ("3 shards", {"shards": 3}, (666, 666, 1333, 6016, 3328)),
    # 6000 // 3, 4000 // 3, int(8000 / 3)
    ("3 shards, masters", {"shards": 3, "master_fp32": True}, (2000, 1333, 2666, 7040, 3328)),
    # fused kernels: 240 per token
    ("fused kernels", {"fused_kernels": True}, (2000, 2000, 4000, 4224, 3328)),
    # explicit mask: 2 x 4 x 4 x (2 layers x 2 + 1) = 160; checkpointed: x (1 x 2 + 1) = 96
    ("explicit mask", {"explicit_mask": True}, (2000, 2000, 4000, 6176, 3328)),
    (
        "explicit mask, checkpointing",
        {"explicit_mask": True, "grad_checkpointing": True},
        (2000, 2000, 4000, 3552, 3328),
    ),
    ("8-bit AdamW", {"optimizer": "adamw_8bit"}, (2000, 2000, 1000, 6016, 3328)),
    ("SGD", {"optimizer": "sgd"}, (2000, 2000, 0, 6016, 3328)),
    ("Adafactor", {"optimizer": "adafactor"}, (2000, 2000, 100, 6016, 3328)),
]


@pytest.mark.parametrize(("case", "kw", "want"), ROWS, ids=[r[0] for r in ROWS])
def test_training_memory_row(case, kw, want):
    est = estimate_training_memory(S, seq_len=4, micro_batch=2, **kw)
    got = (est.weights, est.grads, est.optimizer, est.activations, est.logits)
    assert got == want
    assert est.total == sum(want)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"dtype": "int8"}, "dtype: 'int8' is not one of ['bf16', 'fp16', 'fp32']"),
        (
            {"optimizer": "lion"},
            "optimizer: 'lion' is not one of ['adafactor', 'adamw', 'adamw_8bit', 'sgd']",
        ),
    ],
)
def test_unknown_dtype_or_optimizer(kw, message):
    with pytest.raises(ValueError) as err:
        estimate_training_memory(S, seq_len=4, micro_batch=2, **kw)
    assert str(err.value) == message


def test_gib_rounds_each_component():
    est = MemoryEstimate(GIB, GIB // 2, 3 * GIB, GIB // 3, 0, 5 * GIB)
    assert est.gib() == {
        "weights": 1.0,
        "grads": 0.5,
        "optimizer": 3.0,
        "activations": 0.33,
        "logits": 0.0,
        "total": 5.0,
    }


# ----------------------------------------------------------------- shapes from config.json
LLAMA = {
    "model_type": "llama",
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "intermediate_size": 16,
    "vocab_size": 32,
}
# (case, config, params, (kv_heads, intermediate, head_dim field, kv_dim, tied))
# attention = h x q + 2 h x kv + q x h; a layer adds 3 h I + 2 h; + embeddings + final norm
CONFIG_ROWS = [
    # 64 + 64 + 64 = 192; 192 + 384 + 16 = 592; 2 x 592 + 2 x 32 x 8 + 8
    ("llama", LLAMA, 1704, (1, 16, 0, 4, False)),
    ("nested text_config", {"text_config": LLAMA}, 1704, (1, 16, 0, 4, False)),
    # Qwen2 biases q/k/v (8 + 4 + 4), ties embeddings: 2 x 608 + 32 x 8 + 8
    (
        "qwen2, tied",
        {**LLAMA, "model_type": "qwen2", "tie_word_embeddings": True},
        1480,
        (1, 16, 0, 4, True),
    ),
    # Qwen2 saying attention_bias: still q/k/v only, no o_proj bias: 2 x 608 + 512 + 8
    (
        "qwen2 with attention_bias",
        {**LLAMA, "model_type": "qwen2", "attention_bias": True},
        1736,
        (1, 16, 0, 4, False),
    ),
    # Llama's attention_bias also biases o_proj (+8): 2 x 616 + 512 + 8
    ("llama with attention_bias", {**LLAMA, "attention_bias": True}, 1752, (1, 16, 0, 4, False)),
    # no KV heads: as many as heads (kv 8); no intermediate: 4 h = 32
    (
        "defaults",
        {k: v for k, v in LLAMA.items() if k not in ("num_key_value_heads", "intermediate_size")},
        2600,
        (2, 32, 0, 8, False),
    ),
    # head_dim 16 (not 8 / 2): q 32, kv 16; 256 + 256 + 256 + 384 + 16 = 1168
    ("explicit head_dim", {**LLAMA, "head_dim": 16}, 2856, (1, 16, 16, 16, False)),
]


@pytest.mark.parametrize(
    ("case", "cfg", "params", "fields"), CONFIG_ROWS, ids=[r[0] for r in CONFIG_ROWS]
)
def test_shape_from_config_row(case, cfg, params, fields):
    shape = ModelShape.from_config_dict(cfg, name="tiny")
    assert shape.params == params and type(shape.params) is int  # a count, never 1704.0
    got = (shape.kv_heads, shape.intermediate, shape.head_dim, shape.kv_dim, shape.tied_embeddings)
    assert got == fields
    assert (shape.layers, shape.hidden, shape.heads, shape.vocab, shape.name) == (
        2,
        8,
        2,
        32,
        "tiny",
    )


@pytest.mark.parametrize(
    ("cfg", "key"),
    [({"hidden_size": 8}, "num_hidden_layers"), ({**LLAMA, "hidden_size": "8"}, "hidden_size")],
)
def test_config_without_a_size_names_it(cfg, key):
    with pytest.raises(ValueError) as err:
        ModelShape.from_config_dict(cfg)
    assert str(err.value) == f"model config: {key}: missing or not an integer"


def test_known_qwen_shape_matches_its_published_size():
    # Qwen2.5-0.5B: 494,032,768 parameters (its model card: 0.49B)
    assert KNOWN_SHAPES["0.5b"].params == 494_032_768


def test_nearest_shape_is_on_a_log_scale():
    small, big = KNOWN_SHAPES["0.5b"], KNOWN_SHAPES["1.5b"]
    middle = math.sqrt(small.params * big.params)  # below the arithmetic mean
    assert shape_for_params(int(middle * 0.99)) is small
    assert shape_for_params(int(middle * 1.01)) is big
    assert shape_for_params(0) is small  # no parameters: the smallest


# ----------------------------------------------------------------- serving, disk, FLOPs
def test_serving_and_disk_arithmetic():
    assert kv_cache_bytes_per_token(S) == 2 * 2 * 4 * 2  # K and V, 2 layers, kv_dim 4, bf16
    assert kv_cache_bytes_per_token(S, dtype_bytes=1) == 16
    assert inference_weights_bytes(S) == 2000
    assert inference_weights_bytes(S, dtype_bytes=4) == 4000
    # (2000 weights + 32 x 10 tokens x 3 sequences + 40) / 100000
    got = vllm_memory_fraction(S, 100_000, max_seq_len=10, concurrent_seqs=3, overhead_bytes=40)
    assert got == pytest.approx(0.03)
    # 1-byte weights and cache: (1000 + 16 x 30 + 40) / 100000
    got = vllm_memory_fraction(
        S, 100_000, max_seq_len=10, concurrent_seqs=3, dtype_bytes=1, overhead_bytes=40
    )
    assert got == pytest.approx(0.0152)
    got = vllm_memory_fraction(S, 4 * GIB, max_seq_len=10, concurrent_seqs=3)
    assert got == pytest.approx((2000 + 960 + 2 * GIB) / (4 * GIB))
    assert checkpoint_bytes(100) == (1200, 400)  # fp32 weights + two fp32 moments
    assert checkpoint_bytes(100, weight_bytes=2) == (600, 200)
    assert checkpoint_bytes(100, optimizer=False) == (400, 400)
    assert flops_per_token(S, 4) == 6 * 1000 + 12 * 2 * 8 * 4
