"""How many first-sight misses carry a message the stack's own sources print?

    python benchmarks/source_message_lever.py [--json]

A lever measured, not a product feature: if readings were written for every message the
kept framework sources hold (knowledge/framework_messages/: the raise, warn and log sites
of 20 packages, about 12,000 messages), how many of the causes first sight missed could
they have reached? Each held-out log is searched for any message (whole, or its first part
up to a placeholder: FrameworkMessage.heads); Python's own `Traceback (most recent call
last):`, which NumPy's message quotes, is left out. The per-case first-sight outcomes come
from benchmarks/results/logscan_first_sight_by_case.json (first_sight_by_case.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from first_sight_by_case import OUT, RESULTS  # noqa: E402

from shop_r1_doctor.framework_messages import kept_versions, load_messages  # noqa: E402

TRACEBACK = "Traceback (most recent call last):"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    heads = [
        (head, message)
        for package, version in kept_versions().items()
        for message in load_messages(package, version)
        for head in message.heads
        if not head.fullmatch(TRACEBACK)
    ]
    first = json.loads(OUT.read_text(encoding="utf-8"))["batches"]
    counts = {"hits": 0, "hits_with_a_message": 0, "misses": 0, "misses_with_a_message": 0}
    reached: list[dict[str, str]] = []
    for batch, outcome in first.items():
        doc = yaml.safe_load((RESULTS / f"logscan_heldout_batch{batch}.yaml").read_text("utf-8"))
        logs = {c["source"]: c["log"] for c in doc["cases"]}
        for case in outcome["cases"]:
            if not case["expected"]:
                continue
            kind = "hits" if case["hit"] else "misses"
            counts[kind] += 1
            found = next((m for h, m in heads if h.search(logs[case["source"]])), None)
            if found is not None:
                counts[f"{kind}_with_a_message"] += 1
                if not case["hit"]:
                    reached.append(
                        {
                            "batch": batch,
                            "id": case["id"],
                            "message": found.package + ": " + found.text[:80],
                        }
                    )
    result = {"messages": len({id(m) for _, m in heads}), **counts, "misses_reached": reached}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(
        f"first-sight misses with a kept source message in their log: "
        f"{counts['misses_with_a_message']}/{counts['misses']}; "
        f"hits with one: {counts['hits_with_a_message']}/{counts['hits']}"
    )
    for r in reached:
        print(f"  {r['batch']:>4} {r['id']}: {r['message']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
