# ruff: noqa: RUF009 -- `_f` is `dataclasses.field` with the help text: a field, not a shared default
"""One typed config per training command: the single source of defaults.

Precedence: dataclass default < YAML file (`--config`) < command-line flag. A file is
read by the doctor's one schema reader (`shop_r1_doctor.api.Reader`), so every error in
it has the one shape `FILE:LINE: FIELD: message` (knowledge, profiles and plans share
it): an unknown key, a wrong type, a value out of range. `__post_init__` collects every
invalid value (`ConfigError.problems`, one per field); `load_config` places each on the
line of the file that set it. `"auto"` means: decided by `shop_r1.autoconfig` from the
machine's facts, printed with the reason.

These classes hold the task's fields only and need no TRL. Where TRL is installed a config
is loaded as their `shop_r1.trl_config` subclass, TRL's own `SFTConfig`/`GRPOConfig`, so a
TRL field the user sets (read here by TRL's parser) is a field of the run config.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from shop_r1_doctor.errors import ToolError

Auto = Literal["auto"]
AttnChoice = Literal[
    "auto",
    "eager",
    "sdpa",
    "sdpa_varlen",
    "flex_attention",
    "flash_attention_2",
    "flash_attention_3",
]
DtypeChoice = Literal["auto", "bf16", "fp16", "fp32"]
Switch = Literal["auto", "on", "off"]


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


class ConfigError(ToolError):
    """Invalid values of a run config: `problems` is [(field, message)], all of them.

    Built in code the text is `SFTRunConfig: field: message; ...`; `load_config` turns it
    into `FILE:LINE: field: message` for the values a file set."""

    def __init__(self, cls_name: str, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__(f"{cls_name}: " + "; ".join(f"{f}: {m}" for f, m in problems))


@dataclass
class _RunConfig:
    """Fields shared by SFT and GRPO."""

    model: str = _f("", "Hub id or local directory of the model to train.")
    data: str = _f("", "Sessions file (JSONL or parquet) in the shop-r1 session format.")
    output_dir: str = _f(
        "runs/train", "Where checkpoints, TensorBoard logs and the final model go."
    )
    seed: int = _f(0, "Seed for the split, data order and initialisation.")
    test_fraction: float = _f(0.1, "Share of sessions held out (split by session, never by step).")
    context: Literal["full", "latest"] = _f(
        "full", "Prompt context: the whole session so far (paper default) or the latest page."
    )
    max_prompt_tokens: int | None = _f(
        None, "Drop the oldest steps of a prompt beyond this many tokens (None: keep all)."
    )
    learning_rate: float = _f(2e-5, "Peak learning rate.")
    lr_scheduler_type: str = _f("cosine", "transformers scheduler name.")
    warmup_ratio: float = _f(0.03, "Share of steps for the linear warm-up.")
    weight_decay: float = _f(0.0, "AdamW weight decay.")
    max_grad_norm: float = _f(1.0, "Gradient clipping norm.")
    num_train_epochs: float = _f(1.0, "Passes over the training rows (ignored when max_steps > 0).")
    max_steps: int = _f(-1, "Stop after this many optimizer steps (-1: run the epochs).")
    global_batch_size: int = _f(
        64, "Rows per optimizer step over all GPUs (= micro batch x accumulation x GPUs)."
    )
    micro_batch_size: int | Auto = _f("auto", "Rows per GPU per forward pass.")
    gradient_accumulation_steps: int | Auto = _f(
        "auto", "Micro batches per optimizer step (auto: global batch / (micro batch x GPUs))."
    )
    attn_implementation: AttnChoice = _f("auto", "Attention kernel passed to transformers.")
    dtype: DtypeChoice = _f(
        "auto", "Compute dtype (auto: bf16 where supported, fp16, fp32 on CPU)."
    )
    master_weights: Literal["auto", "fp32", "bf16"] = _f(
        "auto",
        "Weights + optimizer precision: fp32 masters with autocast (TRL's default load) or pure "
        "bf16 (8 instead of 16-18 bytes/param; auto: bf16 unless the learning rate is too small "
        "for bf16 updates).",
    )
    hidden_dtype: Literal["auto", "fp32", "bf16"] = _f(
        "auto",
        "With fp32 master weights under bf16 autocast: the dtype of the hidden states between "
        "layers (auto: bf16, as a bf16 model keeps them; fp32: autocast's default, the "
        "embedding's fp32 output carried through every residual add).",
    )
    gradient_checkpointing: Switch = _f(
        "auto", "Recompute activations (auto: only if memory needs it)."
    )
    liger_kernel: Switch = _f(
        "auto",
        "Liger's fused Triton kernels for RMSNorm, SwiGLU and RoPE (auto: SFT on a CUDA GPU "
        "when liger-kernel imports).",
    )
    optim: str = _f("auto", "transformers optimizer name (auto: adamw_torch_fused on CUDA).")
    logging_steps: int = _f(10, "Log every N optimizer steps.")
    save_steps: int = _f(200, "Checkpoint every N optimizer steps.")
    save_total_limit: int = _f(2, "Keep at most this many checkpoints.")
    report_to: str = _f("tensorboard", "tensorboard, wandb, none (comma-separated for several).")
    num_processes: int = _f(1, "GPUs (processes) the run uses; set by `accelerate launch`.")
    gpu_memory_headroom: float = _f(
        0.9, "Share of GPU memory the auto-configuration may plan to use."
    )

    def _check(self) -> list[str]:
        errors = _type_errors(self)  # resets mistyped fields so the value rules can run
        positive = ("global_batch_size", "logging_steps", "save_steps", "num_processes")
        errors += [
            f"{n}: must be >= 1, got {getattr(self, n)}" for n in positive if getattr(self, n) < 1
        ]
        for name in ("micro_batch_size", "gradient_accumulation_steps"):
            value = getattr(self, name)
            if value != "auto" and value < 1:
                errors.append(f"{name}: must be >= 1 or 'auto', got {value}")
        if not 0 <= self.test_fraction < 1:
            errors.append(f"test_fraction: must be in [0, 1), got {self.test_fraction}")
        if self.learning_rate <= 0:
            errors.append(f"learning_rate: must be > 0, got {self.learning_rate}")
        if not 0 <= self.warmup_ratio < 1:
            errors.append(f"warmup_ratio: must be in [0, 1), got {self.warmup_ratio}")
        if not 0.1 <= self.gpu_memory_headroom <= 1:
            errors.append(
                f"gpu_memory_headroom: must be in [0.1, 1], got {self.gpu_memory_headroom}"
            )
        if self.save_total_limit < 1:
            errors.append(f"save_total_limit: must be >= 1, got {self.save_total_limit}")
        if self.max_steps == 0 or self.max_steps < -1:
            errors.append(f"max_steps: must be -1 (use epochs) or >= 1, got {self.max_steps}")
        if self.max_steps == -1 and self.num_train_epochs <= 0:
            errors.append(f"num_train_epochs: must be > 0, got {self.num_train_epochs}")
        errors += _choice_problems(self)
        mb, ga = self.micro_batch_size, self.gradient_accumulation_steps
        gbs, procs = self.global_batch_size, self.num_processes
        if mb != "auto" and ga != "auto":
            from shop_r1_doctor.api import effective_batch  # TRL's arithmetic, one owner

            if effective_batch(mb, ga, procs) != gbs:
                errors.append(
                    f"global_batch_size: {gbs} != micro_batch_size {mb} x "
                    f"gradient_accumulation_steps {ga} x num_processes {procs}; "
                    "set one of them to 'auto'"
                )
        elif procs >= 1 and gbs % procs:
            # every process takes the same share: 64 rows on 3 GPUs would train on 63
            errors.append(f"global_batch_size: {gbs} is not a multiple of num_processes {procs}")
        elif procs >= 1:
            # the fixed one of micro batch / accumulation must divide the rows per process
            fixed = (
                ("micro_batch_size", mb) if mb != "auto" else ("gradient_accumulation_steps", ga)
            )
            if fixed[1] != "auto" and fixed[1] >= 1 and (gbs // procs) % fixed[1]:
                errors.append(
                    f"{fixed[0]}: {fixed[1]} does not divide the {gbs // procs} rows per process "
                    f"(global_batch_size {gbs} / num_processes {procs})"
                )
        return errors

    def __post_init__(self) -> None:
        errors = self._check()
        if errors:  # every rule's text is `field: message`
            problems = [(e.partition(": ")[0], e.partition(": ")[2]) for e in errors]
            raise ConfigError(task_class(type(self)).__name__, problems)


@dataclass
class SFTRunConfig(_RunConfig):
    """`shop-r1 train sft`: supervised cold start on (prompt, rationale + action) rows."""

    output_dir: str = _f("runs/sft", "Where checkpoints, TensorBoard logs and the final model go.")
    num_train_epochs: float = _f(4.0, "Passes over the training rows (paper: 4).")
    max_length: int = _f(4096, "Truncate prompt + completion to this many tokens.")
    packing: Switch = _f(
        "auto",
        "Padding-free batches: rows concatenated, no padding tokens (auto: on with flash-attn or "
        "torch >= 2.9 on an Ampere+ GPU, whose varlen kernels keep examples apart).",
    )
    token_budget: int | Literal["auto", "off"] = _f(
        "auto",
        "Padding-free micro batches by tokens, not rows: each forward takes one bin of rows "
        "packed best-fit-decreasing (TRL's packing) up to this many tokens, so every forward "
        "is as large as memory allows (auto: sized by the memory model; off: micro_batch_size "
        "whole rows per forward). global_batch_size then counts rows per step on average.",
    )

    def _check(self) -> list[str]:
        errors = super()._check()
        if self.max_length < 16:
            errors.append(f"max_length: must be >= 16, got {self.max_length}")
        if isinstance(self.token_budget, int) and self.token_budget < self.max_length:
            errors.append(
                f"token_budget: {self.token_budget} tokens cannot hold one row of max_length "
                f"{self.max_length}; raise it or lower max_length"
            )
        return errors


@dataclass
class GRPORunConfig(_RunConfig):
    """`shop-r1 train grpo`: GRPO on the hierarchical Shop-R1 reward."""

    output_dir: str = _f("runs/grpo", "Where checkpoints, TensorBoard logs and the final model go.")
    learning_rate: float = _f(1e-6, "Peak learning rate (paper: 1e-7 on 3B).")
    max_steps: int = _f(500, "Optimizer steps (paper: 500).")
    global_batch_size: int = _f(
        64, "Completions per optimizer step over all GPUs (prompts x num_generations)."
    )
    num_generations: int = _f(8, "Completions per prompt (the group; >= 2 or advantages are 0).")
    generation_batch_size: int | Auto = _f(
        "auto",
        "Completions generated per rollout; must divide by num_generations and micro batch x GPUs.",
    )
    max_completion_length: int = _f(256, "Tokens generated per completion.")
    temperature: float = _f(0.6, "Sampling temperature (paper: 0.6).")
    beta: float = _f(
        0.001, "KL coefficient to the reference model (paper: 0.001; 0 = no reference)."
    )
    loss_type: str = _f("dapo", "TRL GRPO loss (grpo, dapo, dr_grpo, bnpo, ...).")
    scale_rewards: Literal["group", "batch", "none"] = _f(
        "group", "TRL reward scaling: group, batch or none."
    )
    dars: float = _f(1000.0, "Difficulty-aware reward scaling of the value rewards (paper: 1000).")
    rouge_threshold: float = _f(0.75, "ROUGE-L above which a name/text earns credit (paper: 0.75).")
    binary_reward: bool = _f(False, "Ablation: 1 for an exact action, else 0.")
    format_reward: float = _f(
        0.5, "Reward for a valid output (paper: 0.5; 0 = the w/o-format-reward ablation)."
    )
    # Default 0, not the paper's 0.005: TRL scales advantages by each group's reward std,
    # so in a group whose task rewards tie (38-65% of groups in the H100 learning runs)
    # the tiny self-certainty differences alone set unit-size advantages, and GRPO trains
    # confidence instead of actions: held-out exact fell 3 points with it and rose 3.5
    # without it (benchmarks/results/h100_learning_attempts.md). The doctor warns
    # (GRPO_SELF_CERTAINTY_GROUP_SCALED) when it is set with per-group scaling.
    self_certainty_weight: float = _f(
        0.0,
        "alpha, weight of the rationale self-certainty reward (paper: 0.005; 0 = off, "
        "see GRPO_SELF_CERTAINTY_GROUP_SCALED).",
    )
    reference_dtype: Literal["auto", "fp32", "bf16"] = _f(
        "auto",
        "dtype of the frozen reference model (beta > 0) (auto: the compute dtype under "
        "autocast, which casts its weights down at every forward anyway; TRL loads it like "
        "the policy, fp32 with fp32 master weights).",
    )
    trim_padding: Switch = _f(
        "auto",
        "Score each micro batch without the prompt padding none of its rows needs (TRL pads "
        "every prompt to the rollout's longest; auto: on).",
    )
    use_vllm: Switch = _f("auto", "Generate with vLLM (auto: when it is installed and healthy).")
    vllm_mode: Literal["auto", "colocate", "server"] = _f(
        "auto", "colocate on the training GPU (one GPU) or a server on its own GPUs."
    )
    vllm_gpu_memory_utilization: float | Auto = _f(
        "auto", "Share of GPU memory vLLM takes when colocated (auto: from a KV-cache estimate)."
    )
    vllm_server_host: str = _f(
        "127.0.0.1", "Address of the `trl vllm-serve` server (vllm_mode: server)."
    )
    vllm_server_port: int = _f(8000, "HTTP port of the `trl vllm-serve` server.")
    vllm_group_port: int = _f(
        51216, "Port of the NCCL group that pushes updated weights to the vLLM server."
    )

    def _check(self) -> list[str]:
        errors = super()._check()
        if self.num_generations < 2:
            errors.append(
                f"num_generations: must be >= 2, got {self.num_generations} "
                "(with one completion per prompt every group-relative advantage is 0)"
            )
        if self.global_batch_size % self.num_generations:
            errors.append(
                f"global_batch_size: {self.global_batch_size} is not a multiple of "
                f"num_generations {self.num_generations}"
            )
        gbs = self.generation_batch_size
        if gbs != "auto" and gbs % self.num_generations:
            errors.append(
                f"generation_batch_size: {gbs} is not a multiple of num_generations {self.num_generations}"
            )
        if self.max_completion_length < 1:
            errors.append(f"max_completion_length: must be >= 1, got {self.max_completion_length}")
        if self.temperature <= 0:
            errors.append(f"temperature: must be > 0, got {self.temperature}")
        if self.beta < 0:
            errors.append(f"beta: must be >= 0, got {self.beta}")
        if not 0 < self.rouge_threshold <= 1:
            errors.append(f"rouge_threshold: must be in (0, 1], got {self.rouge_threshold}")
        for name in ("vllm_server_port", "vllm_group_port"):
            port = getattr(self, name)
            if not 1 <= port <= 65535:
                errors.append(f"{name}: must be a TCP port in [1, 65535], got {port}")
        if self.vllm_server_port == self.vllm_group_port:
            errors.append(
                f"vllm_group_port: {self.vllm_group_port} is also vllm_server_port; "
                "the weight-sync group needs its own port"
            )
        if not self.vllm_server_host:
            errors.append("vllm_server_host: empty; give the server's address (e.g. 127.0.0.1)")
        vgm = self.vllm_gpu_memory_utilization
        if vgm != "auto" and not 0.05 <= vgm <= 0.95:
            errors.append(
                f"vllm_gpu_memory_utilization: must be in [0.05, 0.95] or 'auto', got {vgm}"
            )
        return errors


CONFIG_CLASSES: dict[str, type[_RunConfig]] = {"sft": SFTRunConfig, "grpo": GRPORunConfig}


def task_class(cls: type[_RunConfig]) -> type[_RunConfig]:
    """shop-r1's own run config class (no TRL field) of a run config class."""
    return SFTRunConfig if issubclass(cls, SFTRunConfig) else GRPORunConfig


