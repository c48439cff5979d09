"""SFT cold start on TRL's `SFTTrainer`: config -> data -> model -> train -> summary.

The plan (`shop_r1.autoconfig.AutoPlan`) has already been decided and checked by the
preflight; this module only turns it into TRL's config and runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shop_r1 import _compat
from shop_r1.autoconfig import AutoPlan
from shop_r1.config import SFTRunConfig
from shop_r1_doctor.api import ModelShape


def truncate_rows(dataset: Any, max_length: int) -> Any:
    """What TRL does to prepared rows when it may truncate: keep the first `max_length`
    tokens, drop rows left with no completion token to learn."""

    def cut(example: dict[str, Any]) -> dict[str, Any]:
        return {
            "input_ids": example["input_ids"][:max_length],
            "labels": example["labels"][:max_length],
        }

    dataset = dataset.map(cut)
    return dataset.filter(lambda ex: any(label != -100 for label in ex["labels"]))


def make_trainer(
    cfg: SFTRunConfig,
    plan: AutoPlan,
    dataset: Any,
    *,
    model: Any,
    tokenizer: Any,
    args: Any = None,
    **kw: Any,
) -> Any:
    """TRL's SFTTrainer for the plan (the benchmark builds its trainers here too); `args`:
    the `ShopSFTConfig` `train` already built and validated (None: built here)."""
    from trl import SFTTrainer

    from shop_r1 import precision, trl_config

    if plan.token_budget:
        _compat.quiet_single_bin_warning()
    precision.apply(model, plan)
    trainer = SFTTrainer(
        model=model,
        args=args if args is not None else trl_config.build(cfg, plan).validate(),
        train_dataset=dataset,
        processing_class=tokenizer,
        **kw,
    )
    if plan.padding_free:
        trainer.train_dataset = truncate_rows(trainer.train_dataset, cfg.max_length)
    if plan.token_budget:
        trainer.train_dataset = pack_bins(trainer.train_dataset, plan.token_budget, cfg.seed)
    return trainer


def pack_bins(dataset: Any, tokens: int, seed: int) -> Any:
    """Rows (already cut at max_length) packed into bins of up to `tokens` tokens by TRL's
    best-fit-decreasing packing; each bin keeps its rows' boundaries (`seq_lengths`),
    which the padding-free collator turns into `cu_seq_lens`, so rows never attend to
    each other. Shuffled first, as TRL does before it packs: BFD sorts by length, and a
    fixed order would put the same rows together every epoch."""
    from trl import pack_dataset

    rows = dataset.select_columns(["input_ids", "labels"]).shuffle(seed=seed)
    return pack_dataset(rows, tokens, "bfd")


def torch_dtype(plan: AutoPlan) -> Any:
    import torch

    if plan.master_weights == "fp32":
        return torch.float32
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(plan.dtype, torch.float32)


def register_attention(attn_implementation: str) -> None:
    """Our own attention functions must be known to transformers before a model loads."""
    from shop_r1 import packing

    if attn_implementation == packing.NAME:
        packing.register()


def load_model_and_tokenizer(model_id: str, plan: AutoPlan) -> tuple[Any, Any]:
    """Weights in the planned master dtype, the planned attention kernel."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_id)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    register_attention(plan.attn_implementation)
    model = AutoModelForCausalLM.from_pretrained(
        model_id,
        attn_implementation=plan.attn_implementation,
        **_compat.dtype_kwarg(torch_dtype(plan)),
    )
    return model, tokenizer


def train(
    cfg: SFTRunConfig,
    plan: AutoPlan,
    rows: list[dict[str, Any]],
    *,
    model: Any,
    tokenizer: Any,
    shape: ModelShape,
    resume: bool = False,
    gpu_name: str | None = None,
    args: Any = None,
) -> dict[str, Any]:
    """Run SFT on conversational prompt/completion rows; save the final model; return
    the run summary (tokens/s, MFU, peak memory, first/last loss)."""
    from datasets import Dataset

    summary, guard = run_callbacks(cfg, plan, shape, gpu_name=gpu_name)
    dataset = Dataset.from_list(
        [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows]
    )
    trainer = make_trainer(
        cfg,
        plan,
        dataset,
        model=model,
        tokenizer=tokenizer,
        args=args,
        callbacks=[summary, guard],
    )
    trainer.train(resume_from_checkpoint=last_checkpoint(cfg.output_dir) if resume else None)
    trainer.save_model(cfg.output_dir)
    tokenizer.save_pretrained(cfg.output_dir)
    return summary.summary


def run_callbacks(
    cfg: SFTRunConfig, plan: AutoPlan, shape: ModelShape, *, gpu_name: str | None = None
) -> tuple[Any, Any]:
    """(summary, non-finite guard): the callbacks every SFT run carries (the speed
    benchmark runs them too, so their per-step cost is in its figures)."""
    from shop_r1.callbacks import NonFiniteGradGuard, SummaryCallback

    guard = NonFiniteGradGuard()
    summary = SummaryCallback(
        shape, plan.seq_len, gpu_name=gpu_name, n_gpus=cfg.num_processes, guard=guard
    )
    return summary, guard


def last_checkpoint(output_dir: str) -> str | None:
    """The newest `checkpoint-N` directory, or None (then training starts fresh)."""
    from transformers.trainer_utils import get_last_checkpoint

    path = Path(output_dir)
    return get_last_checkpoint(str(path)) if path.is_dir() else None
