"""`sft_speed.py --data`: SFT speed on the project's own rows, counted in real tokens.

Modes (each in its own child process, so peak memory does not mix):
  trl-default   TRL's defaults: fp32 load + bf16 autocast, gradient checkpointing, one
                micro batch of the whole global batch, rows padded to the longest
  auto-padded   `shop-r1 train sft`'s auto-configuration with packing off
  auto-packed   the auto-configuration as it stands (padding-free where it can, in
                token-budget bins: what `shop-r1 train sft` runs)
  auto-rows     auto-packed with micro batches of whole rows (`token_budget: off`)
  packed-flex   padding-free through transformers' FlexAttention (document BlockMask)
  packed-sdpa   padding-free through plain sdpa (transformers' dense block-diagonal mask)
  packed-bf16   auto-packed with pure bf16 weights (what auto picks at lr >= 1e-4)
  packed-bfd    token-budget bins of the LARGEST token count the memory model fits,
                whatever the global batch (rows per optimizer step then exceed it)
  MODE-noliger  MODE with liger_kernel off (what users without liger-kernel get)
  packed-mbN    auto-packed with micro batch N: the plan sizes micro batches for the
                worst draw (N x the longest row); this shows what larger ones give
                (suffix -nockpt: gradient checkpointing off, even where the plan says
                the worst draw would not fit)
  MODE:KEY=VALUE[:...]  MODE with any run-config or TRL field set on top, as `--set`
                gives it to `shop-r1 train sft` (e.g. auto-packed:logging_steps=1)
  MODE:noguard  MODE without the non-finite-gradient guard (its own per-step cost)

Real tokens are the rows' own tokens; padded tokens are what the GPU computed. MFU
(real) counts each row's model FLOPs, 6N + 12*L*d*len per token with len its own
length; MFU (padded) counts the padded shape. The tokenizer is a byte-level BPE trained
on the sessions themselves (Qwen's is not downloadable here): ~3.5 characters a token.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA_MODES = ("trl-default", "auto-padded", "auto-packed", "packed-flex", "packed-sdpa")
TOKENIZER_VOCAB = 4000


def prepare(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Rows for every mode (the same, in the same order) and the tokenizer, once."""
    from shop_r1.data.io import load_sessions
    from shop_r1.data.prompts import sft_rows
    from shop_r1.tiny import train_tokenizer

    sessions = load_sessions(args.data)
    rows = sft_rows(sessions, context="full", max_tokens=None)
    random.Random(0).shuffle(rows)
    need = args.global_batch * (args.warmup + args.steps + 2)
    rows = [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows[:need]]
    texts = [m["content"] for r in rows[:2000] for m in r["prompt"] + r["completion"]]
    tokenizer = train_tokenizer(texts, vocab_size=TOKENIZER_VOCAB)
    tokenizer.save_pretrained(folder / "tokenizer")
    lengths = sorted(
        len(
            tokenizer.apply_chat_template(
                r["prompt"] + r["completion"], tokenize=True, return_dict=False
            )
        )
        for r in rows
    )
    (folder / "rows.json").write_text(json.dumps(rows))
    q = lambda p: lengths[min(int(p * len(lengths)), len(lengths) - 1)]  # noqa: E731
    stats = {
        "rows": len(rows),
        "mean": round(sum(lengths) / len(lengths)),
        "p50": q(0.5),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": lengths[-1],
        "chars_per_token": round(
            sum(len(t) for t in texts[:500])
            / sum(len(tokenizer(t)["input_ids"]) for t in texts[:500]),
            2,
        ),
    }
    (folder / "stats.json").write_text(json.dumps(stats))
    return stats


