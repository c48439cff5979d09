"""GRPO on TRL's `GRPOTrainer` with the hierarchical Shop-R1 reward.

Rewards are TRL reward functions (one per component, so TRL logs each); the rationale
self-certainty needs the live policy, which `BindPolicyCallback` hands it when
training starts. Rows carry `prompt` (chat messages) and `gold_action` (JSON string),
which TRL passes to every reward function as a keyword argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shop_r1 import _compat
from shop_r1.autoconfig import AutoPlan
from shop_r1.config import GRPORunConfig
from shop_r1.train_sft import last_checkpoint
from shop_r1_doctor.api import ModelShape


def reward_config(cfg: GRPORunConfig) -> Any:
    from shop_r1.rewards import RewardConfig

    return RewardConfig(
        format=cfg.format_reward,
        dars=cfg.dars,
        threshold=cfg.rouge_threshold,
        binary=cfg.binary_reward,
        alpha=cfg.self_certainty_weight,
    )


def build_rewards(cfg: GRPORunConfig) -> list[Any]:
    """Format, type, attribute, value (+ self-certainty when its weight is > 0)."""
    from shop_r1.rewards import build_reward_funcs
    from shop_r1.self_certainty import SelfCertaintyReward

    rc = reward_config(cfg)
    funcs: list[Any] = list(build_reward_funcs(rc))
    if rc.alpha > 0:
        funcs.append(SelfCertaintyReward(rc))
    return funcs


def prepare(trainer: Any, plan: AutoPlan) -> None:
    """What the plan changes on a built `GRPOTrainer` (train and the benchmark alike):
    the reference model's dtype, the padding trim, then the padded-logps guard around
    whatever scores the tokens."""
    import warnings

    from shop_r1 import precision

    why_not = precision.cast_reference(trainer, plan)
    if why_not is not None:
        warnings.warn(
            f"shop-r1: reference model left in its loaded dtype: {why_not}",
            RuntimeWarning,
            stacklevel=2,
        )
    if plan.trim_padding:
        _compat.trim_left_padding(trainer)
    _compat.guard_padded_logps(trainer)


def train(
    cfg: GRPORunConfig,
    plan: AutoPlan,
    rows: list[dict[str, Any]],
    *,
    model: Any,
    tokenizer: Any,
    shape: ModelShape,
    resume: bool = False,
    gpu_name: str | None = None,
    extra_rewards: list[Callable[..., list[float]]] = (),  # type: ignore[assignment]
    args: Any = None,
) -> dict[str, Any]:
    """Run GRPO; save the final model; return the run summary (incl. first/last reward).
    `args`: the `ShopGRPOConfig` `train` already built and validated (None: built here)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from shop_r1 import precision, trl_config
    from shop_r1.callbacks import BindPolicyCallback, NonFiniteGradGuard, SummaryCallback
    from shop_r1.watch import RolloutWatch

    if plan.attn_implementation == "sdpa":
        _compat.guard_sdpa_padded_rows()
    rewards = build_rewards(cfg) + list(extra_rewards)
    needs_policy = [r for r in rewards if hasattr(r, "bind")]
    guard = NonFiniteGradGuard()
    watch = RolloutWatch()
    summary = SummaryCallback(
        shape,
        plan.seq_len,
        gpu_name=gpu_name,
        n_gpus=cfg.num_processes,
        guard=guard,
        watch=watch,
    )
    dataset = Dataset.from_list(
        [{"prompt": r["prompt"], "gold_action": r["gold_action"]} for r in rows]
    )
    precision.apply(model, plan)
    trainer = GRPOTrainer(
        model=model,
        args=args if args is not None else trl_config.build(cfg, plan).validate(),
        reward_funcs=rewards,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[BindPolicyCallback(needs_policy, tokenizer), summary, guard, watch],
    )
    prepare(trainer, plan)
    trainer.train(resume_from_checkpoint=last_checkpoint(cfg.output_dir) if resume else None)
    trainer.save_model(cfg.output_dir)
    tokenizer.save_pretrained(cfg.output_dir)
    return summary.summary
