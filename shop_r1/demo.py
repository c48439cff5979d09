"""The whole pipeline on synthetic sessions: data -> tokenizer -> random-init model ->
eval -> SFT -> eval -> GRPO -> eval, ending with a before / SFT / SFT+GRPO table.

`shop-r1 demo` runs it tiny on a CPU; `benchmarks/learning.py` runs it bigger on a GPU.
Training goes through the trainer's own path (auto-configuration from a fast doctor
snapshot, then `train_sft.train` / `train_grpo.train`), so the demo exercises what
`shop-r1 train` does, not a copy of it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

STAGES = ("before SFT", "SFT", "SFT + GRPO")


@dataclass
class PipelineConfig:
    """Sizes for one run; the defaults are the CPU demo (< 10 min on 2 cores)."""

    output_dir: str = "runs/demo"
    # A pretrained model (Hub id, folder or .gguf file) instead of one trained from
    # scratch: its tokenizer and chat template are used, and the first stage is zero-shot.
    model: str | None = None
    sessions: int = 240
    seed: int = 0
    test_fraction: float = 0.1
    context: str = "latest"  # full context is the paper's best, but 4x longer prompts on a CPU
    max_prompt_tokens: int | None = 320  # approx tokens (4 chars each) of the user message
    eval_limit: int | None = 128  # held-out steps scored per stage
    # model + tokenizer (trained from scratch on the training sessions)
    vocab_size: int = 1024
    hidden: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 384
    # SFT
    sft_steps: int = 800
    sft_batch: int = 8
    sft_lr: float = 3e-3
    # GRPO
    grpo_steps: int = 20
    grpo_batch: int = 16  # completions per step
    grpo_generations: int = 4
    grpo_lr: float = 5e-5
    grpo_beta: float = 0.001  # paper; KL to the SFT checkpoint
    grpo_temperature: float = 0.6  # paper
    max_new_tokens: int | None = None  # None: longest gold completion + 16 tokens
    eval_batch: int = 32
    use_vllm: Literal["auto", "on", "off"] = (
        "off"  # small models: vLLM start-up costs more than it saves
    )
    vllm_gpu_memory_utilization: float | None = None  # None: the plan's estimate
    report_to: str = "none"  # "tensorboard": reward-component curves under <out>/<stage>/
    logging_steps: int = 10
    threads: int | None = 2  # torch intra-op threads on CPU (None: torch's default)
    # Start GRPO from this SFT output (`<out>/sft` of an earlier run with the same data
    # settings) instead of training SFT again, so GRPO settings compare from one SFT model.
    sft_from: str | None = None
    eval_sft: bool = True  # False with sft_from: ablations share the first run's SFT score
    # False: the untrained model is not scored (its row is known; slow to generate)
    eval_before: bool = True
    # GRPO trains only on these prompts: a `shop-r1.spread/1` file (shop_r1.spread, written
    # by benchmarks/rollout_mix.py --keep-spread) naming the prompts whose groups disagree.
    grpo_prompts: str | None = None
    # more GRPORunConfig values for ablations, e.g. {"binary_reward": True, "dars": 1.0}
    extra: dict[str, Any] = field(default_factory=dict)


def _log(msg: str) -> None:
    print(msg, flush=True)


def run_pipeline(cfg: PipelineConfig, *, log: Callable[[str], None] = _log) -> dict[str, Any]:
    """Run every stage; write `results.json` and `report.md`; return the results."""
    import torch

    from shop_r1 import train_grpo, train_sft
    from shop_r1.autoconfig import decide, render_text
    from shop_r1.config import SFTRunConfig, make_run_config
    from shop_r1.data.prompts import rl_rows, sft_rows
    from shop_r1.data.split import split_by_session
    from shop_r1.data.synth import generate_sessions
    from shop_r1.eval import evaluate_model, rows_from_sessions, write_outputs
    from shop_r1.generate import chat_ids
    from shop_r1.preflight import live_snapshot
    from shop_r1.tiny import make_tiny_model_and_tokenizer
    from shop_r1_doctor.api import ModelShape

    started = time.perf_counter()
    timings: dict[str, float] = {}
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    _quiet_libraries()
    torch.manual_seed(cfg.seed)

    # data: split by session, so no held-out step was seen in training
    t = time.perf_counter()
    sessions = generate_sessions(cfg.sessions, seed=cfg.seed)
    train, test = split_by_session(sessions, cfg.test_fraction, cfg.seed)
    prompt_kw: dict[str, Any] = {"context": cfg.context, "max_tokens": cfg.max_prompt_tokens}
    sft = sft_rows(train, **prompt_kw)
    rl = rl_rows(train, **prompt_kw)
    held_out = rows_from_sessions(test, limit=cfg.eval_limit, **prompt_kw)
    log(
        f"data: {len(train)} train / {len(test)} test sessions, {len(sft)} SFT rows, "
        f"{len(held_out)} held-out steps scored"
    )

    # tokenizer + model from scratch: nothing is downloaded. A few thousand rows show
    # the tokenizer every HTML pattern; all of them would only slow BPE training down.
    stages = STAGES
    if cfg.sft_from or cfg.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from shop_r1.models import resolve_model

        source = cfg.sft_from or resolve_model(str(cfg.model), log=log)
        tokenizer = AutoTokenizer.from_pretrained(source)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
        if cfg.model:
            stages = ("zero-shot", *STAGES[1:])
    else:
        sample = sft[:: max(1, len(sft) // 3000)]
        texts = [m["content"] for r in sample for m in r["prompt"] + r["completion"]]
        model, tokenizer = make_tiny_model_and_tokenizer(
            texts,
            vocab_size=cfg.vocab_size,
            hidden=cfg.hidden,
            layers=cfg.layers,
            heads=cfg.heads,
            kv_heads=cfg.kv_heads,
            intermediate=cfg.intermediate,
            seed=cfg.seed,
        )
    shape = ModelShape.from_config_dict(model.config.to_dict())
    # Longest row over an even sample, plus headroom: max_length must never cut a completion.
    probe = sft[:: max(1, len(sft) // 2000)]
    lengths = [
        len(chat_ids(tokenizer, r["prompt"] + r["completion"], add_generation_prompt=False))
        for r in probe
    ]
    seq_len = int(max(lengths) * 1.15) + 32
    # Generation must be able to finish the longest answer, or outputs are cut mid-JSON.
    longest_answer = max(len(tokenizer(r["completion"][0]["content"])["input_ids"]) for r in probe)
    max_new = cfg.max_new_tokens or longest_answer + 16
    log(
        f"model: {shape.params / 1e6:.2f}M params, vocab {len(tokenizer)}, longest sampled "
        f"SFT row {max(lengths)} tokens, answer {longest_answer}; generating <= {max_new}"
    )
    # The full snapshot (torch facts from a cached child probe), as `shop-r1 train` uses:
    # a fast one has no torch version, and the plan then turned packing off on an H100
    # ("torch ? has no varlen kernel").
    snapshot = live_snapshot()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # transformers types `to` through a decorator that takes the model first (stubs gap)
    model.to(device)  # type: ignore[arg-type]
    timings["setup_s"] = time.perf_counter() - t

    results: dict[str, Any] = {"config": asdict(cfg), "params": shape.params, "stages": {}}

    def evaluate(stage: str, slug: str) -> None:
        from shop_r1_doctor.cli.output import progress

        t0 = time.perf_counter()
        with progress(f"eval: {stage}", total=len(held_out), unit="steps") as bar:
            res = evaluate_model(
                model,
                tokenizer,
                held_out,
                max_new_tokens=max_new,
                batch_size=cfg.eval_batch,
                on_done=bar,
            )
        res.meta.update(stage=stage, context=cfg.context, split="test")
        write_outputs(res, out / f"eval-{slug}", title=f"shop-r1 demo: {stage}")
        results["stages"][stage] = res.metrics
        timings[f"eval_{slug}_s"] = time.perf_counter() - t0
        m = res.metrics
        log(
            f"[{stage}] exact {m['exact_match']:.1%}  type acc {m['type_accuracy']:.1%}  "
            f"macro-F1 {m['type_macro_f1']:.1%}  parse failures {m['parse_failure_rate']:.1%}  "
            f"({timings[f'eval_{slug}_s']:.0f} s)"
        )

    common: dict[str, Any] = {
        "model": "from-scratch" if not cfg.model else str(cfg.model),
        "data": "synthetic",
        "seed": cfg.seed,
        "context": cfg.context,
        "max_prompt_tokens": cfg.max_prompt_tokens,
        "logging_steps": cfg.logging_steps,
        "save_total_limit": 1,
        "report_to": cfg.report_to,
        "micro_batch_size": "auto",
        "warmup_ratio": 0.05,
        # fp32 masters + bf16 autocast on GPUs: GRPO's small updates vanish in bf16 weights
        "master_weights": "fp32",
        # Liger patches transformers' model classes for the whole process, so GRPO here
        # (same process as SFT) would run through kernels its plan says are off.
        # `shop-r1 train sft` and `train grpo` are separate processes: Liger stays SFT-only.
        "liger_kernel": "off",
    }
    t = time.perf_counter()
    sft_cfg = SFTRunConfig(
        output_dir=str(out / "sft"),
        max_steps=cfg.sft_steps,
        global_batch_size=cfg.sft_batch,
        learning_rate=cfg.sft_lr,
        max_length=seq_len,
        save_steps=cfg.sft_steps,
        **common,
    )
    plan = decide(snapshot, sft_cfg, shape, seq_len=seq_len)
    sft_dir = Path(cfg.sft_from or sft_cfg.output_dir)
    if cfg.sft_from:
        log(f"SFT: starting from {sft_dir} (no SFT run)")
    else:
        if cfg.eval_before:
            evaluate(stages[0], "zero-shot" if cfg.model else "before")
        log(render_text(plan))
        # Train with the plan's attention, as `shop-r1 train sft` loads the model.
        train_sft.register_attention(plan.attn_implementation)
        model.set_attn_implementation(plan.attn_implementation)
        results["sft_summary"] = train_sft.train(
            sft_cfg, plan, sft, model=model, tokenizer=tokenizer, shape=shape
        )
        timings["sft_s"] = time.perf_counter() - t

    t = time.perf_counter()
    # GRPO starts from the saved SFT checkpoint, as `shop-r1 train grpo --model runs/sft`
    # would: TRL builds the KL reference model from that same path.
    # SFT's cached activation blocks stay reserved in this process unless returned: on the
    # H100 (SmolLM2-135M, seq 2110, micro batch 16) they left GRPO with colocated vLLM
    # 14 GiB short (OOM at the first training forward).
    del model
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    if cfg.grpo_prompts:
        from shop_r1.spread import filter_rows

        keep = json.loads(Path(cfg.grpo_prompts).read_text())["keep"]
        before = len(rl)
        rl = filter_rows(rl, keep)
        if not rl:
            raise ValueError(f"{cfg.grpo_prompts}: none of its prompts is in this run's data")
        log(f"GRPO prompts: {len(rl)} of {before} (groups with reward spread, {cfg.grpo_prompts})")
        results["grpo_prompts"] = {"file": cfg.grpo_prompts, "kept": len(rl), "of": before}
    prompt_len = max(len(chat_ids(tokenizer, r["prompt"])) for r in rl[:: max(1, len(rl) // 2000)])
    # extra (--grpo-set) may name TRL's fields: the run config is then TRL's own
    grpo_cfg: Any = make_run_config(
        "grpo",
        dict(
            output_dir=str(out / "grpo"),
            # grpo_steps 0 (SFT only): the config still plans the reload SFT is scored on
            max_steps=cfg.grpo_steps or 1,
            global_batch_size=cfg.grpo_batch,
            num_generations=cfg.grpo_generations,
            learning_rate=cfg.grpo_lr,
            beta=cfg.grpo_beta,
            temperature=cfg.grpo_temperature,
            max_completion_length=max_new,
            use_vllm=cfg.use_vllm,
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization or "auto",
            save_steps=cfg.grpo_steps or 1,
            # extra (ablations, --grpo-set) overrides the shared settings, e.g. micro_batch_size
            **{**common, **cfg.extra},
        ),
    )
    plan = decide(snapshot, grpo_cfg, shape, seq_len=prompt_len)
    # The SFT stage is scored on this reload, not on the model in SFT's memory: both
    # stages then go through one loader, attention kernel and dtype. Scored in SFT's
    # memory, and again after the reload GRPO starts from (lr 1e-12: no weight moved),
    # the same weights differed on 13 of 240 held-out completions on the H100, and the
    # exact-match flips all went one way (6 / 0): that gap read as "GRPO lost 2.5 points".
    model, tokenizer = train_sft.load_model_and_tokenizer(str(sft_dir), plan)
    model.to(device)
    if cfg.eval_sft or not cfg.sft_from:
        evaluate(STAGES[1], "sft")
        t += timings["eval_sft_s"]  # grpo_s: GRPO alone
    if cfg.grpo_steps:
        results["grpo_summary"] = train_grpo.train(
            grpo_cfg, plan, rl, model=model, tokenizer=tokenizer, shape=shape
        )
        timings["grpo_s"] = time.perf_counter() - t
        model = without_autocast(model)
        evaluate(STAGES[2], "grpo")

    timings["total_s"] = time.perf_counter() - started
    results["timings"] = {k: round(v, 1) for k, v in timings.items()}
    if STAGES[2] in results["stages"]:
        results["collapse"] = collapse_check(
            results["stages"][STAGES[2]], results["stages"].get(STAGES[1])
        )
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "report.md").write_text(render_table(results) + "\n")
    return results


def _quiet_libraries() -> None:
    """Per-dataset-map progress bars would bury the stage lines; the trainer's own stay."""
    import datasets

    datasets.disable_progress_bars()


