"""The memory model against the peaks measured on an H100 (performance.md)."""

import pytest

from shop_r1_doctor.memory import (
    GIB,
    KNOWN_SHAPES,
    ModelShape,
    estimate_training_memory,
    flops_per_token,
    kv_cache_bytes_per_token,
    shape_for_params,
    vllm_memory_fraction,
)

Q05 = KNOWN_SHAPES["0.5b"]


@pytest.mark.parametrize(
    ("key", "params", "kv_kib", "gflops"),
    [("0.5b", 494e6, 12, 3.49), ("1.5b", 1.54e9, 28, 10.32), ("3b", 3.09e9, 36, 20.33)],
)
def test_known_shapes_match_published_counts(key, params, kv_kib, gflops):
    shape = KNOWN_SHAPES[key]
    assert shape.params == pytest.approx(params, rel=0.01)
    assert kv_cache_bytes_per_token(shape) == kv_kib * 1024
    assert flops_per_token(shape, 2048) / 1e9 == pytest.approx(gflops, abs=0.01)


@pytest.mark.parametrize(
    ("ckpt", "measured_gib"),
    [(False, 63.0), (True, 39.8)],
)
def test_trl_default_load_within_10_percent_of_measured_peak(ckpt, measured_gib):
    est = estimate_training_memory(
        Q05, seq_len=2048, micro_batch=8, master_fp32=True, grad_checkpointing=ckpt
    )
    assert est.total / GIB == pytest.approx(measured_gib, rel=0.10)


def test_static_bytes_per_param():
    mixed = estimate_training_memory(Q05, seq_len=1, micro_batch=1, master_fp32=True)
    pure = estimate_training_memory(Q05, seq_len=1, micro_batch=1)
    static = lambda e: e.weights + e.grads + e.optimizer  # noqa: E731
    assert 16 <= static(mixed) / Q05.params <= 18
    assert static(pure) / Q05.params == pytest.approx(8, rel=0.01)


def test_levers_reduce_memory_in_the_expected_places():
    base = estimate_training_memory(Q05, seq_len=2048, micro_batch=8)
    chunked = estimate_training_memory(Q05, seq_len=2048, micro_batch=8, chunked_loss=True)
    ckpt = estimate_training_memory(Q05, seq_len=2048, micro_batch=8, grad_checkpointing=True)
    eager = estimate_training_memory(Q05, seq_len=2048, micro_batch=8, attention="eager")
    assert chunked.logits < base.logits / 10 and chunked.activations == base.activations
    assert ckpt.activations < base.activations / 5
    assert eager.activations > base.activations
    sharded = estimate_training_memory(Q05, seq_len=2048, micro_batch=8, shards=2)
    assert sharded.optimizer == base.optimizer // 2


def test_shape_from_config_dict_and_nearest_known_shape():
    llama = {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    shape = ModelShape.from_config_dict(llama)
    # attn 64*64*2 + 2*64*32 ; mlp 3*64*128 ; norms 128 ; untied embeddings 2*100*64 ; final norm
    assert shape.params == 2 * (8192 + 4096 + 24576 + 128) + 12800 + 64
    assert shape_for_params(500_000_000).name == "Qwen2.5-0.5B"
    assert shape_for_params(2_000_000_000).name == "Qwen2.5-1.5B"
    with pytest.raises(ValueError, match="hidden_size"):
        ModelShape.from_config_dict({"num_hidden_layers": 2})


def test_vllm_fraction_grows_with_kv_budget():
    small = vllm_memory_fraction(Q05, 80 * GIB, max_seq_len=2048, concurrent_seqs=16)
    big = vllm_memory_fraction(Q05, 80 * GIB, max_seq_len=2048, concurrent_seqs=256)
    assert 0 < small < big < 1
