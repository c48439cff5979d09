"""TrainerCallbacks: bind the live policy to the self-certainty reward, and measure the run.

Both are plain `transformers.TrainerCallback`s handed to TRL's trainers (an extension
point), so nothing in TRL is patched.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from shop_r1_doctor.api import GIB, ModelShape, flops_per_token, peak_flops
from shop_r1_doctor.errors import ToolError


class BindPolicyCallback(TrainerCallback):
    """Gives reward functions that need the policy (self-certainty) the model being
    trained, at the start of training, so scores always come from the current weights."""

    def __init__(self, rewards: list[Any], tokenizer: Any) -> None:
        self.rewards = rewards
        self.tokenizer = tokenizer

    def on_train_begin(
        self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any
    ) -> None:
        for reward in self.rewards:
            reward.bind(model, self.tokenizer)


class NonFiniteGradGuard(TrainerCallback):
    """Drops an update whose gradients hold NaN/inf instead of writing NaN weights.

    Seen on an H100 (GRPO, sdpa attention with a padding mask, fp32 masters under bf16
    autocast): every forward was finite, yet one backward in some 40-80 steps gave NaN
    gradients, and the optimizer then wrote NaN into every weight. The run died a step
    later in `generate()` ("probability tensor contains either `inf`, `nan`...").
    Mixed-precision trainers skip such steps (fp16 loss scaling does; Megatron and
    DeepSpeed do); transformers' Trainer does not for bf16/fp32, so this does it from
    `on_pre_optimizer_step` (after clipping, before `optimizer.step()`).

    With torch's fused Adam/AdamW (what the plan picks on GPUs) the skip stays on the
    device: the optimizer's `found_inf` (the flag GradScaler hands the fused kernel) makes
    the kernel leave weights, moments and step count untouched, so the host never waits
    for the GPU here. Reading the flag every step made the host wait at every step's end,
    and the GPU then idled while the host fetched and collated the next batch. The flags
    are read when the trainer logs (it waits for the GPU there anyway; it logs once more
    after the last step).
    Other optimizers: the flag is read at once and the gradients are zeroed (AdamW's
    momentum then still moves the weights a little).

    More than `max_consecutive` bad steps in a row is a broken run, not a rare kernel
    failure: it stops with a one-line error that says what to change."""

    def __init__(self, max_consecutive: int = 3) -> None:
        self.max_consecutive = max_consecutive
        self.skipped: list[int] = []  # optimizer steps (1-based) whose update was dropped
        self.consecutive = 0
        self.pending: list[tuple[int, Any]] = []  # (step, 0-d bool tensor) not read yet

    def on_pre_optimizer_step(
        self,
        args: Any,
        state: Any,
        control: Any,
        model: Any = None,
        optimizer: Any = None,
        **kw: Any,
    ) -> None:
        import torch

        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if not grads:
            return
        # FSDP2 gradients are DTensors: check this rank's shard, then agree across ranks
        local = [g.to_local() if hasattr(g, "to_local") else g for g in grads]
        bad = nonfinite(local)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            # ranks hold different shards: all must skip, or their weights diverge
            flag = bad.to(torch.int32)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            bad = flag.bool()
        step = state.global_step + 1
        inner = fused_adam(optimizer)
        if inner is not None and not getattr(args, "fp16", False):
            # fp16 runs hand found_inf to the kernel through GradScaler: never both
            inner.found_inf = bad.to(torch.float32)
            self.pending.append((step, bad))
            return
        if bool(bad):
            for g in grads:
                g.zero_()
        self._record([(step, bool(bad))], state)

    def on_log(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        # the trainer also logs once after the last step, before on_train_end
        self.resolve(state)

    def resolve(self, state: Any) -> None:
        """Reads the device-side flags of the steps since the last read (one wait)."""
        if not self.pending:
            return
        import torch

        steps = [step for step, _ in self.pending]
        flags = torch.stack([flag for _, flag in self.pending]).tolist()
        self.pending = []
        self._record(list(zip(steps, flags, strict=True)), state)

    def _record(self, flags: list[tuple[int, bool]], state: Any) -> None:
        for step, bad in flags:
            if not bad:
                self.consecutive = 0
                continue
            self.skipped.append(step)
            self.consecutive += 1
            if state.is_world_process_zero:
                print(
                    f"shop-r1: step {step}: NaN/inf gradients; update dropped "
                    f"({len(self.skipped)} so far)",
                    file=sys.stderr,
                    flush=True,
                )
            if self.consecutive > self.max_consecutive:
                raise ToolError(
                    f"{self.consecutive} optimizer steps in a row had NaN/inf gradients "
                    f"(steps {self.skipped[-self.consecutive :]}); the weights are still "
                    "finite, but the run is not learning. Lower the learning rate, or set "
                    "attention to eager or flash_attention_2 instead of sdpa"
                )


def fused_adam(optimizer: Any) -> Any:
    """The torch Adam/AdamW under accelerate's wrapper when it runs fused (the kernel
    that takes `found_inf`; the others refuse it), else None."""
    import torch

    inner = getattr(optimizer, "optimizer", optimizer)
    if not isinstance(inner, torch.optim.Adam | torch.optim.AdamW):
        return None
    if not all(group.get("fused") for group in inner.param_groups):
        return None
    return inner


def nonfinite(tensors: list[Any]) -> Any:
    """A 0-d bool tensor: does any tensor hold NaN or inf? One multi-tensor norm (a few
    kernels for all gradients, as clip_grad_norm_ computes it) instead of two kernels
    per parameter; a NaN or inf anywhere makes the norm NaN or inf. A norm past fp32's
    range would read as inf too; the guard runs after clipping, where the norm is at
    most max_grad_norm unless a gradient was NaN/inf (clipping itself sees such a norm as
    inf)."""
    import torch

    get_total_norm = getattr(torch.nn.utils, "get_total_norm", None)  # torch >= 2.6
    if get_total_norm is None:
        return torch.stack([torch.isfinite(g).all() for g in tensors]).logical_not().any()
    return torch.isfinite(get_total_norm(tensors, foreach=True)).logical_not()


class SummaryCallback(TrainerCallback):
    """Tokens/s, MFU and peak memory of the run; written to `summary.json`.

    Timing starts after `warmup_steps` optimizer steps so compilation and allocator
    warm-up do not count."""

    def __init__(
        self,
        shape: ModelShape,
        seq_len: int,
        *,
        gpu_name: str | None = None,
        n_gpus: int = 1,
        warmup_steps: int = 1,
        guard: NonFiniteGradGuard | None = None,
        watch: Any = None,  # shop_r1.watch.RolloutWatch: its findings go in the summary
    ) -> None:
        self.shape, self.seq_len = shape, seq_len
        self.guard = guard
        self.watch = watch
        self.gpu_name, self.n_gpus = gpu_name, n_gpus
        self.warmup_steps = warmup_steps
        self.start: float | None = None
        self.end: float | None = None
        self.start_tokens = 0.0
        self.tokens = 0.0
        self.first: dict[str, float] = {}  # first and last logged loss / reward
        self.last: dict[str, float] = {}
        # GRPO: every logged reward / exact match with its step. One step's reward is a
        # handful of prompts, so only a window of these says whether the policy improved.
        self.curve: list[dict[str, float]] = []
        self.summary: dict[str, Any] = {}

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        # The clock stops at the last optimizer step, not at train end: the final
        # checkpoint save (seconds for a 0.5B model + optimizer) is not training speed.
        # Only the clock's two ends wait for the GPU: a sync at every step left it idle
        # while the host fetched and collated the next batch.
        step = state.global_step
        last = step >= (state.max_steps or 0) > 0
        if step == self.warmup_steps or (step > self.warmup_steps and last):
            _sync()
        if step >= self.warmup_steps:
            self.end = time.perf_counter()
        if step == self.warmup_steps:
            self.start = self.end

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        logs = logs or {}
        if "num_tokens" in logs:
            self.tokens = float(logs["num_tokens"])
            # The log of step N comes after its on_step_end: tokens through the warm-up
            # step are known here, matching the clock started at that step's end.
            if state.global_step == self.warmup_steps:
                self.start_tokens = self.tokens
        for key in ("loss", "reward"):
            if key in logs:
                self.first.setdefault(key, float(logs[key]))
                self.last[key] = float(logs[key])
        if "reward" in logs:
            point = {"step": state.global_step, "reward": round(float(logs["reward"]), 4)}
            if "exact_match" in logs:
                point["exact_match"] = round(float(logs["exact_match"]), 4)
            self.curve.append(point)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        seconds = self.end - self.start if self.start and self.end else None
        timed_tokens = self.tokens - self.start_tokens
        tps = timed_tokens / seconds if seconds and timed_tokens > 0 else None
        peak = peak_flops(self.gpu_name)
        mfu = None
        if tps and peak:
            mfu = flops_per_token(self.shape, self.seq_len) * tps / (self.n_gpus * peak)
        self.summary = {
            "steps": state.global_step,
            "tokens": int(self.tokens),
            "timed_seconds": round(seconds, 3) if seconds else None,
            "tokens_per_s": round(tps, 1) if tps else None,
            "mfu": round(mfu, 4) if mfu else None,
            "peak_memory_gib": _peak_memory_gib(),
            **{f"first_{k}": v for k, v in self.first.items()},
            **{f"last_{k}": v for k, v in self.last.items()},
        }
        if self.guard and self.guard.skipped:
            self.summary["skipped_nonfinite_steps"] = self.guard.skipped
        if self.curve:
            self.summary["reward_curve"] = self.curve
        if self.watch is not None:
            self.summary["findings"] = [f.code for f in self.watch.findings]
        if state.is_world_process_zero:
            out = Path(args.output_dir) / "summary.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(self.summary, indent=2) + "\n", encoding="utf-8")


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _peak_memory_gib() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return round(torch.cuda.max_memory_allocated() / GIB, 2)


def render_summary(summary: dict[str, Any]) -> str:
    """One line per figure, for the end of a run."""

    def fmt(key: str, value: Any) -> str:
        if value is None:
            return "n/a"
        if key == "mfu":
            return f"{value:.1%}"
        if isinstance(value, float):
            return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
        return str(value)

    return "\n".join(f"  {k:<16} {fmt(k, v)}" for k, v in summary.items())
