"""A tokenizer trained on the fly and a tiny random-init causal LM, for tests and the demo.

Nothing is downloaded: the tokenizer is a byte-level BPE learnt from the given texts,
and the model is a Qwen2 (or Llama) architecture a few hundred kB in size, so a full
SFT + GRPO cycle runs on a laptop CPU. torch/transformers are imported inside functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shop_r1 import packing

# ChatML, the template Qwen2.5-Instruct uses, so prompts look like the real thing
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 512) -> Any:
    """A byte-level BPE `PreTrainedTokenizerFast` with ChatML special tokens.

    eos = `<|im_end|>` (what ends an assistant turn), pad = `<|endoftext|>`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(list(texts), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        model_max_length=32768,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_config_dict(
    vocab_size: int,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    max_positions: int = 4096,
    architecture: str = "qwen2",
) -> dict[str, Any]:
    """A `config.json`-style dict (also what the memory model reads)."""
    return {
        "model_type": architecture,
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "intermediate_size": intermediate,
        "max_position_embeddings": max_positions,
        "tie_word_embeddings": True,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
    }


def model_from_config_dict(
    config: dict[str, Any],
    *,
    seed: int = 0,
    dtype: Any = None,
    attn_implementation: str | None = None,
) -> Any:
    """A random-init causal LM from a config dict (`model_type` picks the class)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    kwargs = {k: v for k, v in config.items() if k != "model_type"}
    hf_config = AutoConfig.for_model(config["model_type"], **kwargs)
    torch.manual_seed(seed)
    extra = {"attn_implementation": attn_implementation} if attn_implementation else {}
    if attn_implementation == packing.NAME:
        packing.register()
    model = AutoModelForCausalLM.from_config(hf_config, dtype=dtype or torch.float32, **extra)
    return model


def make_tiny_model_and_tokenizer(
    texts: Iterable[str],
    *,
    vocab_size: int = 512,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    architecture: str = "qwen2",
    seed: int = 0,
) -> tuple[Any, Any]:
    """(model, tokenizer): a BPE tokenizer learnt from `texts` and a random-init model
    whose vocabulary matches it, with eos/pad ids wired into the model's configs."""
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
    config = tiny_config_dict(
        len(tokenizer),
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        intermediate=intermediate,
        architecture=architecture,
    )
    config["eos_token_id"] = tokenizer.eos_token_id
    config["pad_token_id"] = tokenizer.pad_token_id
    config["bos_token_id"] = None
    model = model_from_config_dict(config, seed=seed)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model, tokenizer
