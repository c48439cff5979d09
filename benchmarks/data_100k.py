"""Time and peak memory of `shop-r1 data synth / validate / stats` on 100k sessions.

    python benchmarks/data_100k.py [--sessions 100000] [--baseline DIR] [--json]

Each command runs in its own process (`python -m shop_r1_doctor.cli.main ...`) with
PYTHONPATH set to the tree under test; wall time comes from the clock and peak memory
from the child's max RSS (`os.wait4`). With `--baseline DIR` (a checkout of an older
commit, e.g. `git archive <commit> | tar -x -C DIR`) the same commands run on that tree
first, side by side, and the ratios are printed. The load average is printed too:
timings taken on a busy machine are not comparable to an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def run(tree: Path, args: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, exit status) of one CLI call on `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "shop_r1_doctor.cli.main", *args]
    start = time.perf_counter()
    # cwd=tree: `python -m` puts the working directory first on sys.path, ahead of PYTHONPATH
    proc = subprocess.Popen(
        cmd, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{' '.join(args)} on {tree} failed ({code}): {err[-500:]}")
    return seconds, usage.ru_maxrss / 1024, code


def measure(tree: Path, sessions: int, work: Path) -> dict[str, dict[str, float]]:
    data = work / f"{tree.name}-sessions.jsonl"
    out = {}
    for step, args in (
        ("synth", ["data", "synth", "--sessions", str(sessions), "-o", str(data)]),
        ("validate", ["data", "validate", str(data)]),
        ("stats", ["data", "stats", str(data), "--json"]),
    ):
        seconds, mib, _ = run(tree, args)
        out[step] = {"seconds": round(seconds, 2), "peak_mib": round(mib, 1)}
        print(f"  {tree.name:>12} {step:<9} {seconds:7.1f} s  {mib:8.1f} MiB", flush=True)
    data.unlink()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--baseline", type=Path, help="An older checkout to compare with.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            results["baseline"] = measure(args.baseline.resolve(), args.sessions, Path(tmp))
        results["current"] = measure(HERE, args.sessions, Path(tmp))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.baseline:
        for step in ("synth", "validate", "stats"):
            b, c = results["baseline"][step], results["current"][step]
            print(
                f"{step:<9} time {c['seconds'] / b['seconds']:.2f}x  "
                f"peak memory {c['peak_mib'] / b['peak_mib']:.2f}x (current / baseline)"
            )
    if args.json:
        print(json.dumps({"sessions": args.sessions, **results}, indent=2))


if __name__ == "__main__":
    main()
