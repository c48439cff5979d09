"""A tokenizer without a chat template asked to format a conversation."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "tokenizer"
CASES = (
    FaultCase(
        FAMILY,
        "no_chat_template",
        ("TOKENIZER_NO_CHAT_TEMPLATE",),
        "apply_chat_template on a tokenizer whose chat_template is unset (a base model's)",
    ),
    FaultCase(
        FAMILY,
        "sft_conversational_no_template",
        ("TOKENIZER_NO_CHAT_TEMPLATE",),
        "SFTTrainer on a messages dataset with a tokenizer that has no chat template",
    ),
)


def _tokenizer():
    from shop_r1.tiny import train_tokenizer

    tokenizer = train_tokenizer(["hello world, say hi to the shop assistant"] * 4)
    tokenizer.chat_template = None
    return tokenizer


def no_chat_template(work: Path) -> None:
    _tokenizer().apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)


def sft_conversational_no_template(work: Path) -> None:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    tokenizer = _tokenizer()
    model = model_from_config_dict(tiny_config_dict(len(tokenizer)))
    row = {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    }
    args = SFTConfig(output_dir=str(work / "out"), report_to="none", bf16=False)
    SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([row] * 4),
        processing_class=tokenizer,
    )


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
