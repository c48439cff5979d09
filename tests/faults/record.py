"""Cause every fault case for real and write what it printed to tests/fixtures/faults/.

    python -m tests.faults.record              # every case this machine can cause
    python -m tests.faults.record hub shm/dataloader_workers   # families or family/case

Needs root on Linux for the tmpfs, memory-cgroup and network-namespace cases; a case
this machine cannot cause is listed and left as recorded.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .case import FIXTURES, Unavailable, metadata, missing_requirement, run_case
from .suite import FAMILIES, FIRST_SIGHT_PENDING, all_cases

REPO = Path(__file__).resolve().parents[2]


def portable(text: str) -> str:
    """The recording without this machine's paths: the environment as `<venv>`, the
    checkout as `.` (tracebacks name both; the diagnosis reads the messages)."""
    return text.replace(sys.prefix, "<venv>").replace(f"{REPO}/", "").replace(str(REPO), ".")


def main(argv: list[str]) -> int:
    everything = all_cases((*FAMILIES, *FIRST_SIGHT_PENDING))
    chosen = [c for c in everything if not argv or c.family in argv or c.id in argv]
    if not chosen:
        print(f"no case matches {argv}", file=sys.stderr)
        return 2
    for case in chosen:
        why = missing_requirement(case)
        if why:
            print(f"skip {case.id}: {why}")
            continue
        started = time.monotonic()
        try:
            captured = run_case(case)
        except Unavailable as exc:
            print(f"skip {case.id}: {exc}")
            continue
        out = FIXTURES / case.family
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{case.name}.log").write_text(portable(captured.output), encoding="utf-8")
        meta = json.dumps(metadata(captured), indent=2, sort_keys=False) + "\n"
        (out / f"{case.name}.json").write_text(portable(meta), encoding="utf-8")
        print(f"{case.id}: exit {captured.exit_code}, {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
