"""The config that runs: TRL's `SFTConfig` / `GRPOConfig` extended with shop-r1's task
fields (the TRL-free run configs of `shop_r1.config` as a mixin), one object from the
preflight to the trainer.

A field both declare keeps shop-r1's type and default ("auto" where the
auto-configuration decides it) until `decide(plan)` writes the plan's decisions into
TRL's fields of the same object; `validate()` then runs TRL's own `__post_init__` once
(it checks the device it runs on, so it cannot run while the config is read). Where TRL
is missing (the light install) `shop_r1.config.run_class` loads the TRL-free classes, so
`--print-config` and `launch --config` still read and check a config; `shop-r1 --help`
and the doctor never import this module.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from trl import GRPOConfig, SFTConfig

from shop_r1 import _compat
from shop_r1.autoconfig import AutoPlan
from shop_r1.config import GRPORunConfig, SFTRunConfig, _RunConfig


@dataclass
class _Resolvable:
    """`decide` and `validate`, shared by the SFT and GRPO classes."""

    # the TRL fields the user set (YAML, --set, flags): they win over the plan
    user: tuple[str, ...] = field(
        default=(), metadata={"help": "TRL fields the user set (they win over the plan)."}
    )
    # the TRL fields the user or the plan chose: what the RunPlan reads
    chosen: tuple[str, ...] = field(default=(), init=False, repr=False)

    def _plan_values(self, plan: AutoPlan) -> dict[str, Any]:
        cfg: Any = self
        report_to = cfg.report_to
        if isinstance(report_to, str):
            report_to = (
                [] if report_to in ("none", "") else [r.strip() for r in report_to.split(",")]
            )
        return {
            **_compat.warmup_kwargs(cfg.warmup_ratio),
            "per_device_train_batch_size": plan.micro_batch_size,
            "gradient_accumulation_steps": plan.gradient_accumulation_steps,
            **_compat.checkpointing_kwargs(plan.gradient_checkpointing),
            "bf16": plan.dtype == "bf16",
            "fp16": plan.dtype == "fp16",
            "optim": plan.optim,
            **_compat.liger_kwargs(plan.liger_kernel),
            "logging_first_step": True,
            "save_strategy": "steps",
            "report_to": report_to,
            "use_cpu": plan.device == "cpu",
            "dataloader_num_workers": plan.dataloader_num_workers,
            "logging_nan_inf_filter": plan.logging_nan_inf_filter,
        }

    def decide(self, plan: AutoPlan) -> Any:
        """Write the plan's decisions into TRL's fields (a TRL field the user set wins);
        a field under TRL's name the plan leaves alone gets TRL's default back."""
        values = {k: v for k, v in self._plan_values(plan).items() if k not in self.user}
        trl_cls = _trl_base(type(self))
        defaults = {f.name: f for f in dataclasses.fields(trl_cls)}
        shared = {f.name for f in dataclasses.fields(_task_base(type(self)))} & set(defaults)
        for name in shared - set(values) - _SAME_MEANING:
            f = defaults[name]
            factory = f.default_factory
            setattr(self, name, factory() if callable(factory) else f.default)
        for name, value in values.items():
            setattr(self, name, value)
        self.chosen = tuple(dict.fromkeys([*values, *self.user]))
        return self

    def validate(self) -> Any:
        """TRL's own `__post_init__`, once: its ValueError names what it rejects."""
        _trl_base(type(self)).__post_init__(self)
        return self

    def settings(self) -> dict[str, Any]:
        """The TRL fields a person or the plan chose, as TRL holds them."""
        return {name: getattr(self, name) for name in self.chosen}


# shop-r1 fields under TRL's names that mean what TRL's do: already TRL's value
_SAME_MEANING = {
    "output_dir",
    "seed",
    "learning_rate",
    "lr_scheduler_type",
    "weight_decay",
    "max_grad_norm",
    "num_train_epochs",
    "max_steps",
    "logging_steps",
    "save_steps",
    "save_total_limit",
    "max_length",
    "num_generations",
    "max_completion_length",
    "temperature",
    "beta",
    "loss_type",
    "scale_rewards",
}


# A field both declare holds shop-r1's value ("auto", "on") until `decide` writes TRL's:
# the two annotations differ by design (type checkers flag the override)
@dataclass
class ShopSFTConfig(_Resolvable, SFTRunConfig, SFTConfig):  # type: ignore[misc]
    """`SFTConfig` with the task fields of `SFTRunConfig`."""

    def _plan_values(self, plan: AutoPlan) -> dict[str, Any]:
        return {
            **super()._plan_values(plan),
            # TRL 1.16 refuses padding_free with a max_length unless it packs (it cannot
            # enforce one then): rows are cut by `truncate_rows` after its preparation
            "max_length": None if plan.padding_free else self.max_length,
            "padding_free": plan.padding_free,
            "completion_only_loss": True,
        }


@dataclass
class ShopGRPOConfig(_Resolvable, GRPORunConfig, GRPOConfig):  # type: ignore[misc]
    """`GRPOConfig` with the task fields of `GRPORunConfig`."""

    def _plan_values(self, plan: AutoPlan) -> dict[str, Any]:
        vllm: dict[str, Any] = {"use_vllm": plan.use_vllm}
        if plan.use_vllm:
            vllm["vllm_mode"] = plan.vllm_mode
            if plan.vllm_mode == "colocate" and plan.vllm_gpu_memory_utilization:
                vllm["vllm_gpu_memory_utilization"] = plan.vllm_gpu_memory_utilization
            if plan.vllm_mode == "server":
                vllm.update(
                    vllm_server_host=self.vllm_server_host,
                    vllm_server_port=self.vllm_server_port,
                    vllm_group_port=self.vllm_group_port,
                )
        return {
            **super()._plan_values(plan),
            "generation_batch_size": plan.generation_batch_size,
            **vllm,
        }


CLASSES: dict[type[_RunConfig], type[Any]] = {
    SFTRunConfig: ShopSFTConfig,
    GRPORunConfig: ShopGRPOConfig,
}


def _trl_base(cls: type) -> Any:
    return SFTConfig if issubclass(cls, SFTConfig) else GRPOConfig


def _task_base(cls: type) -> type[_RunConfig]:
    return SFTRunConfig if issubclass(cls, SFTRunConfig) else GRPORunConfig


def build(cfg: _RunConfig, plan: AutoPlan) -> Any:
    """The run's TRL config with the plan's decisions written in: a copy of `cfg` when
    it was loaded as one (the loaded config keeps the user's "auto"), else made from a
    task-only config. TRL's own checks run in `validate()`."""
    if isinstance(cfg, _Resolvable):
        return copy.copy(cfg).decide(plan)
    task = _task_base(type(cfg))
    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(task)}
    return CLASSES[task](**values).decide(plan)