def without_autocast(model: Any) -> Any:
    """The model as loaded: accelerate's `prepare` wraps a mixed-precision model's forward
    in autocast on the model itself, and the wrapper outlives training, so the GRPO stage
    was scored under bf16 autocast and the SFT stage (the same reload, before training) in
    fp32. That path difference is the likely cause of the H100 control (lr 1e-12, no weight
    moved) scoring +1.86 points above the SFT row (5 / 17 flips over 645 steps, p 0.017);
    with the wrapper gone the control must match the SFT row, which checks it."""
    from accelerate.utils import extract_model_from_parallel

    return extract_model_from_parallel(model, keep_fp32_wrapper=False)


def collapse_check(metrics: dict, baseline: dict | None = None) -> dict[str, Any]:
    """Did the policy collapse? `terminate`: the paper's small-model failure (20 points
    over its gold share, or 3x it once it is 15% of predictions). Any type: the limits of
    the training-time watch (shop_r1.watch) on the held-out mix. `types_lost`: gold types
    (>= 5% of the steps) that `baseline` (the SFT stage) predicted and this stage never does."""
    from shop_r1.watch import collapsed_onto

    mix, gold = metrics.get("prediction_mix", {}), metrics.get("gold_mix", {})
    pred = mix.get("terminate", 0.0)
    gold_term = gold.get("terminate", 0.0)
    collapsed = round(pred - gold_term, 9) >= 0.2 or (pred >= 0.15 and pred >= 3 * gold_term)
    found = collapsed_onto(mix, gold)
    onto = found[0] if found else None
    before = (baseline or {}).get("prediction_mix", {})
    lost = [t for t, g in gold.items() if g >= 0.05 and not mix.get(t) and before.get(t)]
    return {
        "terminate_predicted_share": pred,
        "terminate_gold_share": gold_term,
        "collapsed_onto_terminate": collapsed,
        "collapsed_onto": onto,
        "types_lost": lost,
    }