def task_fields(cls: type[_RunConfig]) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of shop-r1's run config for this command, without the TRL fields of
    its `shop_r1.trl_config` subclass."""
    return dataclasses.fields(task_class(cls))


def run_class(command: str) -> type[_RunConfig]:
    """The class a run config is loaded as: TRL's config with the task fields
    (`shop_r1.trl_config`) where TRL is installed, else shop-r1's own (the light install
    reads and checks a config without TRL, and names TRL's fields unknown)."""
    try:
        from shop_r1 import trl_config
    except ImportError:
        return CONFIG_CLASSES[command]
    return trl_config.CLASSES[CONFIG_CLASSES[command]]


# a config may group TRL's fields under this key (as `--print-config` writes them)
TRL_GROUP = "trl_args"
TRL_GROUP_HELP = (
    "Other TRL SFTConfig/GRPOConfig fields, passed to TRL as given (a YAML key or --set "
    "that is a TRL field lands here, e.g. top_p, epsilon_high)."
)


# --- typing: YAML and flags give plain values; check them against the annotations ---


def _type_ok(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_type_ok(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " | ".join(_describe(a) for a in typing.get_args(hint))
    return "null" if hint is type(None) else getattr(hint, "__name__", str(hint))


def _coerce(value: Any, hint: Any) -> Any:
    """Undo YAML 1.1 surprises: `off` loads as False, `1e-5` as a string."""
    if _type_ok(value, hint):
        return value
    if isinstance(value, bool) and _type_ok("on", hint):
        return "on" if value else "off"
    if isinstance(value, str) and _type_ok(1.0, hint):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _type_errors(cfg: Any) -> list[str]:
    """Type errors by field; each mistyped field is reset to its default, so the value
    rules can still run and every problem is reported at once."""
    hints = typing.get_type_hints(type(cfg))
    errors = []
    for f in task_fields(type(cfg)):
        value = _coerce(getattr(cfg, f.name), hints[f.name])
        setattr(cfg, f.name, value)
        if not _type_ok(value, hints[f.name]):
            errors.append(f"{f.name}: expected {_describe(hints[f.name])}, got {value!r}")
            factory = f.default_factory
            setattr(cfg, f.name, factory() if callable(factory) else f.default)
        elif hints[f.name] is float and isinstance(value, int):
            setattr(cfg, f.name, float(value))
    return errors


# --- loading: default < YAML < flag ---

# One table for every name a user may write that is not a field of the run config: TRL's
# names for settings shop-r1 decides itself. Each sets shop-r1's field, so the
# auto-configuration and the preflight see it; its value is read with TRL's own parser
# (a TRL user's `per_device_train_batch_size: "4"` or `bf16: "true"` works as in `trl sft
# --config`), then mapped: `same` keeps it, `switch` turns true/false into on/off,
# `bf16`/`fp16` name the dtype (false: fp32). "auto" stays "auto" (decided, with reasons).
ALIASES: dict[str, tuple[str, str]] = {
    "per_device_train_batch_size": ("micro_batch_size", "same"),
    "use_liger_kernel": ("liger_kernel", "switch"),
    "activation_checkpointing": ("gradient_checkpointing", "switch"),
    "bf16": ("dtype", "bf16"),
    "fp16": ("dtype", "fp16"),
}
# Short names users type from other tools: suggested (did you mean), never accepted, so a
# config means the same to every reader.
SHORT_NAMES = {
    "lr": "learning_rate",
    "epochs": "num_train_epochs",
    "steps": "max_steps",
    "batch_size": "global_batch_size",
    "bs": "global_batch_size",
    "micro_batch": "micro_batch_size",
    "grad_accum": "gradient_accumulation_steps",
    "wd": "weight_decay",
    "warmup": "warmup_ratio",
    "attn": "attn_implementation",
    "model_name_or_path": "model",
    "dataset_name": "data",
}
# set by shop-r1 from its own fields or plan; not settable as TRL fields
TRL_OWNED = {"output_dir", "use_cpu", "tf32", "torch_dtype", "dtype", "model_init_kwargs"}


class _Problem(Exception):
    """One bad key: (the key as written, message); collected, never shown alone."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, message)
        self.key, self.message = key, message


@dataclass
class _Read:
    """Values read from one source (a file, `--set` items): canonical field -> value, the
    key each was written as (alias, TRL name), and every bad key."""

    values: dict[str, Any] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (where, key, msg)

    def add(
        self, key: str, value: Any, cls: type[_RunConfig], raw: str | None = None, where: str = ""
    ) -> None:
        """One key (`where`: the source a problem names); a bad one joins `problems`."""
        if key == TRL_GROUP and isinstance(value, dict):  # TRL's fields grouped in a mapping
            for sub, sub_value in value.items():
                before = len(self.problems)
                self.add(str(sub), sub_value, cls, where=where)
                self.problems[before:] = [
                    (w, f"{key}.{k}", m) for w, k, m in self.problems[before:]
                ]
                self.written[str(sub)] = f"{key}.{sub}"
            return
        try:
            if key == TRL_GROUP:
                raise _Problem(key, f"expected dict, got {value!r}")
            name, value = _resolve_key(key, value, cls, raw)
        except _Problem as exc:
            self.problems.append((where, exc.key, exc.message))
            return
        self.values[name] = value
        self.written[name] = key


def read_yaml(path: Path, cls: type[_RunConfig]) -> tuple[Any, _Read]:
    """(the file's schema reader, what it sets); every bad key is collected, each as
    `FILE:LINE: key: message` on the line the user wrote it."""
    from shop_r1_doctor.api import Reader

    reader, values = Reader.read(path, "config")  # one-line read / parse errors
    out = _Read()
    if values is None:
        return reader, out
    if not isinstance(values, dict):
        raise reader.fail("", "a config file must be a mapping of setting: value")
    for key, value in values.items():
        out.add(str(key), value, cls, where="file")
    return reader, out


def _read_set(items: list[str], cls: type[_RunConfig]) -> _Read:
    """`--set key=value` items: shop-r1's fields get the value as a YAML scalar (1e-5,
    true, auto); TRL's names get the text, read by TRL's parser as its flags are."""
    known = {f.name for f in task_fields(cls)}
    out = _Read()
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ToolError(f"--set {item}: expected KEY=VALUE, e.g. --set learning_rate=1e-5")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw  # not a YAML scalar: keep the text; the type check says what is wrong
        if key in known:
            out.values[key] = _coerce(value, typing.get_type_hints(cls)[key])
            out.written[key] = key
            continue
        out.add(key, value, cls, raw=raw, where=f"--set {item}")
    return out


def _read_flags(args: list[str], cls: type[_RunConfig]) -> _Read:
    """Every field as a flag, as TRL's parser offers them (`--top_p 0.9`, `--top-p=0.9`,
    a bare `--bf16` for true): the names `shop-r1 train` has no option of its own for.
    Read like `--set` items; a problem reads `--flag: message`."""
    out = _Read()
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("--") or token == "--":
            out.problems.append((token, "", "unexpected argument; give settings as --NAME VALUE"))
            continue
        name, sep, raw = token[2:].partition("=")
        if not sep:  # the value is the next word, unless that is another flag (a bare bool)
            if i < len(args) and not args[i].startswith("--"):
                raw, i = args[i], i + 1
            else:
                raw = "true"
        read = _read_set([f"{name}={raw}"], cls)
        out.values.update(read.values)
        out.written.update(read.written)
        out.problems += [(f"--{name}", "", m) for _, _, m in read.problems]
    return out


def parse_set(items: list[str], cls: type[_RunConfig]) -> dict[str, Any]:
    """`--set key=value` overrides (see `_read_set`); every bad item in one error."""
    read = _read_set(items, cls)
    if read.problems:
        raise ToolError("; ".join(f"{w}: {k}: {m}" for w, k, m in read.problems))
    return read.values


def _choice_problems(cfg: _RunConfig) -> list[str]:
    """shop-r1's fields that TRL also has with a fixed set of choices (optim,
    lr_scheduler_type), checked against TRL's parser's choices when the config is read,
    not when TRL's config is built in the preflight."""
    actions = trl_actions(type(cfg))
    errors = []
    for f in task_fields(type(cfg)):
        action = actions.get(f.name)
        value = getattr(cfg, f.name)
        if action is None or not action.choices or value == "auto" or not isinstance(value, str):
            continue
        if action.type(value) not in action.choices:
            errors.append(f"{f.name}: {_not_a_choice(value, [str(c) for c in action.choices])}")
    return errors


