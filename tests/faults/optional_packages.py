"""A config asks for an optional package this environment does not have."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "optional_packages"
TEXTS = ["hello world, say hi to the shop assistant"] * 4
CASES = (
    FaultCase(
        FAMILY,
        "flash_attention_2",
        ("FA_REQUESTED_NOT_INSTALLED",),
        "from_pretrained(attn_implementation='flash_attention_2') without flash-attn",
    ),
    FaultCase(
        FAMILY,
        "liger_kernel",
        ("LIGER_REQUESTED_NOT_INSTALLED",),
        "SFTTrainer with SFTConfig(use_liger_kernel=True) without liger-kernel",
    ),
    FaultCase(
        FAMILY,
        "bitsandbytes_4bit",
        ("BNB_REQUESTED_NOT_INSTALLED",),
        "from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True)) without bitsandbytes",
    ),
    FaultCase(
        FAMILY,
        "deepspeed_config",
        ("DEEPSPEED_REQUESTED_NOT_INSTALLED",),
        "TrainingArguments(deepspeed={zero stage 2}) without deepspeed",
    ),
    FaultCase(
        FAMILY,
        "grpo_use_vllm",
        ("VLLM_REQUESTED_NOT_INSTALLED",),
        "GRPOTrainer with GRPOConfig(use_vllm=True) without vLLM",
    ),
)


def _saved_tiny(work: Path) -> Path:
    from shop_r1.tiny import make_tiny_model_and_tokenizer

    model, tokenizer = make_tiny_model_and_tokenizer(TEXTS)
    out = work / "tiny-model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def flash_attention_2(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(_saved_tiny(work), attn_implementation="flash_attention_2")


def _sft(work: Path, **config: object) -> None:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from shop_r1.tiny import make_tiny_model_and_tokenizer

    model, tokenizer = make_tiny_model_and_tokenizer(TEXTS)
    data = Dataset.from_list([{"text": "hello world"}] * 8)
    args = SFTConfig(output_dir=str(work / "out"), report_to="none", bf16=False, **config)  # type: ignore[arg-type]
    SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer).train()


def liger_kernel(work: Path) -> None:
    _sft(work, use_liger_kernel=True)


def bitsandbytes_4bit(work: Path) -> None:
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    AutoModelForCausalLM.from_pretrained(
        _saved_tiny(work), quantization_config=BitsAndBytesConfig(load_in_4bit=True)
    )


def deepspeed_config(work: Path) -> None:
    zero2 = {"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}
    _sft(work, deepspeed=zero2)


def grpo_use_vllm(work: Path) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from shop_r1.tiny import make_tiny_model_and_tokenizer

    model, tokenizer = make_tiny_model_and_tokenizer(TEXTS)
    data = Dataset.from_list([{"prompt": "say hi"}] * 8)
    args = GRPOConfig(
        output_dir=str(work / "out"),
        report_to="none",
        bf16=False,
        use_vllm=True,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
    )
    GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