def render_table(results: dict[str, Any]) -> str:
    """Markdown: the paper's Table 2 shape, then the per-type F1 for each stage."""
    stages = results["stages"]
    lines = [
        "| stage | exact match | type accuracy | type macro-F1 | parse failures | "
        "terminate predicted / gold |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in stages.items():
        term = f"{m['prediction_mix']['terminate']:.1%} / {m['gold_mix']['terminate']:.1%}"
        lines.append(
            f"| {name} | {m['exact_match']:.2%} | {m['type_accuracy']:.2%} | "
            f"{m['type_macro_f1']:.2%} | {m['parse_failure_rate']:.2%} | {term} |"
        )
    types = list(next(iter(stages.values()))["per_type"]) if stages else []
    lines += [
        "",
        "| stage | " + " | ".join(f"{t} P / R / F1 / exact" for t in types) + " |",
        "|---" * (len(types) + 1) + "|",
    ]
    for name, m in stages.items():
        cells = [
            f"{p['precision']:.0%} / {p['recall']:.0%} / {p['f1']:.0%} / {p['exact_match']:.0%}"
            for p in (m["per_type"][t] for t in types)
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    n = next(iter(stages.values()))["n"] if stages else 0
    support = ", ".join(
        f"{t} {next(iter(stages.values()))['per_type'][t]['support']}" for t in types
    )
    lines += [
        "",
        f"{n} held-out steps ({support}); wall time {results['timings']['total_s']:.0f} s.",
    ]
    collapse = results.get("collapse", {})
    if collapse.get("collapsed_onto_terminate"):
        lines.append(
            "WARNING: after GRPO the model predicts `terminate` far more often than it occurs."
        )
    if collapse.get("collapsed_onto"):
        lines.append(
            f"WARNING: after GRPO the model collapsed onto `{collapse['collapsed_onto']}`."
        )
    if collapse.get("types_lost"):
        lines.append(
            "WARNING: after GRPO the model never predicts "
            + ", ".join(f"`{t}`" for t in collapse["types_lost"])
            + " (SFT did)."
        )
    return "\n".join(lines)
