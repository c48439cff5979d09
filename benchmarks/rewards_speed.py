"""Reward throughput on one core for paper-sized outputs (issue 4: >= 50,000 completions/s).

Every completion is distinct (no cache hits across the timed set), about 150-250
characters like the paper's outputs; the gold mix is 60% click / 25% type_and_submit /
15% terminate. Timed: the four TRL reward functions called on batches of 64, the way
GRPOTrainer calls them. Side by side: the same ROUGE-L with a naive pure-Python LCS.

    python benchmarks/rewards_speed.py [--n 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

from shop_r1 import rewards, rouge
from shop_r1.actions import Action


def make_data(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = [
        "trail",
        "running",
        "shoes",
        "waterproof",
        "black",
        "size",
        "ten",
        "men",
        "women",
        "budget",
        "coffee",
        "maker",
        "steel",
    ]
    completions, golds = [], []
    for i in range(n):
        roll = rng.random()
        rationale = f"I want {' '.join(rng.choices(words, k=rng.randint(6, 14)))} item {i}."
        if roll < 0.6:
            gold = Action("click", f"result_{rng.randint(1, 9)}_title")
            pred = {"type": "click", "name": f"result_{rng.randint(1, 9)}_title"}
        elif roll < 0.85:
            gold = Action("type_and_submit", "search_input", " ".join(rng.choices(words, k=4)))
            pred = {
                "type": "type_and_submit",
                "name": "search_input",
                "text": " ".join(rng.choices(words, k=rng.randint(2, 6))),
            }
        else:
            gold = Action("terminate")
            pred = {
                "type": rng.choice(["terminate", "click"]),
                **({} if roll < 0.95 else {"name": "x"}),
            }
            if pred["type"] == "click":
                pred["name"] = "buy_now"
        completions.append(json.dumps({"rationale": rationale, "action": pred}))
        golds.append(json.dumps(gold.to_json()))
    return completions, golds


def naive_lcs(a, b) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def run(n: int, batch: int = 64) -> float:
    completions, golds = make_data(n)
    funcs = rewards.build_reward_funcs()
    start = time.perf_counter()
    for i in range(0, n, batch):
        c, g = completions[i : i + batch], golds[i : i + batch]
        for f in funcs:
            f(c, gold_action=g)
    return n / (time.perf_counter() - start)


def clear_caches() -> None:
    from shop_r1.parser import parse_cached

    for fn in (parse_cached, rewards._scorer, rewards._gold_from_str, rouge.tokens):
        fn.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    clear_caches()
    fast = run(args.n)
    real_lcs = rouge.lcs_length
    rouge.lcs_length = naive_lcs  # type: ignore[assignment]
    clear_caches()
    try:
        slow = run(args.n)
    finally:
        rouge.lcs_length = real_lcs
    print(
        f"rewards (format+type+attribute+value, TRL batches of 64), {args.n:,} distinct completions, one core"
    )
    print(f"  rapidfuzz LCS : {fast:>10,.0f} completions/s")
    print(f"  pure-Python LCS: {slow:>10,.0f} completions/s   (rapidfuzz {fast / slow:.2f}x)")
    print(f"  target >= 50,000/s: {'PASS' if fast >= 50_000 else 'FAIL'}")


if __name__ == "__main__":
    main()
