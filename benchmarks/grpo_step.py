"""GRPO step time and the rollout (generation) share of it, on the shop-r1 trainer path.

A random-init model with the REAL Qwen2.5 config (no download), synthetic Shop-R1
sessions turned into RL rows by `shop_r1.data`, the plan from `shop_r1.autoconfig`, the
real Shop-R1 reward functions, and TRL's `GRPOTrainer` generating with transformers
(`--generation transformers`) or with vLLM colocated on the same GPU
(`--generation vllm`: `use_vllm: on`, `vllm_mode: colocate`, the plan's memory share).
`--generation vllm,transformers` runs both, one child process each (vLLM keeps its
memory for the life of the process), and prints them side by side with the ratio.

How the time is split, without touching TRL: on the transformers path the policy is
loaded as a subclass of its own model class whose `generate` is timed (TRL calls
`model.generate` for every rollout); on the vLLM path TRL's `VLLMGeneration.generate`
and `sync_weights` (the weight push into vLLM before each rollout) are timed on the
trainer's instance. A TrainerCallback times each optimizer step (`on_step_begin` ->
`on_step_end`, CUDA-synchronised). rest = step - rollout: reward functions,
old/reference log-probs, forward/backward and the optimizer step. The no-grad log-prob
passes are timed on their own (`logps s`): with vLLM, TRL adds one over the policy for
its importance-sampling correction (`vllm_importance_sampling_correction`, on by
default), so the vLLM step's rest is longer than the transformers step's.

A random-init model rarely samples EOS, so every completion runs to
max_completion_length: the rollout figures are the worst case for that length. Its
vocabulary (151,936 ids) is larger than the benchmark's tokenizer (4,000), so vLLM is
asked not to detokenize (ids past the tokenizer decode to nothing, as in transformers).

    python benchmarks/grpo_step.py --model-shape 0.5b --steps 5 --generation vllm,transformers
    python benchmarks/grpo_step.py --model-shape 1.5b --steps 8 --generation vllm,vllm:liger_kernel=on
    python benchmarks/grpo_step.py --model-shape tiny --steps 3      # CPU smoke test

`BACKEND:KEY=VALUE` runs that backend with run-config settings on top (what `--set` gives
`train grpo`), beside the others in the same call: a variant and its baseline side by side.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sft_speed import _config_dict, _snapshot  # same folder: shared helpers


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed_generate_class(base: type) -> type:
    """`base` with a `generate` that records (seconds, sequences, new tokens) per call."""

    class TimedGenerate(base):  # type: ignore[misc, valid-type]
        def generate(self, *args: Any, **kwargs: Any) -> Any:
            _sync()
            start = time.perf_counter()
            out = super().generate(*args, **kwargs)
            _sync()
            prompt = kwargs.get("input_ids", args[0] if args else None)
            new = out.shape[1] - (prompt.shape[1] if prompt is not None else 0)
            self.__dict__.setdefault("rollouts", []).append(
                (time.perf_counter() - start, out.shape[0], new)
            )
            return out

    TimedGenerate.__name__ = base.__name__  # TRL and transformers log the class name
    return TimedGenerate


def time_vllm_generation(trainer: Any, model: Any) -> None:
    """Record TRL's vLLM rollouts (and weight syncs) where the StepTimer reads them."""
    vg = trainer.vllm_generation
    generate, sync = vg.generate, vg.sync_weights

    def timed_generate(*args: Any, **kwargs: Any) -> Any:
        _sync()
        start = time.perf_counter()
        out = generate(*args, **kwargs)
        _sync()
        completions = out[1]
        tokens = sum(len(c) for c in completions)
        # (seconds, sequences, tokens per sequence): the StepTimer multiplies the last two
        n = max(len(completions), 1)
        model.__dict__.setdefault("rollouts", []).append(
            (time.perf_counter() - start, n, tokens / n)
        )
        return out

    def timed_sync(*args: Any, **kwargs: Any) -> Any:
        _sync()
        start = time.perf_counter()
        out = sync(*args, **kwargs)
        _sync()
        model.__dict__.setdefault("syncs", []).append(time.perf_counter() - start)
        return out

    vg.generate, vg.sync_weights = timed_generate, timed_sync


