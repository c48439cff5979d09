"""A TRL `GRPOTrainer` around a tiny Qwen2 model, for tests that run TRL's own GRPO
methods (scoring, loss) on crafted batches on the CPU."""

from __future__ import annotations

from typing import Any


def tiny_grpo_trainer(tmp_path: Any, beta: float = 0.0, **args: Any) -> Any:
    """Built from a saved model path, as TRL needs for a beta > 0 reference model;
    `args` go to `GRPOConfig` on top of the small defaults here."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from shop_r1.data.prompts import sft_rows
    from shop_r1.data.synth import generate_sessions
    from shop_r1.tiny import make_tiny_model_and_tokenizer

    rows = sft_rows(generate_sessions(4, seed=0), context="latest", max_tokens=80)
    texts = [m["content"] for r in rows for m in r["prompt"] + r["completion"]]
    model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=300)
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    config = GRPOConfig(
        **{
            "output_dir": str(tmp_path / "out"),
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "max_completion_length": 4,
            "beta": beta,
            "use_cpu": True,
            "report_to": [],
            **args,
        }
    )
    return GRPOTrainer(
        model=str(tmp_path / "m"),
        args=config,
        reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
        train_dataset=Dataset.from_list([{"prompt": "hi"}] * 4),
        processing_class=tok,
    )