# --- TRL's own fields: a TRL user's settings work unchanged ---


def _trl_class(cls: type[_RunConfig]) -> Any:
    """TRL's config class for this command, or None without TRL (the light install)."""
    try:
        import trl
    except ImportError:
        return None
    return trl.SFTConfig if issubclass(cls, SFTRunConfig) else trl.GRPOConfig


def trl_fields(cls: type[_RunConfig]) -> dict[str, Any]:
    """name -> type of every field of TRL's config for this command (imports trl)."""
    trl_cls = _trl_class(cls)
    if trl_cls is None:
        return {}
    # the declared annotations: HfArgumentParser rewrites `field.type` in place
    # (`float | None` becomes `float`) when it builds its flags
    hints = typing.get_type_hints(trl_cls)
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(trl_cls)}


_PARSERS: dict[Any, dict[str, Any]] = {}


def trl_actions(cls: type[_RunConfig]) -> dict[str, Any]:
    """field -> the argparse action TRL's parser (`HfArgumentParser`, under `TrlParser`)
    builds for it: its type, choices and nargs read a value as `trl sft --config` does."""
    trl_cls = _trl_class(cls)
    if trl_cls is None:
        return {}
    if trl_cls not in _PARSERS:
        from trl.scripts.utils import TrlParser

        parser = TrlParser([trl_cls])
        # a bool field that defaults to true also gets `--no_NAME`: the field's own flag
        _PARSERS[trl_cls] = {
            a.dest: a for a in parser._actions if f"--{a.dest}" in a.option_strings
        }
    return _PARSERS[trl_cls]