def time_nograd_logps(trainer: Any, model: Any) -> None:
    """Record the no-grad log-prob passes (old policy for IS correction, reference model)."""
    import torch

    inner = trainer._get_per_token_logps_and_entropies

    def timed(*args: Any, **kwargs: Any) -> Any:
        if torch.is_grad_enabled():  # the loss's own forward: part of forward/backward
            return inner(*args, **kwargs)
        _sync()
        start = time.perf_counter()
        out = inner(*args, **kwargs)
        _sync()
        model.__dict__.setdefault("logps", []).append(time.perf_counter() - start)
        return out

    trainer._get_per_token_logps_and_entropies = timed


def no_detokenize() -> None:
    """vLLM must not detokenize ids past the small benchmark tokenizer (see the docstring)."""
    import trl.generation.vllm_generation as vgen

    base = vgen.SamplingParams

    def sampling_params(*args: Any, **kwargs: Any) -> Any:
        kwargs["detokenize"] = False
        return base(*args, **kwargs)

    vgen.SamplingParams = sampling_params  # type: ignore[assignment]


def step_timer(model: Any) -> Any:
    """A TrainerCallback recording, per optimizer step, total and generate seconds."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.steps: list[dict[str, float]] = []
            self._start = 0.0
            self._seen = 0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            _sync()
            self._start = time.perf_counter()
            self._seen = len(model.__dict__.get("rollouts", []))
            self._synced = len(model.__dict__.get("syncs", []))
            self._logps = len(model.__dict__.get("logps", []))

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            _sync()
            total = time.perf_counter() - self._start
            calls = model.__dict__.get("rollouts", [])[self._seen :]
            gen = sum(c[0] for c in calls)
            tokens = sum(c[1] * c[2] for c in calls)
            sync = sum(model.__dict__.get("syncs", [])[self._synced :])
            logps = sum(model.__dict__.get("logps", [])[self._logps :])
            # rollout = generation + the weight push that precedes it (vLLM only)
            self.steps.append(
                {
                    "step_s": total,
                    "generate_s": gen + sync,
                    "sync_s": sync,
                    "rest_s": total - gen - sync,
                    "logps_s": logps,
                    "gen_tokens": tokens,
                }
            )

    return StepTimer()


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    from shop_r1 import _compat, precision, train_grpo, train_sft, trl_config
    from shop_r1.autoconfig import decide, render_text
    from shop_r1.callbacks import BindPolicyCallback, SummaryCallback
    from shop_r1.config import GRPORunConfig
    from shop_r1.data.prompts import rl_rows
    from shop_r1.data.synth import generate_sessions
    from shop_r1.preflight import longest_row_tokens
    from shop_r1.tiny import model_from_config_dict, train_tokenizer
    from shop_r1_doctor.memory import ModelShape

    prompts_per_step = args.global_batch // args.num_generations
    sessions = generate_sessions(max(8, prompts_per_step * args.steps // 3 + 4), seed=0)
    rows = rl_rows(sessions, context="full", max_tokens=args.prompt_tokens)
    rows = (rows * (1 + prompts_per_step * args.steps // len(rows)))[
        : prompts_per_step * args.steps
    ]
    cfg_dict = _config_dict(args.model_shape)
    shape = ModelShape.from_config_dict(cfg_dict)
    texts = [m["content"] for r in rows[:200] for m in r["prompt"]]
    tokenizer = train_tokenizer(texts, vocab_size=min(4000, shape.vocab))
    # ids the model samples beyond the tokenizer's vocabulary decode to nothing: harmless
    cfg_dict.update(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None
    )
    out = tempfile.mkdtemp(prefix="grpo_step_")
    # The trainer saves once at the end whatever save_steps says: at 1.5B that is ~18 GB
    # (fp32 weights + Adam state) per child, and the second child of a side-by-side run
    # died in torch.save on the H100's full disk. Nothing here is kept.
    atexit.register(shutil.rmtree, out, True)
    from shop_r1.config import parse_set

    values: dict[str, Any] = dict(
        model=str(Path(out) / "init"),
        data="synthetic",
        output_dir=out,
        max_steps=args.steps,
        global_batch_size=args.global_batch,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_prompt_tokens=args.prompt_tokens,
        beta=args.beta,
        use_vllm="on" if args.generation == "vllm" else "off",
        vllm_mode="colocate",
        report_to="none",
        logging_steps=1,
        save_steps=10**6,
    )
    # BACKEND:KEY=VALUE: run-config settings on top, as `--set` gives them to `train grpo`
    settings = parse_set(args.set, GRPORunConfig)
    cfg = GRPORunConfig(**{**values, **settings})
    prompt_len = longest_row_tokens(rows, tokenizer)
    plan = decide(
        _snapshot(cfg),
        cfg,
        shape,
        seq_len=prompt_len,
        trl_fused_lm_head=_compat.trl_has_fused_lm_head(),
    )
    print(render_text(plan), file=sys.stderr)

    # saved once so TRL can load the frozen reference model from the same path (beta > 0)
    init = model_from_config_dict(cfg_dict, dtype=train_sft.torch_dtype(plan))
    init.generation_config.update(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    init.save_pretrained(cfg.model)
    tokenizer.save_pretrained(cfg.model)  # vLLM loads the tokenizer from the model folder
    model = timed_generate_class(type(init)).from_pretrained(
        cfg.model,
        attn_implementation=plan.attn_implementation,
        **_compat.dtype_kwarg(train_sft.torch_dtype(plan)),
    )
    del init
    cuda = torch.cuda.is_available()
    gpu_name = torch.cuda.get_device_name(0) if cuda else None
    rewards = train_grpo.build_rewards(cfg)
    timer = step_timer(model)
    summary = SummaryCallback(shape, plan.seq_len, gpu_name=gpu_name, warmup_steps=args.warmup)
    precision.apply(model, plan)  # as train_grpo.train does
    trainer = GRPOTrainer(
        model=model,
        args=trl_config.build(cfg, plan).validate(),
        reward_funcs=rewards,
        train_dataset=Dataset.from_list(
            [{"prompt": r["prompt"], "gold_action": r["gold_action"]} for r in rows]
        ),
        processing_class=tokenizer,
        callbacks=[
            BindPolicyCallback([r for r in rewards if hasattr(r, "bind")], tokenizer),
            summary,
            timer,
        ],
    )
    train_grpo.prepare(trainer, plan)  # as train_grpo.train does
    if plan.use_vllm:
        time_vllm_generation(trainer, model)
    time_nograd_logps(trainer, model)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    trainer.train()
    train_wall = time.perf_counter() - started
    timed = timer.steps[args.warmup :]
    step_s = sum(s["step_s"] for s in timed)
    gen_s = sum(s["generate_s"] for s in timed)
    label = "vllm colocate" if plan.use_vllm else "transformers"
    return {
        "generation": ":".join([label, *args.set]),
        "settings": settings,
        "model_shape": args.model_shape,
        "device": gpu_name or "cpu",
        "setup_s": round(started - args.t0, 1),
        "train_wall_s": round(train_wall, 1),
        "plan": {
            "attn_implementation": plan.attn_implementation,
            "dtype": plan.dtype,
            "master_weights": plan.master_weights,
            "hidden_dtype": plan.hidden_dtype,
            "liger_kernel": plan.liger_kernel,
            "reference_dtype": plan.reference_dtype,
            "trim_padding": plan.trim_padding,
            "micro_batch_size": plan.micro_batch_size,
            "gradient_accumulation_steps": plan.gradient_accumulation_steps,
            "gradient_checkpointing": plan.gradient_checkpointing,
            "generation_batch_size": plan.generation_batch_size,
            "use_vllm": plan.use_vllm,
            "vllm_gpu_memory_utilization": plan.vllm_gpu_memory_utilization,
        },
        "global_batch": args.global_batch,
        "num_generations": args.num_generations,
        "max_completion_length": args.max_completion_length,
        "longest_prompt_tokens": prompt_len,
        "beta": args.beta,
        "warmup_steps": args.warmup,
        "steps": timer.steps,
        "mean_step_s": step_s / len(timed),
        "median_step_s": statistics.median(s["step_s"] for s in timed),
        "mean_generate_s": gen_s / len(timed),
        "mean_sync_s": sum(s.get("sync_s", 0.0) for s in timed) / len(timed),
        "mean_logps_s": sum(s.get("logps_s", 0.0) for s in timed) / len(timed),
        "rollout_share": gen_s / step_s,
        "gen_tokens_per_s": sum(s["gen_tokens"] for s in timed) / gen_s if gen_s else None,
        "train_tokens_per_s": summary.summary.get("tokens_per_s"),
        "peak_memory_gib": summary.summary.get("peak_memory_gib"),
    }


def print_table(r: dict[str, Any]) -> None:
    p = r["plan"]
    print(
        f"\nGRPO step: Qwen2.5-{r['model_shape']} shape on {r['device']}, "
        f"{r['global_batch']} completions/step ({r['global_batch'] // r['num_generations']} "
        f"prompts x {r['num_generations']}), completions <= {r['max_completion_length']} tokens, "
        f"longest prompt {r['longest_prompt_tokens']} tokens, beta {r['beta']}\n"
        f"plan: {p['attn_implementation']}, {p['dtype']} ({p['master_weights']} weights), "
        f"mb {p['micro_batch_size']} x ga {p['gradient_accumulation_steps']}, ckpt "
        f"{p['gradient_checkpointing']}, generation batch {p['generation_batch_size']}, "
        + (
            f"vLLM colocate (gpu_memory_utilization {p['vllm_gpu_memory_utilization']})"
            if p.get("use_vllm")
            else "transformers generate()"
        )
    )
    head = f"{'step':<12} {'step s':>8} {'rollout s':>11} {'rest s':>8} {'rollout':>8} {'gen tok/s':>10}"
    print(head + "\n" + "-" * len(head))
    for i, s in enumerate(r["steps"], start=1):
        label = f"{i}{' (warm-up)' if i <= r['warmup_steps'] else ''}"
        tps = s["gen_tokens"] / s["generate_s"] if s["generate_s"] else 0
        share = s["generate_s"] / s["step_s"]
        print(
            f"{label:<12} {s['step_s']:>8.2f} {s['generate_s']:>11.2f} {s['rest_s']:>8.2f} "
            f"{share:>8.1%} {tps:>10,.0f}"
        )
    gen_tps = r["gen_tokens_per_s"] or 0
    rest = r["mean_step_s"] - r["mean_generate_s"]
    print("-" * len(head))
    print(
        f"{'mean (timed)':<12} {r['mean_step_s']:>8.2f} {r['mean_generate_s']:>11.2f} "
        f"{rest:>8.2f} {r['rollout_share']:>8.1%} {gen_tps:>10,.0f}"
    )
    peak = r["peak_memory_gib"]
    print(
        f"\nrollout share of the step: {r['rollout_share']:.1%}; train tokens/s "
        f"{r['train_tokens_per_s'] or 0:,.0f}; peak memory {peak if peak is not None else 'n/a'} GiB"
    )


def print_comparison(results: list[dict[str, Any]]) -> None:
    """Side by side: per-step means and the speed-up of each backend over the first slower one."""
    print("\nGRPO step, side by side (same shapes, same process layout, one child each):")
    head = (
        f"{'generation':<16} {'step s':>8} {'rollout s':>10} {'sync s':>7} {'rest s':>7} "
        f"{'logps s':>8} {'rollout %':>9} {'gen tok/s':>10} {'peak GiB':>9} {'setup s':>8}"
    )
    print(head + "\n" + "-" * len(head))
    for r in results:
        print(
            f"{r['generation']:<16} {r['mean_step_s']:>8.2f} {r['mean_generate_s']:>10.2f} "
            f"{r.get('mean_sync_s', 0):>7.2f} {r['mean_step_s'] - r['mean_generate_s']:>7.2f} "
            f"{r.get('mean_logps_s', 0):>8.2f} {r['rollout_share']:>9.1%} {r['gen_tokens_per_s'] or 0:>10,.0f} "
            f"{r['peak_memory_gib'] if r['peak_memory_gib'] is not None else 'n/a':>9} "
            f"{r.get('setup_s', 0):>8.1f}"
        )
    slow = max(results, key=lambda r: r["mean_step_s"])
    for r in results:
        if r is not slow:
            print(
                f"{r['generation']}: {slow['mean_step_s'] / r['mean_step_s']:.2f}x per step, "
                f"{slow['mean_generate_s'] / max(r['mean_generate_s'], 1e-9):.2f}x per rollout "
                f"vs {slow['generation']}"
            )


def run_several(args: argparse.Namespace, backends: list[str]) -> list[dict[str, Any]]:
    """Each backend in its own child (vLLM holds its GPU share until the process ends)."""
    results = []
    for label in backends:
        backend, *settings = label.split(":")
        out = Path(tempfile.mkdtemp(prefix="grpo_step_cmp_")) / f"{backend}.json"
        cmd = [sys.executable, __file__, "--generation", backend, "--json-out", str(out)]
        cmd += [f"--set={item}" for item in settings]
        for name in ("model_shape", "steps", "warmup", "global_batch", "num_generations"):
            cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
        cmd += ["--max-completion-length", str(args.max_completion_length)]
        cmd += ["--prompt-tokens", str(args.prompt_tokens), "--beta", str(args.beta)]
        shown = [os.path.relpath(__file__), *cmd[2:]]  # a log names no path of this machine
        print(f"\n=== {label}: {' '.join(shown)}", flush=True)
        proc = subprocess.run(cmd, env=os.environ.copy(), check=False)
        if proc.returncode != 0 or not out.is_file():
            print(f"=== {label}: FAILED (exit {proc.returncode})", flush=True)
            continue
        results.append(json.loads(out.read_text(encoding="utf-8")))
    return results


def main() -> None:
    t0 = time.perf_counter()
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model-shape", default="0.5b", choices=["tiny", "0.5b", "1.5b", "3b"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="Steps left out of the means.")
    ap.add_argument("--global-batch", type=int, default=None, help="Completions per step.")
    ap.add_argument("--num-generations", type=int, default=None)
    ap.add_argument("--max-completion-length", type=int, default=None)
    ap.add_argument("--prompt-tokens", type=int, default=None, help="max_prompt_tokens.")
    ap.add_argument("--beta", type=float, default=0.001, help="KL coefficient (0: no ref model).")
    ap.add_argument("--json-out", default="", help="Also write the results as JSON here.")
    ap.add_argument(
        "--generation",
        default="transformers",
        help="transformers, vllm (colocated), or several comma-separated, run side by side; "
        "BACKEND:KEY=VALUE[:KEY=VALUE] adds run-config settings to that one (e.g. "
        "vllm,vllm:liger_kernel=on)",
    )
    ap.add_argument("--set", action="append", default=[], help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.t0 = t0
    backends = [b.strip() for b in args.generation.split(",") if b.strip()]
    if not backends or {b.split(":")[0] for b in backends} - {"transformers", "vllm"}:
        ap.error("--generation: transformers, vllm, or both comma-separated")
    from shop_r1.config import GRPORunConfig, parse_set
    from shop_r1_doctor.errors import ToolError

    for label in backends:
        try:
            parse_set([*args.set, *label.split(":")[1:]], GRPORunConfig)
        except ToolError as e:
            ap.error(f"--generation {label}: {e}")
    if len(backends) == 1 and ":" in backends[0]:
        backend, *settings = backends[0].split(":")
        backends, args.set = [backend], [*args.set, *settings]
    tiny = args.model_shape == "tiny"
    # paper-shaped defaults on a GPU (64 = 8 prompts x 8); a seconds-long smoke run on CPU
    for name, gpu, cpu in [
        ("global_batch", 64, 8),
        ("num_generations", 8, 4),
        ("max_completion_length", 256, 16),
        ("prompt_tokens", 1024, 200),
    ]:
        if getattr(args, name) is None:
            setattr(args, name, cpu if tiny else gpu)
    if args.steps <= args.warmup:
        ap.error(f"--steps must exceed --warmup ({args.warmup}) to time anything")
    if len(backends) > 1:
        results = run_several(args, backends)
        for r in results:
            print_table(r)
        if results:
            print_comparison(results)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        if len(results) != len(backends):
            raise SystemExit(1)
        return
    args.generation = backends[0]
    if args.generation == "vllm":
        no_detokenize()
    result = run(args)
    print_table(result)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