class BatchStats:
    """Real / padded tokens and sum of len^2 per micro batch, read from the batches the
    trainer's `training_step` receives (DataLoader workers collate in other processes);
    the collator's own time is measured where it runs in this process (no workers)."""

    def __init__(self, trainer: Any) -> None:
        self.collate = trainer.data_collator
        self.batches: list[tuple[int, int, int, int]] = []
        self.kept: list[tuple[Any, Any, Any]] = []
        self.seconds = 0.0
        self.timed_collates = 0
        step = trainer.training_step

        def counted_step(model: Any, inputs: Any, *a: Any, **kw: Any) -> Any:
            self.count(inputs)
            return step(model, inputs, *a, **kw)

        trainer.training_step = counted_step
        if not trainer.args.dataloader_num_workers:
            trainer.data_collator = self.timed_collate

    def timed_collate(self, features: Any) -> Any:
        start = time.perf_counter()
        batch = self.collate(features)
        self.seconds += time.perf_counter() - start
        self.timed_collates += 1
        return batch

    def count(self, batch: Any) -> None:
        """Keep what the stats need; read it after training (the batch may already be on
        the GPU, and reading it here would make the host wait for the GPU every step)."""
        ids = batch["input_ids"]
        if "cu_seq_lens_q" in batch:  # padding-free: one row, computed = real
            self.kept.append((tuple(ids.shape), batch["cu_seq_lens_q"], None))
        else:  # padded: every row computed at the batch's width
            self.kept.append((tuple(ids.shape), None, batch["attention_mask"]))

    def finish(self) -> None:
        for shape, cu, mask in self.kept:
            numel = shape[0] * shape[1]
            if cu is not None:
                lens = cu.diff().tolist()
                padded_sq = sum(n * n for n in lens)
            else:
                lens = mask.sum(dim=1).tolist()
                padded_sq = shape[0] * shape[1] ** 2
            # (real tokens, computed tokens, sum of real len^2, sum of computed len^2)
            self.batches.append((int(sum(lens)), numel, int(sum(n * n for n in lens)), padded_sq))
        self.kept = []


