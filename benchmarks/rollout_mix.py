"""What GRPO will see before it starts: the action-type mix of a model's completions on
the same held-out / training prompts, by engine (transformers, vLLM) and decoding
(greedy, sampled at the GRPO temperature), and how many GRPO groups carry no reward
signal (every completion of a prompt scored the same).

Why: on the H100 the SFT model's greedy evaluation predicted `type_and_submit` on 18%
of the held-out steps while its GRPO rollouts (vLLM, temperature 0.6) predicted it on
0-3% from the first step, and GRPO then collapsed onto `click`. This script puts the
candidate causes side by side on one checkpoint:

    python benchmarks/rollout_mix.py --model runs/learn/sft --limit 240 \
        --engines hf,vllm --splits test,train --temperature 0.6 --generations 8

Data flags must match the training run's (same synthetic sessions, split and context).
Prints one table row per (engine, split, decoding) and writes --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rows_for(split: str, args: argparse.Namespace) -> list[Any]:
    from shop_r1.data.split import split_by_session
    from shop_r1.data.synth import generate_sessions
    from shop_r1.eval import rows_from_sessions

    sessions = generate_sessions(args.sessions, seed=args.seed)
    train, test = split_by_session(sessions, args.test_fraction, args.seed)
    chosen = test if split == "test" else train
    return rows_from_sessions(
        chosen, context=args.context, limit=args.limit, max_tokens=args.max_prompt_tokens
    )


def hf_generate(model_dir: str, rows: list[Any], max_new: int, temperature: float, n: int):
    import torch

    from shop_r1.generate import chat_ids, load_model

    model, tok = load_model(model_dir)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    out: list[list[str]] = []
    device = next(model.parameters()).device
    for row in rows:  # one prompt at a time: no padding, so nothing but the decoding differs
        ids = torch.tensor([chat_ids(tok, row.messages)], device=device)
        kw: dict[str, Any] = {"do_sample": False}
        if temperature > 0:
            kw = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0}
        with torch.no_grad():
            gen = model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new,
                num_return_sequences=n if temperature > 0 else 1,
                pad_token_id=tok.pad_token_id,
                **kw,
            )
        out.append([tok.decode(g[ids.shape[1] :], skip_special_tokens=True) for g in gen])
    del model
    torch.cuda.empty_cache()
    return out


class VLLM:
    def __init__(self, model_dir: str, gpu_memory_utilization: float) -> None:
        from transformers import AutoTokenizer
        from vllm import LLM

        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.llm = LLM(
            model=model_dir,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=4096,
            enable_prefix_caching=True,
            seed=0,
        )

    def generate(self, rows: list[Any], max_new: int, temperature: float, n: int):
        from vllm import SamplingParams

        from shop_r1.generate import chat_ids

        sp = SamplingParams(
            temperature=temperature,
            n=n if temperature > 0 else 1,
            max_tokens=max_new,
            top_p=1.0,
            top_k=-1,
        )
        prompts = [{"prompt_token_ids": chat_ids(self.tok, r.messages)} for r in rows]
        outs = self.llm.generate(prompts, sp, use_tqdm=False)
        return [[c.text for c in o.outputs] for o in outs]


def summarise(rows: list[Any], groups: list[list[str]]) -> dict[str, Any]:
    from shop_r1.eval import score
    from shop_r1.parser import parse_cached
    from shop_r1.rewards import RewardConfig, reward_components

    flat_rows = [r for r, g in zip(rows, groups, strict=True) for _ in g]
    flat = [c for g in groups for c in g]
    m = score(flat_rows, flat)
    cfg = RewardConfig()
    zero_std = 0
    by_gold: dict[str, list[float]] = {}
    for row, group in zip(rows, groups, strict=True):
        totals = [sum(reward_components(c, row.gold, cfg).values()) for c in group]
        zero_std += len(group) > 1 and statistics.pstdev(totals) == 0
        types = [p.action.type for p in map(parse_cached, group) if p.ok and p.action]
        share = sum(t == row.gold.type for t in types) / len(group)
        by_gold.setdefault(row.gold.type, []).append(share)
    return {
        "completions": len(flat),
        "exact_match": round(m["exact_match"], 4),
        "type_accuracy": round(m["type_accuracy"], 4),
        "parse_failure_rate": round(m["parse_failure_rate"], 4),
        "prediction_mix": {k: round(v, 4) for k, v in m["prediction_mix"].items()},
        "gold_mix": {k: round(v, 4) for k, v in m["gold_mix"].items()},
        # per gold type: mean share of a prompt's completions that name the gold type
        "right_type_share_by_gold": {k: round(statistics.mean(v), 4) for k, v in by_gold.items()},
        "groups_zero_reward_std": None if len(groups[0]) < 2 else round(zero_std / len(groups), 4),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", required=True, help="checkpoint folder (e.g. an SFT run)")
    ap.add_argument("--sessions", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--test-fraction", type=float, default=0.1)
    ap.add_argument("--context", default="full")
    ap.add_argument("--max-prompt-tokens", type=int, default=1024)
    ap.add_argument("--limit", type=int, default=240, help="prompts per split")
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--engines", default="hf,vllm")
    ap.add_argument("--splits", default="test,train")
    ap.add_argument("--temperature", type=float, default=0.6)
    ap.add_argument("--generations", type=int, default=8)
    ap.add_argument("--vllm-gpu-memory-utilization", type=float, default=0.3)
    ap.add_argument("--out", default="rollout_mix.json")
    ap.add_argument(
        "--keep-spread",
        metavar="FILE",
        help="write the train split's prompts whose sampled group has reward spread "
        "(shop-r1.spread/1, for learning.py --grpo-prompts); --limit 0 takes every prompt",
    )
    args = ap.parse_args()
    if args.limit == 0:
        args.limit = None

    rows = {s: rows_for(s, args) for s in args.splits.split(",")}
    results: list[dict[str, Any]] = []
    modes = [
        ("greedy", 0.0, 1),
        (f"T={args.temperature} x{args.generations}", args.temperature, args.generations),
    ]
    for engine in args.engines.split(","):
        gen = None
        if engine == "vllm":
            gen = VLLM(args.model, args.vllm_gpu_memory_utilization).generate
        for split, split_rows in rows.items():
            for label, temp, n in modes:
                t = time.perf_counter()
                if engine == "hf":
                    groups = hf_generate(args.model, split_rows, args.max_new_tokens, temp, n)
                else:
                    assert gen is not None
                    groups = gen(split_rows, args.max_new_tokens, temp, n)
                res = {"engine": engine, "split": split, "decoding": label}
                res |= summarise(split_rows, groups)
                res["seconds"] = round(time.perf_counter() - t, 1)
                res["sample"] = groups[0][0][:300]
                if args.keep_spread and split == "train" and n > 1:
                    from shop_r1.spread import select_spread

                    report = select_spread(split_rows, groups)
                    Path(args.keep_spread).write_text(json.dumps(report.to_json(), indent=1) + "\n")
                    res["spread_kept"] = len(report.keep)
                results.append(res)
                print(json.dumps({k: v for k, v in res.items() if k != "sample"}), flush=True)
                Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(
        "\n| engine | split | decoding | exact | type acc | click / t&s / terminate | right type by gold (c / t&s / term) | zero-std groups |"
    )
    print("|---|---|---|---:|---:|---|---|---:|")
    for r in results:
        mix = r["prediction_mix"]
        rt = r["right_type_share_by_gold"]
        print(
            f"| {r['engine']} | {r['split']} | {r['decoding']} | {r['exact_match']:.1%} | "
            f"{r['type_accuracy']:.1%} | {mix['click']:.0%} / {mix['type_and_submit']:.0%} / "
            f"{mix['terminate']:.0%} | {rt.get('click', 0):.0%} / {rt.get('type_and_submit', 0):.0%}"
            f" / {rt.get('terminate', 0):.0%} | {r['groups_zero_reward_std']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
