"""SFT speed and memory: shop-r1 auto-configuration vs TRL defaults, side by side.

Random-init models with the REAL Qwen2.5 configs (no download), synthetic token rows of
the full sequence length, the same data and global batch for both modes. Each mode
runs in its own child process so peak-memory figures do not mix.

    python benchmarks/sft_speed.py --model-shape 0.5b --steps 12      # H100
    python benchmarks/sft_speed.py --model-shape tiny --steps 4       # CPU smoke test

With `--data sessions.jsonl` (from `shop-r1 data synth`) it trains on the project's own
rows instead: whole-session prompts and gold completions, chat template applied by TRL
as `shop-r1 train sft` does, rows of every length. Tokens and MFU are then counted on
real tokens only (the padded figure beside them is what the GPU computed); see
`sft_speed_data.py` for the modes (TRL defaults, padded auto, packed auto, ...).

    python benchmarks/sft_speed.py --data s.jsonl --model-shape 0.5b --global-batch 16
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# auto: what `shop-r1 train sft` picks at the benchmark's lr 2e-5 (fp32 master weights);
# auto-bf16: the same with `master_weights: bf16` (what auto picks at lr >= 1e-4).
MODES = ("trl-default", "auto", "auto-bf16")


def _config_dict(shape_key: str) -> dict:
    from shop_r1.tiny import tiny_config_dict
    from shop_r1_doctor.memory import QWEN25_CONFIGS

    if shape_key == "tiny":
        return tiny_config_dict(1000, hidden=64, layers=2)
    return dict(QWEN25_CONFIGS[shape_key])


def _snapshot(cfg: object) -> dict:
    """The snapshot `shop-r1 train sft` plans on (`preflight.live_snapshot`): the doctor's
    full probe, with the optional kernels the config may use imported, so the benchmark
    measures the plan users get. (A snapshot without Liger's import planned `liger
    False` on a machine where Liger works.)"""
    from shop_r1.preflight import live_snapshot

    return live_snapshot(cfg)  # type: ignore[arg-type]


def run_one(mode: str, args: argparse.Namespace) -> dict:
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from shop_r1 import _compat, train_sft, trl_config
    from shop_r1.autoconfig import decide, render_text
    from shop_r1.callbacks import SummaryCallback
    from shop_r1.config import SFTRunConfig
    from shop_r1.tiny import model_from_config_dict, train_tokenizer
    from shop_r1_doctor.memory import ModelShape, estimate_training_memory

    cfg_dict = _config_dict(args.model_shape)
    shape = ModelShape.from_config_dict(cfg_dict)
    gen = torch.Generator().manual_seed(0)
    n_rows = args.global_batch * (args.steps + 1)
    ids = torch.randint(0, shape.vocab, (n_rows, args.seq_len), generator=gen).tolist()
    dataset = Dataset.from_dict({"input_ids": ids})
    out = tempfile.mkdtemp(prefix=f"sft_speed_{mode}_")
    cuda = torch.cuda.is_available()
    world = int(os.environ.get("WORLD_SIZE", "1"))  # set by `accelerate launch`
    gpu_name = torch.cuda.get_device_name(0) if cuda else None
    run_cfg = SFTRunConfig(
        model="random-init",
        data="synthetic",
        output_dir=out,
        max_steps=args.steps,
        global_batch_size=args.global_batch,
        max_length=args.seq_len,
        report_to="none",
        logging_steps=1,
        save_steps=10**6,
        learning_rate=2e-5,
        num_processes=world,
    )
    if mode == "auto-bf16":
        run_cfg = dataclasses.replace(run_cfg, master_weights="bf16")
    if mode.startswith("auto"):
        plan = decide(
            _snapshot(run_cfg),
            run_cfg,
            shape,
            seq_len=args.seq_len,
            trl_fused_lm_head=_compat.trl_has_fused_lm_head(),
        )
        print(render_text(plan), file=sys.stderr)
        model = model_from_config_dict(
            cfg_dict,
            dtype=train_sft.torch_dtype(plan),
            attn_implementation=plan.attn_implementation,
        )
        targs = trl_config.build(run_cfg, plan).validate()
        predicted = plan.predicted_peak_bytes
        setup = (
            f"{plan.attn_implementation}, {plan.master_weights} weights, mb {plan.micro_batch_size}"
            f" x ga {plan.gradient_accumulation_steps}, ckpt {plan.gradient_checkpointing},"
            f" padding_free {plan.padding_free}, liger {plan.liger_kernel}"
        )
        micro = plan.micro_batch_size
    else:
        # TRL defaults: fp32 load, bf16 autocast, gradient checkpointing, default optim
        model = model_from_config_dict(cfg_dict)
        targs = SFTConfig(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=args.global_batch // world,
            max_length=args.seq_len,
            report_to=[],
            logging_steps=1,
            save_strategy="no",
            use_cpu=not cuda,
            bf16=cuda,
        )
        ckpt = bool(getattr(targs, "activation_checkpointing", targs.gradient_checkpointing))
        predicted = estimate_training_memory(
            shape,
            seq_len=args.seq_len,
            micro_batch=args.global_batch,
            master_fp32=True,
            grad_checkpointing=ckpt,
            chunked_loss=_compat.trl_has_fused_lm_head(),
            dtype="bf16" if cuda else "fp32",
        ).total
        setup = f"sdpa, fp32 weights + bf16 autocast, mb {args.global_batch}, ckpt {ckpt}"
        micro = args.global_batch
    summary = SummaryCallback(
        shape, args.seq_len, gpu_name=gpu_name, n_gpus=world, warmup_steps=args.warmup
    )
    # pre-tokenized rows: the tokenizer only supplies the pad id
    tokenizer = train_tokenizer(["synthetic benchmark text"] * 4, vocab_size=300)
    trainer = SFTTrainer(
        model=model,
        args=targs,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[summary],
    )
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    result = dict(
        summary.summary,
        mode=mode,
        setup=setup,
        micro_batch=micro,
        predicted_peak_gib=round(predicted / 2**30, 2),
    )
    if cuda:
        result["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model-shape", default="0.5b", choices=["tiny", "0.5b", "1.5b", "3b"])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seq-len", type=int, default=None)
    ap.add_argument("--global-batch", type=int, default=8)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--json-out", default="", help="Also write the results as JSON here.")
    ap.add_argument("--data", default="", help="Sessions JSONL: measure on real rows.")
    ap.add_argument("--max-length", type=int, default=8192, help="(--data) token cap per row.")
    ap.add_argument("--profile", action="store_true", help="(--data) kernel-time breakdown.")
    ap.add_argument("--check-packing", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--prepared", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.data or args.check_packing:
        sys.path.insert(0, str(Path(__file__).parent))
        import sft_speed_data

        from shop_r1_doctor.errors import ToolError

        try:
            sft_speed_data.main(args)
        except ToolError as e:  # bad input: one line naming it, no traceback
            print(f"sft_speed: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        return
    if args.seq_len is None:
        args.seq_len = 128 if args.model_shape == "tiny" else 2048
    args.warmup = min(args.warmup, args.steps - 1)
    if args.one:
        print("@@result@@" + json.dumps(run_one(args.one, args)))
        return
    results = []
    for mode in args.modes.split(","):
        argv = [sys.executable, __file__, "--one", mode] + [
            a for a in sys.argv[1:] if not a.startswith("--modes") and a != args.modes
        ]
        proc = subprocess.run(argv, capture_output=True, text=True)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("@@result@@")), None)
        if proc.returncode != 0 or line is None:
            oom = "OutOfMemoryError" in proc.stderr
            results.append({"mode": mode, "error": "OOM" if oom else proc.stderr.strip()[-600:]})
            continue
        sys.stderr.write(proc.stderr[-3000:] if mode.startswith("auto") else "")
        results.append(json.loads(line[len("@@result@@") :]))
    print_table(results, args)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))


def print_table(results: list[dict], args: argparse.Namespace) -> None:
    print(
        f"\nSFT speed: Qwen2.5-{args.model_shape} shape, seq {args.seq_len}, global batch "
        f"{args.global_batch}, {args.steps} steps ({args.warmup} warm-up)"
    )
    head = f"{'mode':<12} {'tokens/s':>10} {'MFU':>7} {'peak GiB':>9} {'pred GiB':>9} {'pred/meas':>9}  setup"
    print(head + "\n" + "-" * len(head))
    for r in results:
        if "error" in r:
            print(f"{r['mode']:<12} FAILED: {r['error']}")
            continue
        tps, peak, pred = (
            r.get("tokens_per_s"),
            r.get("peak_memory_gib"),
            r.get("predicted_peak_gib"),
        )
        ratio = f"{pred / peak:.2f}" if peak and pred else "n/a"
        mfu = f"{r['mfu']:.1%}" if r.get("mfu") else "n/a"
        print(
            f"{r['mode']:<12} {tps or 0:>10,.0f} {mfu:>7} {peak or 0:>9} {pred:>9} {ratio:>9}  {r['setup']}"
        )
    print()
    ok = {r["mode"]: r for r in results if "error" not in r and r.get("tokens_per_s")}
    base = ok.get("trl-default")
    for mode, r in ok.items():
        if base and mode != "trl-default":
            print(f"speed-up {mode} / trl-default: {r['tokens_per_s'] / base['tokens_per_s']:.2f}x")


if __name__ == "__main__":
    main()
