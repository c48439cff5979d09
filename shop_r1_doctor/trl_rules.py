"""TRL's batch rules and the defaults they use, mirrored in one place (pure Python).

The doctor's plan checks and the trainer's auto-configuration both size batches by these
rules, so a plan the trainer writes passes the doctor's checks and TRL's own
`GRPOConfig.__post_init__` (trl/trainer/grpo_config.py, verified on TRL 1.16):

- generation batch, when neither is set: per_device_train_batch_size x num_processes x
  steps_per_generation, steps_per_generation defaulting to gradient_accumulation_steps;
- a set generation_batch_size must be a multiple of the global batch (per-device x
  processes), and steps_per_generation and generation_batch_size exclude each other
  (GRPOConfig raises on either: `GrpoBatch.refused`);
- the generation batch must hold whole groups: divisible by num_generations (>= 2); so
  must the global eval batch when it evaluates (num_generations_eval, `grpo_eval_groups`);
- auto_find_batch_size is refused (halving the batch on OOM would split groups);
- TRL's RepeatSampler drops an incomplete generation batch: fewer prompts than
  generation batch / num_generations trains zero steps. SFT: fewer rows than one effective
  batch (per-device x processes x accumulation) likewise.

Every count includes the number of processes: the batch is global, not per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

# TRL / transformers defaults the rules fall back to when a plan leaves them out
TRL_DEFAULTS = {
    "num_generations": 8,  # GRPOConfig.num_generations
    "per_device_train_batch_size": 8,  # TrainingArguments
    "gradient_accumulation_steps": 1,  # TrainingArguments
    "per_device_eval_batch_size": 8,  # TrainingArguments
    "num_processes": 1,
}


@dataclass(frozen=True)
class GrpoBatch:
    """A GRPO generation batch as TRL forms it."""

    size: int  # completions per generation batch (global)
    num_generations: int
    how: str  # in words, for findings and decision notes
    explicit: bool  # generation_batch_size was given
    global_micro: int  # per-device x processes: one micro batch of every process
    # why GRPOConfig.__post_init__ raises on the sizes themselves (None: it accepts them)
    refused: Literal["both_set", "not_global_multiple"] | None = None

    @property
    def whole_groups(self) -> bool:
        return self.num_generations >= 2 and self.size % self.num_generations == 0

    @property
    def prompts(self) -> int:
        """Prompts per generation batch (whole groups only)."""
        return self.size // self.num_generations if self.whole_groups else 0


def grpo_batch(
    *,
    num_processes: int | None = None,
    per_device: int | None = None,
    gradient_accumulation_steps: int | None = None,
    steps_per_generation: int | None = None,
    generation_batch_size: int | None = None,
    num_generations: int | None = None,
) -> GrpoBatch:
    """TRL's generation batch from what a plan says (None = TRL's default), and whether
    GRPOConfig refuses the sizes: both generation_batch_size and steps_per_generation
    set, or a generation_batch_size that is not a multiple of per-device x processes."""
    gens = num_generations or TRL_DEFAULTS["num_generations"]
    procs = num_processes or TRL_DEFAULTS["num_processes"]
    per = per_device or TRL_DEFAULTS["per_device_train_batch_size"]
    global_micro = per * procs
    if generation_batch_size:
        refused: Literal["both_set", "not_global_multiple"] | None = None
        if steps_per_generation:
            refused = "both_set"
        elif generation_batch_size % global_micro:
            refused = "not_global_multiple"
        return GrpoBatch(
            generation_batch_size,
            gens,
            f"generation_batch_size={generation_batch_size}",
            True,
            global_micro,
            refused,
        )
    steps = (
        steps_per_generation
        or gradient_accumulation_steps
        or TRL_DEFAULTS["gradient_accumulation_steps"]
    )
    how = f"{procs} process(es) x per_device_train_batch_size {per} x steps_per_generation {steps}"
    return GrpoBatch(global_micro * steps, gens, how, False, global_micro)


def grpo_eval_groups(
    *,
    eval_strategy: str | None,
    num_processes: int | None = None,
    per_device_eval: int | None = None,
    num_generations: int | None = None,
    num_generations_eval: int | None = None,
) -> tuple[int, int] | None:
    """(global eval batch, completions per eval prompt) when GRPOConfig would refuse them:
    with evaluation on (any eval_strategy but "no"; transformers then sets do_eval), the
    global eval batch must be divisible by num_generations_eval (default num_generations).
    None when it evaluates nothing or the batch holds whole groups."""
    if eval_strategy in (None, "no"):
        return None
    procs = num_processes or TRL_DEFAULTS["num_processes"]
    size = (per_device_eval or TRL_DEFAULTS["per_device_eval_batch_size"]) * procs
    gens = num_generations_eval or num_generations or TRL_DEFAULTS["num_generations"]
    return None if size % gens == 0 else (size, gens)


# GRPOConfig's vLLM fields by the mode they apply in (trl/generation/vllm_generation.py,
# TRL 1.16: the colocated engine reads the first set, only the main process's server client
# the second); a field of the other mode is ignored by TRL, so no check should judge it.
VLLM_COLOCATE_FIELDS = (
    "vllm_gpu_memory_utilization",
    "vllm_tensor_parallel_size",
    "vllm_enable_sleep_mode",
)
VLLM_SERVER_FIELDS = (
    "vllm_server_host",
    "vllm_server_base_url",
    "vllm_server_port",
    "vllm_group_port",
    "vllm_server_timeout",
)
TRL_VLLM_MODE_DEFAULT = "colocate"  # GRPOConfig.vllm_mode


def vllm_fields_in_effect(trl_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The TRL keywords that take effect: vLLM fields only with use_vllm, and only those
    of the vLLM mode that runs."""
    if not trl_kwargs.get("use_vllm"):
        drop = {*VLLM_COLOCATE_FIELDS, *VLLM_SERVER_FIELDS, "vllm_mode"}
    elif trl_kwargs.get("vllm_mode", TRL_VLLM_MODE_DEFAULT) == "server":
        drop = set(VLLM_COLOCATE_FIELDS)
    else:
        drop = set(VLLM_SERVER_FIELDS)
    return {k: v for k, v in trl_kwargs.items() if k not in drop}


