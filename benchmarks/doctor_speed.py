"""How fast is `shop-r1 doctor`, measured side by side with what it replaces.

    python benchmarks/doctor_speed.py [--repeat 5] [--json]

Runs, round-robin on this machine with this interpreter: `shop-r1 doctor` with a cold
and a warm torch-facts cache, `shop-r1 doctor --fast`, `shop-r1 --help`,
`python -m torch.utils.collect_env` and `python -c "import torch"`; prints the median
wall time of each and the ratios the project targets:

    doctor (cold) / collect_env   <= 0.8
    doctor (cold) / import torch  <= 1.3
    doctor --fast                 <  1 s
    shop-r1 --help                <  0.5 s
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def shop_r1() -> list[str]:
    """The console script next to this interpreter, else the module (same code)."""
    script = Path(sys.executable).with_name("shop-r1")
    if script.exists():
        return [str(script)]
    found = shutil.which("shop-r1")
    return [found] if found else [sys.executable, "-m", "shop_r1.cli"]


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    seconds = time.perf_counter() - start
    # Exit 1 = the doctor found errors: a normal outcome. 2 and up = the command failed.
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr[-500:]}")
    return seconds


def _where() -> str:
    """Which interpreter, without this machine's paths (results are committed and pasted)."""
    return "a virtual environment" if sys.prefix != sys.base_prefix else "the system Python"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()

    tool = shop_r1()
    base = dict(os.environ)
    warm_cache = tempfile.mkdtemp(prefix="shop-r1-bench-warm-")
    cases: dict[str, tuple[list[str], bool]] = {
        # name: (argv, needs a fresh cache dir each run)
        "shop-r1 doctor (cold cache)": ([*tool, "doctor"], True),
        "shop-r1 doctor (warm cache)": ([*tool, "doctor"], False),
        "shop-r1 doctor --fast": ([*tool, "doctor", "--fast"], True),
        "shop-r1 --help": ([*tool, "--help"], False),
        "python -m torch.utils.collect_env": (
            [sys.executable, "-m", "torch.utils.collect_env"],
            False,
        ),
        'python -c "import torch"': ([sys.executable, "-c", "import torch"], False),
    }
    timed([*tool, "doctor"], {**base, "SHOP_R1_CACHE_DIR": warm_cache})  # prime the warm cache
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, (argv, cold) in cases.items():
            cache = tempfile.mkdtemp(prefix="shop-r1-bench-cold-") if cold else warm_cache
            times[name].append(timed(argv, {**base, "SHOP_R1_CACHE_DIR": cache}))
            if cold:
                shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(warm_cache, ignore_errors=True)

    med = {name: statistics.median(values) for name, values in times.items()}
    cold, warm = med["shop-r1 doctor (cold cache)"], med["shop-r1 doctor (warm cache)"]
    collect_env, import_torch = (
        med["python -m torch.utils.collect_env"],
        med['python -c "import torch"'],
    )
    targets = [
        ("doctor (cold) / collect_env", cold / collect_env, "<= 0.8", cold / collect_env <= 0.8),
        ("doctor (cold) / import torch", cold / import_torch, "<= 1.3", cold / import_torch <= 1.3),
        ("doctor (warm) / import torch", warm / import_torch, "(info)", None),
        (
            "doctor --fast (s)",
            med["shop-r1 doctor --fast"],
            "< 1 s",
            med["shop-r1 doctor --fast"] < 1.0,
        ),
        ("shop-r1 --help (s)", med["shop-r1 --help"], "< 0.5 s", med["shop-r1 --help"] < 0.5),
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "repeat": args.repeat,
                    "median_s": med,
                    "runs_s": times,
                    "targets": {n: {"value": v, "target": t, "ok": ok} for n, v, t, ok in targets},
                },
                indent=2,
            )
        )
        return
    print(f"python {sys.version.split()[0]} ({_where()}); median of {args.repeat} runs each\n")
    print(f"| {'command':<36} | median s |  min s |  max s |")
    print(f"|{'-' * 38}|---------:|-------:|-------:|")
    for name, values in times.items():
        print(f"| {name:<36} | {med[name]:8.2f} | {min(values):6.2f} | {max(values):6.2f} |")
    print(f"\n| {'ratio / time':<30} |  value | target  | ok   |")
    print(f"|{'-' * 32}|-------:|---------|------|")
    for name, value, target, ok in targets:
        mark = "" if ok is None else ("yes" if ok else "NO")
        print(f"| {name:<30} | {value:6.2f} | {target:<7} | {mark:<4} |")


if __name__ == "__main__":
    main()