def _trl_read(key: str, value: Any, cls: type[_RunConfig], hint: Any, parsed: Any = None) -> Any:
    """A value under a TRL name, read the way TRL reads it: text through its parser's type
    (`"4"` -> 4, `"true"` -> True, choices checked), anything else against the annotation
    (TRL's parser hands a file's non-text values to its dataclass as they are). `parsed`:
    a flag's text read as YAML, tried when TRL's parser cannot read the text
    (`--set reward_weights=[1.0, 0.5]`)."""
    import argparse

    action = trl_actions(cls).get(key)
    if isinstance(value, str) and action is not None and action.type is not None:
        try:
            if action.nargs in ("+", "*"):
                read: Any = [action.type(part) for part in value.split()]
            else:
                read = action.type(value)
        except (ValueError, TypeError, argparse.ArgumentTypeError):
            if parsed is not None and not isinstance(parsed, str):
                return _annotated(key, parsed, hint)
            return _annotated(key, value, hint)  # `str | bool`: the field takes the text
        choices = action.choices
        if choices and read not in choices and action.nargs not in ("+", "*"):
            raise _Problem(key, _not_a_choice(value, [str(c) for c in choices]))
        return read
    return _annotated(key, value, hint)


def _annotated(key: str, value: Any, hint: Any) -> Any:
    try:
        coerced = _coerce(value, hint)
        ok = _type_ok(coerced, hint)
    except TypeError:  # a generic TRL annotation (list[float], ...): TRL checks it
        return value
    if not ok:
        raise _Problem(key, _expects(hint, value))
    return coerced