class StepClock:
    """Wall time from the end of the warm-up steps to the end of the last timed step;
    optionally a torch.profiler over the steps after that."""

    def __init__(self, warmup: int, timed: int, profile_steps: int) -> None:
        self.warmup, self.timed, self.profile_steps = warmup, timed, profile_steps
        self.start = self.end = 0.0
        self.prof: Any = None
        # one CUDA event per optimizer step, recorded without waiting on the GPU: the
        # time of each step, read once training is over (a cold machine's first run
        # against a warm one, step by step)
        self.events: list[Any] = []

    def _sync(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def _mark(self) -> None:
        import torch

        if torch.cuda.is_available():
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.events.append(event)

    def step_ms(self) -> list[float]:
        """Milliseconds between consecutive step ends (the first step has no start mark)."""
        self._sync()
        pairs = zip(self.events[:-1], self.events[1:], strict=True)
        return [round(a.elapsed_time(b), 1) for a, b in pairs]

    def callback(self) -> Any:
        from transformers import TrainerCallback

        clock = self

        class _Cb(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                # no checkpoint: transformers saves at the last step whatever save_steps
                # says, and a 1.5B checkpoint with optimizer state per mode filled the
                # H100 machine's 64 GB disk
                control.should_save = False
                step = state.global_step
                clock._mark()
                if step == clock.warmup:
                    clock._sync()
                    clock.start = time.perf_counter()
                if step == clock.warmup + clock.timed:
                    clock._sync()
                    clock.end = time.perf_counter()
                    if clock.profile_steps:
                        from torch.profiler import ProfilerActivity, profile

                        acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
                        clock.prof = profile(activities=acts)
                        clock.prof.__enter__()
                if (
                    clock.prof is not None
                    and step == clock.warmup + clock.timed + clock.profile_steps
                ):
                    clock._sync()
                    clock.prof.__exit__(None, None, None)

        return _Cb()


KERNEL_CLASSES = (
    ("attention", ("flash", "fmha", "attention", "attn", "flex", "_tem_fused")),
    ("optimizer", ("adam", "multi_tensor", "foreach", "clip", "norm_kernel")),
    ("matmul", ("gemm", "cutlass", "nvjet", "xmma", "cublas", "matmul", "gmma", "splitk")),
    ("loss/lm-head", ("softmax", "logsumexp", "cross_entropy", "nll", "log_prob")),
    ("liger/elementwise", ("liger", "rms", "silu", "swiglu", "rope", "triton", "elementwise")),
)


def kernel_breakdown(prof: Any, steps: int, wall_per_step: float) -> dict[str, float]:
    """CUDA kernel time per class, ms per optimizer step; 'idle' = wall minus kernels."""
    out: dict[str, float] = {}
    total = 0.0
    for evt in prof.key_averages():
        us = getattr(evt, "self_device_time_total", 0) or getattr(evt, "self_cuda_time_total", 0)
        if not us or "cuda" not in str(getattr(evt, "device_type", "")).lower():
            continue
        name = evt.key.lower()
        cls = next((c for c, keys in KERNEL_CLASSES if any(k in name for k in keys)), "other")
        if "memcpy" in name or "memset" in name:
            cls = "memcpy/memset"
        out[cls] = out.get(cls, 0.0) + us / 1000 / steps
        total += us / 1000 / steps
    out = {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}
    out["kernels_total"] = round(total, 1)
    out["wall"] = round(wall_per_step * 1000, 1)
    out["gpu_idle"] = round(max(wall_per_step * 1000 - total, 0.0), 1)
    return out


def top_kernels(prof: Any, steps: int, top: int = 25) -> dict[str, float]:
    """The CUDA kernels with the most device time, ms per optimizer step: what the classes
    above lump together (which elementwise kernels, which GEMMs)."""
    rows = []
    for evt in prof.key_averages():
        us = getattr(evt, "self_device_time_total", 0) or getattr(evt, "self_cuda_time_total", 0)
        if us and "cuda" in str(getattr(evt, "device_type", "")).lower():
            rows.append((evt.key[:90], us / 1000 / steps))
    rows.sort(key=lambda r: -r[1])
    return {name: round(ms, 2) for name, ms in rows[:top]}


def host_breakdown(prof: Any, steps: int, top: int = 12) -> dict[str, float]:
    """The host's side of the profiled steps: the CPU events with the most self time, ms
    per optimizer step. Waits on the GPU show as cudaStreamSynchronize /
    cudaDeviceSynchronize / aten::_local_scalar_dense (`.item()`); the data loader as
    `enumerate(DataLoader)...`; the optimizer as `Optimizer.step#...`."""
    rows = []
    for evt in prof.key_averages():
        us = getattr(evt, "self_cpu_time_total", 0)
        if us and "cuda" not in str(getattr(evt, "device_type", "")).lower():
            rows.append((evt.key[:60], us / 1000 / steps))
    rows.sort(key=lambda r: -r[1])
    return {name: round(ms, 1) for name, ms in rows[:top]}


def split_mode(label: str) -> tuple[str, list[str], bool]:
    """`MODE[:KEY=VALUE ...][:noguard]`: the mode, the run-config/TRL settings on top of it,
    and whether the non-finite guard is left out (a variant of one mode measured beside
    it, each in its own process)."""
    mode, *extra = label.split(":")
    settings = [e for e in extra if "=" in e]
    flags = [e for e in extra if "=" not in e]
    unknown = [f for f in flags if f != "noguard"]
    if unknown:
        raise SystemExit(f"--modes: {label}: unknown variant {unknown[0]!r} (KEY=VALUE or noguard)")
    return mode, settings, "noguard" in flags


def run_mode(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from shop_r1 import _compat, train_sft, trl_config
    from shop_r1.autoconfig import decide, render_text
    from shop_r1.callbacks import peak_flops
    from shop_r1.config import SFTRunConfig, make_run_config, parse_set
    from shop_r1.tiny import model_from_config_dict
    from shop_r1_doctor.memory import ModelShape, estimate_training_memory, flops_per_token

    sys.path.insert(0, str(Path(__file__).parent))
    from sft_speed import _config_dict, _snapshot

    label = mode
    mode, settings, without_guard = split_mode(label)
    folder = Path(args.prepared)
    rows = json.loads((folder / "rows.json").read_text())
    stats = json.loads((folder / "stats.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
    cfg_dict = _config_dict(args.model_shape)
    if args.model_shape == "tiny":  # CPU smoke test: the tiny vocab must hold the tokenizer's
        cfg_dict["vocab_size"] = len(tokenizer)
    shape = ModelShape.from_config_dict(cfg_dict)
    cuda = torch.cuda.is_available()
    seq_len = min(stats["max"], args.max_length)
    out_dir = tempfile.mkdtemp(prefix=f"sft_data_{mode}_")
    profile_steps = (
        2
        if args.profile and mode in ("auto-padded", "auto-packed", "auto-rows", "packed-bf16")
        else 0
    )
    total_steps = args.warmup + args.steps + profile_steps
    dataset = Dataset.from_list(rows)
    variant = mode.removesuffix("-noliger")
    values: dict[str, Any] = dict(
        model="random-init",
        data=args.data,
        output_dir=out_dir,
        max_steps=total_steps,
        global_batch_size=args.global_batch,
        max_length=args.max_length,
        report_to="none",
        # logging_steps stays the default (10, TRL's too): what users run. Every-step
        # logging measured within run-to-run noise of it on the 0.5B shape once the kernel
        # caches were warm (benchmarks/results/h100_sft_sync_2026-11-26/)
        save_steps=10**6,
        learning_rate=2e-5,
        packing={
            "auto-padded": "off",
            "packed-flex": "on",
            "packed-sdpa": "on",
            "packed-bfd": "on",
        }.get(variant, "auto"),
        attn_implementation={
            "packed-flex": "flex_attention",
            "packed-sdpa": "sdpa",
            "packed-bfd": "sdpa_varlen",
        }.get(variant, "auto"),
        master_weights="bf16" if mode == "packed-bf16" else "auto",
        # packed-mbN: the micro batch set by hand, past the plan's worst-case bound
        micro_batch_size=int(mode[len("packed-mb") :].split("-")[0])
        if mode.startswith("packed-mb")
        else "auto",
        gradient_checkpointing="off" if mode.endswith("-nockpt") else "auto",
        # MODE-noliger: the same plan without Liger's kernels (what users without it get)
        liger_kernel="off" if mode.endswith("-noliger") else "auto",
        # auto-rows: the auto path with micro batches of whole rows (the default before
        # token-budget bins)
        token_budget="off" if variant == "auto-rows" else "auto",
    )
    # MODE:KEY=VALUE: any run-config or TRL field on top, as `--set` gives it to `train sft`
    run_cfg = make_run_config("sft", {**values, **parse_set(settings, SFTRunConfig)})
    clock = StepClock(args.warmup, args.steps, profile_steps)
    plan = None
    if mode == "trl-default":
        model = model_from_config_dict(cfg_dict)
        targs = SFTConfig(
            output_dir=out_dir,
            max_steps=total_steps,
            per_device_train_batch_size=args.global_batch,
            max_length=args.max_length,
            report_to=[],
            save_strategy="no",
            use_cpu=not cuda,
            bf16=cuda,
        )
        ckpt = bool(targs.gradient_checkpointing)
        trainer = SFTTrainer(
            model=model,
            args=targs,
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[clock.callback()],
        )
        micro, ga, packed = args.global_batch, 1, False
        setup = f"sdpa, fp32 weights + bf16 autocast, mb {micro}, ckpt {ckpt}, padded"
        est_kw: dict[str, Any] = dict(
            master_fp32=True,
            grad_checkpointing=ckpt,
            chunked_loss=_compat.trl_has_fused_lm_head(),
            dtype="bf16" if cuda else "fp32",
            explicit_mask=True,
        )
        planned = estimate_training_memory(
            shape, seq_len=seq_len, micro_batch=micro, **est_kw
        ).total
    else:
        plan = decide(
            _snapshot(run_cfg),
            run_cfg,
            shape,
            seq_len=seq_len,
            trl_fused_lm_head=_compat.trl_has_fused_lm_head(),
            mean_tokens=stats["mean"],
        )
        print(render_text(plan), file=sys.stderr)
        model = model_from_config_dict(
            cfg_dict,
            dtype=train_sft.torch_dtype(plan),
            attn_implementation=plan.attn_implementation,
        )
        bins = ""
        if variant == "packed-bfd":
            # token-budget micro batches: TRL's best-fit-decreasing bins of `capacity`
            # tokens, one bin per forward; accumulation makes ~global_batch rows a step
            capacity = _bfd_capacity(plan, shape, seq_len)
            ga = max(round(args.global_batch * stats["mean"] / capacity), 1)
            targs = trl_config.build(run_cfg, plan)
            targs.packing, targs.packing_strategy, targs.max_length = True, "bfd", capacity
            targs.per_device_train_batch_size, targs.gradient_accumulation_steps = 1, ga
            targs.validate()
            trainer = SFTTrainer(
                model=model,
                args=targs,
                train_dataset=dataset,
                processing_class=tokenizer,
                callbacks=[clock.callback()],
            )
            micro, packed = 1, True
            bins = f" bins of {capacity} tokens,"
        else:
            # the callbacks `shop-r1 train sft` runs, so their per-step cost counts
            # (MODE:noguard leaves out the non-finite guard to measure its own cost)
            summary, guard = train_sft.run_callbacks(run_cfg, plan, shape)
            run_callbacks = [summary] if without_guard else [summary, guard]
            trainer = train_sft.make_trainer(
                run_cfg,
                plan,
                dataset,
                model=model,
                tokenizer=tokenizer,
                callbacks=[*run_callbacks, clock.callback()],
            )
            micro, ga = plan.micro_batch_size, plan.gradient_accumulation_steps
            packed = plan.padding_free
            if plan.token_budget:
                bins = f" bins of {plan.token_budget} tokens,"
        setup = (
            f"{plan.attn_implementation}, {plan.master_weights} weights, {plan.hidden_dtype} hidden, mb {micro} x ga {ga},{bins}"
            f" ckpt {plan.gradient_checkpointing}, padding_free {packed}, liger {plan.liger_kernel}"
        )
        est_kw = dict(
            dtype=plan.dtype,
            master_fp32=plan.master_weights == "fp32",
            fp32_hidden=plan.hidden_dtype == "fp32",
            grad_checkpointing=plan.gradient_checkpointing,
            chunked_loss=plan.chunked_loss,
            fused_kernels=plan.liger_kernel,
            explicit_mask=plan.attn_implementation == "sdpa",
        )
        planned = plan.predicted_peak_bytes
    counter = BatchStats(trainer)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    counter.finish()
    seconds = clock.end - clock.start
    first, last = args.warmup * ga, (args.warmup + args.steps) * ga
    timed = counter.batches[first:last]
    real = sum(b[0] for b in timed)
    padded = sum(b[1] for b in timed)
    base = flops_per_token(shape, 0)
    attn_coef = flops_per_token(shape, 1) - base
    flops_real = sum(base * b[0] + attn_coef * b[2] for b in timed)
    flops_padded = sum(base * b[1] + attn_coef * b[3] for b in timed)
    gpu = torch.cuda.get_device_name(0) if cuda else None
    peak = peak_flops(gpu)
    # memory predicted for the largest micro batch this run actually drew
    big = max(counter.batches, key=lambda b: b[1])
    if packed:
        seen = estimate_training_memory(shape, seq_len=big[1], micro_batch=1, **est_kw).total
    else:
        seen = estimate_training_memory(
            shape, seq_len=big[1] // micro, micro_batch=micro, **est_kw
        ).total
    result: dict[str, Any] = {
        "mode": label,
        "setup": setup,
        "gpu": gpu,
        "timed_steps": args.steps,
        "seconds": round(seconds, 3),
        "real_tokens_per_s": round(real / seconds, 1),
        "padded_tokens_per_s": round(padded / seconds, 1),
        "padding_share": round(1 - real / padded, 3),
        "mfu_real": round(flops_real / seconds / peak, 4) if peak else None,
        "mfu_padded": round(flops_padded / seconds / peak, 4) if peak else None,
        # in this process only (no DataLoader workers); workers collate off the step
        "collate_ms_per_step": round(counter.seconds / counter.timed_collates * ga * 1000, 2)
        if counter.timed_collates
        else None,
        "dataloader_num_workers": trainer.args.dataloader_num_workers,
        "largest_micro_batch_tokens": big[1],
        "planned_peak_gib": round(planned / 2**30, 2),
        "predicted_peak_gib": round(seen / 2**30, 2),
    }
    if settings or without_guard:
        # what the trainer really ran with, read back from TRL's args
        result["variant"] = {
            k.split("=")[0]: getattr(trainer.args, k.split("=")[0], None) for k in settings
        }
        result["guard"] = not without_guard
    if cuda:
        result["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        result["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    shutil.rmtree(out_dir, ignore_errors=True)
    if clock.prof is not None:
        result["profile_ms_per_step"] = kernel_breakdown(
            clock.prof, profile_steps, seconds / args.steps
        )
        result["host_ms_per_step"] = host_breakdown(clock.prof, profile_steps)
        result["top_kernels_ms_per_step"] = top_kernels(clock.prof, profile_steps)
    if clock.events:
        result["step_ms"] = clock.step_ms()
    return result


def _bfd_capacity(plan: Any, shape: Any, longest: int) -> int:
    """The largest bin (a multiple of 4096 tokens, at least the longest row) whose
    predicted peak fits the plan's memory budget without checkpointing."""
    from shop_r1_doctor.memory import estimate_training_memory

    best = longest
    for capacity in range(4096, 262144 + 1, 4096):
        need = estimate_training_memory(
            shape,
            seq_len=capacity,
            micro_batch=1,
            dtype=plan.dtype,
            master_fp32=plan.master_weights == "fp32",
            fp32_hidden=plan.hidden_dtype == "fp32",
            chunked_loss=plan.chunked_loss,
            fused_kernels=plan.liger_kernel,
        ).total
        if need > plan.memory_budget_bytes:
            break
        best = max(best, capacity)
    return best


def check_packing(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Packed vs unpacked per-example losses and gradients on this machine's kernels:
    2 layers of the Qwen2.5-0.5B shape (14 query heads on 2 kv heads), bf16."""
    import torch
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from shop_r1 import packing
    from shop_r1.tiny import tiny_config_dict

    def attends_across(module: Any, q: Any, k: Any, v: Any, mask: Any, **kw: Any) -> Any:
        kw.pop("cu_seq_lens_q", None)
        return sdpa_attention_forward(module, q, k, v, None, **kw)

    packing.register()
    AttentionInterface.register("planted_cross_attention", attends_across)
    cuda = torch.cuda.is_available()
    config = tiny_config_dict(
        32000, hidden=896, layers=2, heads=14, kv_heads=2, intermediate=4864, max_positions=8192
    )
    lengths = [1500, 300, 2700, 64, 900]
    out = []
    for attn in (packing.NAME, "flex_attention", "planted_cross_attention"):
        try:
            r = packing.packed_vs_unpacked(
                config,
                attn,
                lengths,
                device="cuda" if cuda else "cpu",
                dtype=torch.bfloat16 if cuda else torch.float32,
            )
            r = {"attn": attn, **{k: v for k, v in r.items() if k != "losses"}}
            r["loss_rel_diff"] = [float(f"{x:.2e}") for x in r["loss_rel_diff"]]
        except Exception as exc:  # report and go on: one kernel failing is a result
            r = {"attn": attn, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(json.dumps(r), flush=True)
        out.append(r)
    return out


def main(args: argparse.Namespace) -> None:
    if args.check_packing:
        results = check_packing(args)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(results, indent=2))
        return
    if args.one:
        print("@@result@@" + json.dumps(run_mode(args.one, args)), flush=True)
        return
    from sft_speed import MODES

    modes = DATA_MODES if args.modes == ",".join(MODES) else tuple(args.modes.split(","))
    with tempfile.TemporaryDirectory(prefix="sft_data_") as tmp:
        stats = prepare(args, Path(tmp))
        print(f"rows: {json.dumps(stats)}", file=sys.stderr, flush=True)
        results = []
        for mode in modes:
            argv = [sys.executable, str(Path(__file__).with_name("sft_speed.py")), "--one", mode]
            argv += ["--prepared", tmp] + [
                a for a in sys.argv[1:] if not a.startswith("--modes") and a != args.modes
            ]
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            proc = subprocess.run(argv, capture_output=True, text=True, env=env)
            line = next((x for x in proc.stdout.splitlines() if x.startswith("@@result@@")), None)
            if proc.returncode != 0 or line is None:
                oom = "OutOfMemoryError" in proc.stderr
                err = "OOM" if oom else proc.stderr.strip()[-1500:]
                results.append({"mode": mode, "error": err})
                print(f"{mode}: FAILED {err}", file=sys.stderr, flush=True)
            else:
                results.append(json.loads(line[len("@@result@@") :]))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
            # the plan table (auto modes) and any traceback, for the log
            plan_text = [x for x in proc.stderr.splitlines() if x[:1] in "┃│┏┡└" or "Error" in x]
            print(f"--- {mode}\n" + "\n".join(plan_text[-40:]), file=sys.stderr, flush=True)
            if args.json_out:  # after every mode: a later crash keeps the earlier ones
                Path(args.json_out).write_text(
                    json.dumps({"rows": stats, "results": results}, indent=2)
                )
    print_table(results, stats, args)


def print_table(
    results: list[dict[str, Any]], stats: dict[str, Any], args: argparse.Namespace
) -> None:
    print(
        f"\nSFT on real rows ({args.data}): Qwen2.5-{args.model_shape} shape, global batch "
        f"{args.global_batch} rows, {args.steps} timed steps after {args.warmup} warm-up; "
        f"row tokens p50 {stats['p50']}, p90 {stats['p90']}, p99 {stats['p99']}, max {stats['max']}"
    )
    head = (
        f"{'mode':<12} {'real tok/s':>10} {'MFU real':>8} {'pad tok/s':>10} {'MFU pad':>7} "
        f"{'pad %':>5} {'peak GiB':>8} {'pred GiB':>8} {'pred/meas':>9} {'plan GiB':>8}  setup"
    )
    print(head + "\n" + "-" * len(head))
    ok = {}
    for r in results:
        if "error" in r:
            print(f"{r['mode']:<12} FAILED: {r['error'][-300:]}")
            continue
        ok[r["mode"]] = r
        meas = r.get("peak_allocated_gib")
        ratio = f"{r['predicted_peak_gib'] / meas:.2f}" if meas else "n/a"
        mfu = lambda x: f"{x:.1%}" if x else "n/a"  # noqa: E731
        print(
            f"{r['mode']:<12} {r['real_tokens_per_s']:>10,.0f} {mfu(r['mfu_real']):>8} "
            f"{r['padded_tokens_per_s']:>10,.0f} {mfu(r['mfu_padded']):>7} "
            f"{r['padding_share']:>5.0%} {meas or 0:>8} {r['predicted_peak_gib']:>8} {ratio:>9} "
            f"{r['planned_peak_gib']:>8}  {r['setup']}"
        )
    print()
    for name in ("trl-default", "auto-padded"):
        base = ok.get(name)
        for mode, r in ok.items():
            if base and mode != name and mode != "trl-default":
                x = r["real_tokens_per_s"] / base["real_tokens_per_s"]
                print(f"real-token speed-up {mode} / {name}: {x:.2f}x")
    for mode, r in ok.items():
        if "profile_ms_per_step" in r:
            print(f"profile {mode} (ms per optimizer step): {json.dumps(r['profile_ms_per_step'])}")
        if "host_ms_per_step" in r:
            print(
                f"host {mode} (CPU self ms per optimizer step): {json.dumps(r['host_ms_per_step'])}"
            )