LayoutCause = Literal[
    "ray", "nodes", "count_unknown", "vllm_unknown", "spare_gpu", "one_gpu_per_trainer"
]


@dataclass(frozen=True)
class VllmLayout:
    """Where GRPO's vLLM runs: on the trainers' GPUs or as `trl vllm-serve` on its own."""

    mode: Literal["colocate", "server"]
    cause: LayoutCause  # the caller words it (decision table, launch script)
    spare: int  # GPUs of this machine no trainer uses (the server's); 0 when colocated


def vllm_layout(
    *,
    gpus: int | None,
    processes: int | None,
    nodes: int = 1,
    ray: bool = False,
    vllm_known: bool = True,
) -> VllmLayout:
    """The vLLM layout for `gpus` GPUs of one machine and `processes` training processes
    (None: the launcher places them, all GPUs but the server's).

    A server needs a GPU no trainer uses: TRL's weight sync builds an NCCL group of the
    server and the main process, and one on the same GPU fails ('Duplicate GPU detected').
    Only the main process talks to the server (trl/generation/vllm_generation.py), at a
    loopback address on its own machine: a run over several machines, or one whose
    processes Ray places, colocates (nothing starts a server there). More processes than
    this machine's GPUs means the run spans machines."""

    def colocate(cause: LayoutCause) -> VllmLayout:
        return VllmLayout("colocate", cause, 0)

    if ray:
        return colocate("ray")
    if gpus is not None and gpus <= 1 and nodes == 1:
        return colocate("one_gpu_per_trainer")
    if nodes > 1:
        return colocate("nodes")
    if gpus is None:
        return colocate("count_unknown")
    if processes is not None and processes > gpus:
        return colocate("nodes")
    if not vllm_known:
        return colocate("vllm_unknown")
    spare = gpus - processes if processes is not None else 1
    if spare < 1:
        return colocate("one_gpu_per_trainer")
    return VllmLayout("server", "spare_gpu", spare)


def valid_num_generations(size: int) -> list[int]:
    """The num_generations values that divide a generation batch of `size`."""
    return [g for g in range(2, size + 1) if size % g == 0]


def steps_multiple_for(num_generations: int, per_step: int) -> int:
    """steps_per_generation must be a multiple of this for whole groups of num_generations
    when each step brings `per_step` completions (per-device x processes)."""
    return num_generations // math.gcd(num_generations, max(per_step, 1))


def grpo_generation_unit(num_generations: int, num_processes: int, micro_batch: int) -> int:
    """The smallest generation batch that is whole groups, splits evenly over the processes
    and is a multiple of the global micro batch (TRL's divisibility rules together)."""
    return math.lcm(num_generations, num_processes, micro_batch * num_processes)


def round_up_to(value: int, unit: int) -> int:
    return math.ceil(value / unit) * unit


def accumulation_steps(global_batch: int, micro_batch: int, num_processes: int) -> int:
    """Micro batches per optimizer step that make `global_batch` rows (completions for
    GRPO) from `micro_batch` rows per process on `num_processes` processes."""
    return max(global_batch // max(num_processes, 1) // max(micro_batch, 1), 1)


def effective_batch(per_device: int, gradient_accumulation_steps: int, num_processes: int) -> int:
    """Rows (GRPO: completions) per optimizer step: per-device x accumulation x processes."""
    return per_device * gradient_accumulation_steps * num_processes


def sft_effective_batch(
    num_processes: int | None, per_device: int | None, gradient_accumulation_steps: int | None
) -> int:
    """`effective_batch` of a plan, TRL's defaults for what it leaves out."""
    return effective_batch(
        per_device or TRL_DEFAULTS["per_device_train_batch_size"],
        gradient_accumulation_steps or TRL_DEFAULTS["gradient_accumulation_steps"],
        num_processes or TRL_DEFAULTS["num_processes"],
    )
