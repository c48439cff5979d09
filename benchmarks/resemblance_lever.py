"""Would naming the cause of the most similar labelled log have helped first sight?

    python benchmarks/resemblance_lever.py [--k 5] [--thresholds 0.3 0.4 0.5 0.6] [--json]

A lever measured, not shipped. For each held-out batch, in the order the batches were
collected, an index is built from the real-log corpus (tests/fixtures/real_logs) less the
cases of that batch and of every later one: what the project had labelled when the batch
was first read. Each of the batch's logs is compared with the index (TF-IDF over the words
of its failing lines and its last lines, cosine similarity), and its k nearest labelled
logs above a threshold vote for a code (a user bug's log votes for "no environment cause").
That vote is set against the case's first-sight outcome
(benchmarks/results/logscan_first_sight_by_case.json, from first_sight_by_case.py):

- gain: first-sight misses whose expected code the vote names;
- wrong: first-sight misses where it names another code;
- claims on user bugs: negatives with no first-sight claim where it names a code;
- of the misses, how many had a code with earlier labelled examples (known cause, new
  form) and how many had no claim at all.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from first_sight_by_case import FIRST_SIGHT, OUT, RESULTS  # noqa: E402
from logscan_corpus import load_corpus  # noqa: E402

# Codes renamed after a batch was collected (the batch files keep the name as collected).
RENAMED = {
    "WIN_TORCH_DLL_INIT_FAILED": "WIN_DLL_LOAD_FAILED",
    "TORCH_NO_WHEEL_FOR_PLATFORM": "NO_RELEASE_FOR_THIS_PLATFORM",
    "GIT_LFS_POINTER_AS_WEIGHTS": "CHECKPOINT_NOT_WEIGHTS",
    "TOKENIZERS_TOO_OLD_FOR_TOKENIZER_JSON": "TOKENIZERS_TOO_OLD_FOR_FILE",
    "PACKAGE_TOO_OLD_FOR_API": "PACKAGE_VERSION_SKEW",
    "FLASH_ATTN_TOO_OLD_FOR_FEATURE": "FA_TOO_OLD_FOR_FEATURE",
    "CONTAINER_TOOLKIT_TOO_OLD_FOR_WSL_DRIVER": "NVIDIA_CONTAINER_TOOLKIT_TOO_OLD",
    "DATASET_FILE_CORRUPT": "DATASET_FILE_TRUNCATED",
}
FAILING = re.compile(
    r"error|exception|fail|killed|cannot|can't|unable|refused|not found|no such|no module|"
    r"denied|invalid|unsupported|not supported|timed? ?out|abort|fatal|traceback|warning|oom|"
    r"out of memory|segmentation|signal|exit",
    re.I,
)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "this",
        "that",
        "not",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "you",
        "your",
        "can",
        "will",
        "been",
        "but",
        "all",
        "any",
        "its",
        "into",
        "use",
        "using",
        "used",
        "file",
        "line",
        "self",
        "return",
        "none",
        "true",
        "false",
        "def",
        "import",
    ]
)


def words(log: str) -> list[str]:
    lines = log.splitlines()
    out: list[str] = []
    for line in [x for x in lines if FAILING.search(x)] + lines[-15:]:
        for w in WORD.findall(line):
            w = w.lower()
            if len(w) < 3 or w in STOP or re.fullmatch(r"[0-9a-f_]+", w):
                continue
            out.append(w)
            if "." in w:
                out.extend(p for p in w.split(".") if len(p) > 2)
    return out


class Index:
    def __init__(self, docs: list[tuple[str, tuple[str, ...]]]) -> None:
        bags = [(words(log), expected) for log, expected in docs]
        df = Counter(w for bag, _ in bags for w in set(bag))
        n = len(bags)
        self.idf = {w: math.log((n + 1) / (c + 1)) + 1 for w, c in df.items()}
        self.rows = [(self.vector(bag), expected) for bag, expected in bags]

    def vector(self, bag: list[str]) -> dict[str, float]:
        tf = Counter(bag)
        v = {w: (1 + math.log(c)) * self.idf.get(w, 0.0) for w, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        return {w: x / norm for w, x in v.items()}

    def vote(self, log: str, k: int, threshold: float) -> str | None:
        """The code the k nearest labelled logs above `threshold` vote for; "" for a user
        bug; None when none is that close."""
        q = self.vector(words(log))
        near = sorted(
            ((sum(q.get(w, 0.0) * x for w, x in v.items()), e) for v, e in self.rows),
            key=lambda r: r[0],
            reverse=True,
        )[:k]
        votes: Counter[str] = Counter()
        for sim, expected in near:
            if sim >= threshold:
                votes[expected[0] if expected else ""] += sim
        return votes.most_common(1)[0][0] if votes else None


def measure(k: int, thresholds: list[float]) -> dict:
    first = json.loads(OUT.read_text(encoding="utf-8"))["batches"]
    corpus = load_corpus()
    batches = [b for b in FIRST_SIGHT if b in first]
    collected: dict[str, int] = {}  # thread -> position of the batch that first held it
    cases: dict[str, list[dict]] = {}
    for pos, b in enumerate(batches):
        doc = yaml.safe_load((RESULTS / f"logscan_heldout_batch{b}.yaml").read_text("utf-8"))
        cases[b] = doc["cases"]
        for c in doc["cases"]:
            collected.setdefault(c["source"], pos)
    totals = {t: Counter() for t in thresholds}
    misses = Counter()
    for pos, b in enumerate(batches):
        earlier = [c for c in corpus if collected.get(c.source, -1) < pos]
        index = Index([(c.log, c.expected) for c in earlier])
        seen = Counter(code for c in earlier for code in c.expected)
        outcome = {c["source"]: c for c in first[b]["cases"]}
        for case in cases[b]:
            o = outcome[case["source"]]
            expected = [RENAMED.get(e, e) for e in case["expected"]]
            if expected and not o["hit"]:
                misses["misses"] += 1
                misses["with_no_claim"] += not o["named"]
                misses["code_had_examples"] += max(seen[e] for e in expected) > 0
            for t in thresholds:
                code = index.vote(case["log"], k, t) or ""
                row = totals[t]
                if expected:
                    row["positives"] += 1
                    row["first_sight"] += o["hit"]
                    if not o["hit"] and code:
                        row["gain" if code in expected else "wrong"] += 1
                else:
                    row["negatives"] += 1
                    row["first_sight_claims"] += bool(o["named"])
                    row["claims_on_user_bugs"] += bool(code) and not o["named"]
    return {
        "k": k,
        "misses": dict(misses),
        "by_threshold": {str(t): dict(r) for t, r in totals.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.k, args.thresholds)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    m = result["misses"]
    print(f"first-sight misses: {m['misses']}; no claim at all: {m['with_no_claim']}; "
          f"code with earlier labelled examples: {m['code_had_examples']}")  # fmt: skip
    print("threshold  first sight  +gain  wrong  with the vote   claims on user bugs")
    for t, r in result["by_threshold"].items():
        pos, fs, gain = r["positives"], r["first_sight"], r.get("gain", 0)
        claims = r.get("first_sight_claims", 0) + r.get("claims_on_user_bugs", 0)
        print(
            f"{t:>9}  {fs:>4}/{pos:<6} {gain:>5}  {r.get('wrong', 0):>5}  "
            f"{(fs + gain) / pos:>12.1%}   {claims}/{r['negatives']} "
            f"(first sight {r.get('first_sight_claims', 0)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
