"""A real TRL GRPO run on CPU with a random tiny model: `python tiny_grpo.py ROWS OUT_DIR`.

With ROWS >= one generation batch (4 prompts) it trains 2 steps and exits 0 (the clean
log fixture); with ROWS < one batch transformers stops at step 0 and only warns, the
silent failure `shop-r1 run` must catch (docs/report.md shows that report).
"""

from __future__ import annotations

import sys

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from shop_r1.tiny import make_tiny_model_and_tokenizer


def length_reward(completions, **kwargs):
    return [float(len(c)) / 100.0 for c in completions]


def main() -> int:
    rows, out = int(sys.argv[1]), sys.argv[2]
    texts = [f"click the button number {i} on the page" for i in range(64)]
    model, tokenizer = make_tiny_model_and_tokenizer(texts)
    data = Dataset.from_dict({"prompt": [f"step {i}: what next?" for i in range(rows)]})
    args = GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=8,
        max_steps=2,
        num_train_epochs=1,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        dataloader_drop_last=True,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=length_reward,
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )
    trainer.train()
    trainer.save_model(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
