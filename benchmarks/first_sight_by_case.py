"""Score every held-out batch again, case by case, on the commit it was first scored on.

    python benchmarks/first_sight_by_case.py [--batches 8 8b ...] [--update] [--out FILE]

The README quotes each held-out batch's first-sight figure as a count. This re-creates the
case-by-case outcome behind each count: the batch's commit is checked out beside this one
(`git worktree add --detach`), this checkout's logscan_corpus.py is copied in (it reads
older commits' scanners as well, see its `_report_causes`), and each log is read as
`shop-r1 report --log` read it on that commit (the log alone, as first sight was scored).
The result (`benchmarks/results/logscan_first_sight_by_case.json`) is what a new lever is
measured against: which causes first sight missed, and what the report said instead.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "logscan_first_sight_by_case.json"

# The commit each batch was first scored on, as the README's held-out table gives it.
FIRST_SIGHT = {
    "8": "5e7fe1c", "8b": "6b9d8a1", "9": "bf1ac07", "10": "eddb61d", "10b": "eddb61d",
    "11": "15bd057", "12": "8630732", "13": "739d365", "14": "06e72b1", "16": "2c6dfcd",
    "17": "f05a114", "18": "916fef2", "18b": "9191af2", "19": "2bf3ebf", "20": "7c79ea5",
    "21": "e4a2220", "21b": "e4a2220", "22": "7eb7243", "22b": "7eb7243", "23": "3c1c931",
    "23b": "9db30a9", "24": "063cfc8", "24b": "063cfc8", "25": "18383ec", "25b": "18383ec",
    "25c": "06c480d", "26": "3b907ad", "26b": "3b907ad", "26c": "b5d59b1", "27": "f6f7bfe",
    "27b": "15d1e65", "27c": "a045601", "28": "6dd1cbd", "28b": "6dd1cbd", "28c": "6dd1cbd", "29": "906f7bf", "29b": "6dd1cbd",
    "29c": "906f7bf", "30": "f110cf9", "30b": "f110cf9", "30c": "2411546", "31": "f110cf9",
    "31b": "e2c47ff", "31c": "b036606", "32": "08e3e97", "32b": "08e3e97", "32c": "08e3e97",
    "33": "cde26bd", "33b": "58550d7", "33c": "58550d7", "34": "f110e55", "34b": "f110e55", "34c": "f110e55",
    "35": "8ff21d7", "35b": "8ff21d7", "35c": "8ff21d7", "36": "8ff21d7", "36b": "8ff21d7", "36c": "8ff21d7",
    "37": "215461f", "37b": "215461f", "37c": "215461f", "38": "6c73aa8", "38b": "6c73aa8", "38c": "6c73aa8",
    "39": "a5d5a0d", "39b": "a5d5a0d", "39c": "6d17581", "40": "b6228b0", "40b": "e89a6e3", "40c": "95f9428", "41": "95b5f0f", "41b": "95b5f0f",
}  # fmt: skip

# Runs inside the old checkout: the batch's cases through this checkout's scorer.
_SCORE = """
import json, sys
import yaml
sys.path.insert(0, ".")
import lc_now
doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
cases = [
    lc_now.Case(family=doc["family"], **{k: tuple(c[k]) if k == "expected" else c[k] for k in lc_now._FIELDS})
    for c in doc["cases"]
]
out = [
    {"id": o.case.id, "source": o.case.source, "expected": list(o.case.expected),
     "named": list(o.recognised), "severities": list(o.severities), "hit": o.hit, "lead_ok": o.lead_ok}
    for o in lc_now.evaluate(cases, log_only=True).outcomes
]
print(json.dumps(out))
"""


def score_batch(batch: str, commit: str, tmp: Path) -> list[dict]:
    tree = tmp / commit
    if not tree.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), commit],
            check=True,
        )
    shutil.copy(ROOT / "benchmarks" / "logscan_corpus.py", tree / "lc_now.py")
    (tree / "score_batch.py").write_text(_SCORE, encoding="utf-8")
    batch_file = RESULTS / f"logscan_heldout_batch{batch}.yaml"
    done = subprocess.run(
        [sys.executable, "score_batch.py", str(batch_file)],
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"batch {batch} on {commit}: {done.stderr.strip().splitlines()[-1]}")
    cases = json.loads(done.stdout)
    known = codes_at(commit)
    for case in cases:  # could the report have named it: was its code defined then?
        case["code_existed"] = any(code in known for code in case["expected"])
    return cases


def codes_at(commit: str) -> set[str]:
    """The codes knowledge/codes.yaml defined at `commit`."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:shop_r1_doctor/knowledge/codes.yaml"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return set(re.findall(r"^  ([A-Z0-9_]+):", text, re.M))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", nargs="*", default=list(FIRST_SIGHT))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--update",
        action="store_true",
        help="keep the other batches of --out as they are: score only --batches (a new batch)",
    )
    args = parser.parse_args(argv)
    unknown = [b for b in args.batches if b not in FIRST_SIGHT]
    if unknown:
        print(f"--batches: no first-sight commit known for {', '.join(unknown)}", file=sys.stderr)
        return 2
    result: dict[str, dict] = {}
    if args.update and args.out.exists():
        kept = json.loads(args.out.read_text(encoding="utf-8"))["batches"]
        result = {b: kept[b] for b in FIRST_SIGHT if b in kept and b not in args.batches}
    try:
        with tempfile.TemporaryDirectory(prefix="first_sight_") as tmp:
            for batch in args.batches:
                cases = score_batch(batch, FIRST_SIGHT[batch], Path(tmp))
                result[batch] = {"commit": FIRST_SIGHT[batch], "cases": cases}
                pos = [c for c in cases if c["expected"]]
                hits = sum(c["hit"] for c in pos)
                print(f"batch {batch:>4} on {FIRST_SIGHT[batch]}: {hits}/{len(pos)}")
    finally:  # the checkouts' folders are gone: forget them
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False)
    result = {b: result[b] for b in FIRST_SIGHT if b in result}  # in the table's order
    doc = {"schema": "shop-r1.first-sight-by-case/1", "batches": result}
    pos = [c for b in result.values() for c in b["cases"] if c["expected"]]
    named = sum(c["hit"] for c in pos)
    coded = sum(c["code_existed"] for c in pos)
    print(
        f"all: {named}/{len(pos)} named at first sight; {coded}/{len(pos)} had a code then "
        f"(the most a reader of the known codes could have named)"
    )
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
