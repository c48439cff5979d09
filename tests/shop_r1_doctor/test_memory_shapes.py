"""The memory model's parameter count against the real models: for small configs of each
architecture the doctor knows (biases, tied embeddings, GQA, explicit head_dim, nested
text_config), `ModelShape.from_config_dict(...).params` must equal transformers' own
`sum(p.numel())`."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from shop_r1_doctor.memory import ModelShape  # noqa: E402

BASE = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 300,
}
# (case, model_type, config overrides)
ROWS = [
    ("qwen2 untied", "qwen2", {"tie_word_embeddings": False}),
    ("qwen2 tied", "qwen2", {"tie_word_embeddings": True}),
    ("qwen2 MHA", "qwen2", {"num_key_value_heads": 4}),
    ("llama no bias", "llama", {"tie_word_embeddings": False}),
    ("llama bias", "llama", {"attention_bias": True, "tie_word_embeddings": False}),
    ("llama head_dim 32", "llama", {"head_dim": 32, "tie_word_embeddings": False}),
    ("mistral", "mistral", {"tie_word_embeddings": False}),
    ("llama 3 layers wide mlp", "llama", {"num_hidden_layers": 3, "intermediate_size": 200}),
]


@pytest.mark.parametrize(("case", "model_type", "overrides"), ROWS, ids=[r[0] for r in ROWS])
def test_params_match_transformers(case, model_type, overrides):
    d = {**BASE, **overrides, "model_type": model_type}
    config = transformers.AutoConfig.for_model(**d)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    real = sum(p.numel() for p in model.parameters())
    shape = ModelShape.from_config_dict(config.to_dict(), name=case)
    assert shape.params == real
    assert (shape.layers, shape.hidden, shape.heads, shape.vocab) == (
        d["num_hidden_layers"],
        64,
        4,
        300,
    )
    assert shape.kv_heads == d.get("num_key_value_heads", 4)
    assert shape.intermediate == d["intermediate_size"]
    assert shape.tied_embeddings is bool(config.tie_word_embeddings)
    assert shape.head_dim == (32 if "head_dim" in overrides else 0)  # 0: hidden / heads


def test_config_defaults_and_errors():
    # no kv heads -> MHA; no intermediate -> 4 x hidden; nested text_config (VLM style)
    plain = {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 10}
    shape = ModelShape.from_config_dict({"text_config": plain, "model_type": "x"}, name="n")
    assert (shape.kv_heads, shape.intermediate, shape.name) == (2, 32, "n")
    # attn 4 x 64 = 256, mlp 3 x 8 x 32 = 768, norms 16 -> 1040/layer; embed + head 160; final norm 8
    assert shape.params == 1040 + 160 + 8
    # Qwen2: q/k/v biases although its config does not say so: q 8 + k 8 + v 8
    assert ModelShape.from_config_dict({**plain, "model_type": "qwen2"}).params == 1208 + 24
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"):
        bad = {k: v for k, v in plain.items() if k != key}
        with pytest.raises(ValueError, match=f"model config: {key}: missing or not an integer"):
            ModelShape.from_config_dict(bad)
    with pytest.raises(ValueError, match="hidden_size"):
        ModelShape.from_config_dict({**plain, "hidden_size": "8"})
