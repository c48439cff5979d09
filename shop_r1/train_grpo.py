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
from shop_r1.train_sft import common_training_kwargs, last_checkpoint
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


def trl_kwargs(cfg: GRPORunConfig, plan: AutoPlan) -> dict[str, Any]:
    """Every keyword TRL's GRPOConfig gets: ours from the config and the plan, then the
    user's TRL fields (`trl_args`), which win. The preflight's RunPlan is read from this
    same dict (see `shop_r1.train_sft.trl_kwargs`)."""
    vllm: dict[str, Any] = {"use_vllm": plan.use_vllm}
    if plan.use_vllm:
        vllm["vllm_mode"] = plan.vllm_mode
        if plan.vllm_mode == "colocate" and plan.vllm_gpu_memory_utilization:
            vllm["vllm_gpu_memory_utilization"] = plan.vllm_gpu_memory_utilization
        if plan.vllm_mode == "server":
            vllm.update(
                vllm_server_host=cfg.vllm_server_host,
                vllm_server_port=cfg.vllm_server_port,
                vllm_group_port=cfg.vllm_group_port,
            )
    ours = {
        **common_training_kwargs(cfg, plan),
        "num_generations": cfg.num_generations,
        "generation_batch_size": plan.generation_batch_size,
        "max_completion_length": cfg.max_completion_length,
        "temperature": cfg.temperature,
        "beta": cfg.beta,
        "loss_type": cfg.loss_type,
        "scale_rewards": cfg.scale_rewards,
        **vllm,
    }
    return {**ours, **cfg.trl_args}


def trl_config(cfg: GRPORunConfig, plan: AutoPlan) -> Any:
    """TRL's GRPOConfig for this run: the one place it is built (its `__post_init__`
    checks TRL's batch rules, so `train` calls this before any model loads)."""
    from trl import GRPOConfig

    return GRPOConfig(**trl_kwargs(cfg, plan))


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
    `args`: the GRPOConfig `train` already built and validated (None: built here)."""
    from datasets import Dataset
    from trl import GRPOTrainer

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
    trainer = GRPOTrainer(
        model=model,
        args=args if args is not None else trl_config(cfg, plan),
        reward_funcs=rewards,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[BindPolicyCallback(needs_policy, tokenizer), summary, guard, watch],
    )
    _compat.guard_padded_logps(trainer)
    trainer.train(resume_from_checkpoint=last_checkpoint(cfg.output_dir) if resume else None)
    trainer.save_model(cfg.output_dir)
    tokenizer.save_pretrained(cfg.output_dir)
    return summary.summary