def _expects(hint: Any, value: Any) -> str:
    if hint is bool or _describe(hint) in ("bool", "bool | null"):
        return f"expected true or false, got {value!r}"
    return f"TRL expects {_describe(hint)}, got {value!r}"


def _not_a_choice(value: str, choices: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(value, choices, n=3)
    hint = f"did you mean {' or '.join(close)}?" if close else f"one of {', '.join(choices)}"
    return f"{value!r} is not one of TRL's {len(choices)} choices; {hint}"


def _resolve_key(
    key: str, value: Any, cls: type[_RunConfig], raw: str | None = None
) -> tuple[str, Any]:
    """(field, value) for a config key: ours, an alias (`ALIASES`), or a TRL field.
    `raw`: the text of a flag, which TRL's parser reads for TRL's names."""
    import difflib

    known = {f.name for f in task_fields(cls)}
    if key in known:
        return key, value
    text = raw if raw is not None else value
    fields = trl_fields(cls)
    if key in ALIASES:
        target, kind = ALIASES[key]
        if text == "auto":
            return target, "auto"
        hint = fields.get(key, bool if kind != "same" else int)
        read = _trl_read(key, text, cls, hint) if fields else text
        if kind == "same":
            return target, read
        if not isinstance(read, bool):
            raise _Problem(key, f"expected true or false, got {value!r}")
        if kind == "switch":
            return target, "on" if read else "off"
        return target, kind if read else "fp32"
    if key in fields and key not in TRL_OWNED:
        return key, _trl_read(key, text, cls, fields[key], value)
    trl_name = "SFTConfig" if issubclass(cls, SFTRunConfig) else "GRPOConfig"
    if key in fields:  # TRL_OWNED: suggesting the same name back would not help
        raise _Problem(
            key,
            f"a TRL {trl_name} field that shop-r1 sets itself; "
            "run with --print-config to see shop-r1's settings",
        )
    close = [SHORT_NAMES[key]] if key in SHORT_NAMES else []
    close += difflib.get_close_matches(key, sorted(known | set(fields) | set(ALIASES)), n=3)
    close = list(dict.fromkeys(close))[:3]
    hint_text = f"did you mean {' or '.join(close)}? " if close else ""
    raise _Problem(
        key,
        f"not a shop-r1 setting nor a TRL {trl_name} field; {hint_text}"
        "run with --print-config to see shop-r1's settings",
    )


def trl_rejection(command: str, exc: Exception, kwargs: dict[str, Any], user: set[str]) -> str:
    """TRL's own refusal (`__post_init__`'s ValueError) as one line naming the field: the
    first field its message mentions that the user set, else the first it mentions."""
    import re

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
    named = [w for w in words if w in kwargs or w in user]
    field_name = next((w for w in named if w in user), named[0] if named else "")
    trl_name = "SFTConfig" if command == "sft" else "GRPOConfig"
    head = f"TRL's {trl_name} rejects this config: "
    return head + (f"{field_name}: {text}" if field_name else text)


def load_config(
    command: str,
    *,
    yaml_path: Path | None = None,
    flags: dict[str, Any] | None = None,
    sets: list[str] | None = None,
    args: list[str] | None = None,
) -> tuple[_RunConfig, dict[str, str]]:
    """The resolved config and where each non-default value came from (file or flag).

    Every problem at once, in one line: the file's bad keys and values at their lines
    (named as the user wrote them: a TRL name, an alias), the bad `--set` items, then the
    values the config's rules reject. `args`: settings as flags (`_read_flags`)."""
    cls = CONFIG_CLASSES[command]
    values: dict[str, Any] = {}
    source: dict[str, str] = {}
    written: dict[str, str] = {}
    reader = None
    problems: list[str] = []
    if yaml_path is not None:
        reader, from_file = read_yaml(yaml_path, cls)
        problems += [str(reader.fail(k, m)) for _, k, m in from_file.problems]
        for key, value in from_file.values.items():
            values[key] = value
            source[key] = str(yaml_path)
        written.update(from_file.written)
    from_set = _read_set(sets or [], cls)
    from_args = _read_flags(args or [], cls)
    from_set.values.update(from_args.values)
    from_set.written.update(from_args.written)
    problems += [": ".join(p for p in problem if p) for problem in from_set.problems]
    problems += [": ".join(p for p in problem if p) for problem in from_args.problems]
    given = _read_given(flags or {}, cls)
    problems += [": ".join(p for p in problem if p) for problem in given.problems]
    for key, value in {**given.values, **from_set.values}.items():
        if value is not None:
            values[key] = value
            source[key] = "flag"
            written[key] = from_set.written.get(key, given.written.get(key, key))
    _processes_from_launcher(values, source, reader)
    _default_batch_for_processes(cls, values, source)
    try:
        cfg = make_run_config(command, values)
    except ConfigError as exc:
        if reader is None and not problems:
            raise
        problems += _placed(exc, reader, source, written)
    if problems:
        raise ToolError("; ".join(problems))
    return cfg, source


def _read_given(flags: dict[str, Any], cls: type[_RunConfig]) -> _Read:
    """A caller's values: shop-r1's fields as given (the config's rules check them),
    any other name (TRL's, an alias, a `trl_args` group) read like a file's key."""
    out = _Read()
    for key, value in flags.items():
        if value is not None:
            out.add(key, value, cls)
    return out


def make_run_config(command: str, values: dict[str, Any]) -> _RunConfig:
    """The run config of `command` from canonical values (task and TRL fields): on the
    TRL install TRL's config with the task fields, which keeps the names of the TRL
    fields set here (`user`: they win over the plan's decisions)."""
    cls: Any = run_class(command)
    own = {f.name for f in task_fields(cls)}
    user = tuple(k for k in values if k not in own)
    cfg: _RunConfig = cls(**values, user=user) if user else cls(**values)
    return cfg


def trl_values(cfg: _RunConfig) -> dict[str, Any]:
    """The TRL fields the user set on a run config, by name."""
    return {name: getattr(cfg, name) for name in getattr(cfg, "user", ())}


def config_values(cfg: _RunConfig) -> dict[str, Any]:
    """The task fields, then the TRL fields set, grouped (`--print-config`, `--json`)."""
    values: dict[str, Any] = {}
    for f in task_fields(type(cfg)):
        values[f.name] = getattr(cfg, f.name)
        if f.name == "gpu_memory_headroom":  # the last field both commands share
            values[TRL_GROUP] = trl_values(cfg)
    return values


def _placed(
    exc: ConfigError, reader: Any, source: dict[str, str], written: dict[str, str]
) -> list[str]:
    """Each problem where its value came from, named as it was written there:
    `FILE:LINE: key: message` for a value the file set (or a default the file's values
    contradict), `key: message (from a flag)` for a command-line value."""
    parts = []
    for name, message in exc.problems:
        key = written.get(name, name)
        if source.get(name.split(".")[0]) == "flag":
            parts.append(f"{key}: {message} (from a flag)")
        elif reader is not None:
            parts.append(str(reader.fail(key, message)))
        else:
            parts.append(f"{key}: {message}")
    return parts


def _default_batch_for_processes(
    cls: type[_RunConfig], values: dict[str, Any], source: dict[str, str]
) -> None:
    """The default global batch, rounded up so every process takes the same share (and,
    for GRPO, whole groups): `launch --gpus 4` trains GRPO on 3 processes, and 64 rows
    do not split in 3. A global batch set in a file or flag is left to the check."""
    procs = values.get("num_processes", 1)
    if "global_batch_size" in values or not isinstance(procs, int) or procs < 1:
        return
    default = next(f.default for f in dataclasses.fields(cls) if f.name == "global_batch_size")
    unit = procs
    if cls is GRPORunConfig:
        gens = values.get("num_generations", GRPORunConfig.num_generations)
        unit = math.lcm(procs, gens) if isinstance(gens, int) and gens >= 1 else procs
    if isinstance(default, int) and default % unit:
        values["global_batch_size"] = -(-default // unit) * unit
        source["global_batch_size"] = f"default rounded up to a multiple of {unit}"


def _processes_from_launcher(
    values: dict[str, Any], source: dict[str, str], reader: Any = None
) -> None:
    """num_processes from the launcher: accelerate/torchrun export WORLD_SIZE to every
    process. Without this a 2-GPU run planned for 1 process doubles its effective batch."""
    world = os.environ.get("WORLD_SIZE", "").strip()
    if not world.isdigit() or int(world) < 1:
        return
    if "num_processes" not in values:
        values["num_processes"], source["num_processes"] = int(world), "WORLD_SIZE"
    elif values["num_processes"] != int(world):
        message = (
            f"{values['num_processes']} (from {source['num_processes']}) but the launcher "
            f"started WORLD_SIZE={world} processes; the batch arithmetic needs the real "
            "count: drop num_processes or make it match"
        )
        if reader is not None and source["num_processes"] != "flag":
            raise reader.fail("num_processes", message)
        raise ToolError(f"num_processes: {message}")


def render_config(cfg: _RunConfig, source: dict[str, str]) -> str:
    """YAML of every field with its value's origin; loads back through --config."""
    lines = [f"# {task_class(type(cfg)).__name__} (default < YAML < flag)"]
    helps = {f.name: f.metadata["help"] for f in task_fields(type(cfg))}
    trl = trl_values(cfg)
    origins = [source[k] for k in trl if k in source]
    # the TRL fields' origin: a flag when any came from one, as `--set` overrides the file
    source = {**source, TRL_GROUP: "flag" if "flag" in origins else next(iter(origins), "default")}
    for name, value in config_values(cfg).items():
        text = yaml.safe_dump(value, default_flow_style=True).strip()
        # a scalar's dump ends with YAML's end-of-document line; a value may end in `...`
        text = text.removesuffix("\n...").strip()
        help_text = helps.get(name, TRL_GROUP_HELP)
        lines.append(f"{name}: {text}  # [{source.get(name, 'default')}] {help_text}")
    return "\n".join(lines) + "\n"


RUN_CONFIG = "shop_r1_run.yaml"  # written by `shop-r1 train` into its output directory
# What eval must repeat from training to rebuild the same held-out prompts.
DATA_SETTINGS = ("seed", "test_fraction", "context", "max_prompt_tokens")


def training_data_settings(model_dir: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """(file, split and prompt settings) of the run that wrote `model_dir`, or None when
    it is not a directory `shop-r1 train` wrote. The file is read and validated like a
    `--config` file; errors are one line naming it."""
    from shop_r1_doctor.api import read_yaml as read_yaml_file

    path = Path(model_dir) / RUN_CONFIG
    if not path.is_file():
        return None
    _, values = read_yaml_file(path, "run config")
    keys = set(values) - {TRL_GROUP} if isinstance(values, dict) else set()
    # the command that wrote it: the config class that knows every key
    command = next(
        (
            c
            for c, cls in CONFIG_CLASSES.items()
            if keys <= {f.name for f in dataclasses.fields(cls)}
        ),
        "sft",
    )
    try:
        cfg, _ = load_config(command, yaml_path=path)
    except ToolError as exc:
        text = str(exc)
        raise ToolError(text if text.startswith(str(path)) else f"{path}: {text}") from None
    return path, {k: getattr(cfg, k) for k in DATA_SETTINGS}
