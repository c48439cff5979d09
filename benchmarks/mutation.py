"""Mutation score per module that decides results (mutmut 3, bounded time, 2 cores).

For each module below, a scratch copy of the repository gets a `[tool.mutmut]` table that
mutates only that module and runs only the tests that exercise it, so one module's run
takes seconds to minutes instead of the whole suite per mutant. mutmut then maps each
mutated function to the tests that call it and runs those per mutant.

    python benchmarks/mutation.py                    # every module, 2 workers
    python benchmarks/mutation.py rewards parser     # some modules
    python benchmarks/mutation.py --list             # the module table
    python benchmarks/mutation.py --show rewards     # surviving mutants as diffs

Score = killed / (mutants - equivalent). Timeouts count as killed (the mutant made the
tests hang, which CI would notice); "no tests" and "survived" count as not killed.
Equivalent mutants (no behaviour change) are listed with their reason in
docs/testing.md; this script reads their names from there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT_DOC = ROOT / "docs" / "testing.md"
# One file per module's equivalent mutants (docs/mutants/<module>.md), so work on two
# modules never edits the same table.
EQUIVALENT_DIR = ROOT / "docs" / "mutants"
GOAL = 0.85


@dataclass(frozen=True)
class Module:
    name: str
    sources: tuple[str, ...]
    tests: tuple[str, ...]


# Modules that decide results, heaviest first, with the tests that exercise them.
MODULES: tuple[Module, ...] = (
    Module(
        "rewards",
        ("shop_r1/rewards.py",),
        ("tests/shop_r1/test_rewards.py", "tests/shop_r1/test_rewards_decisions.py"),
    ),
    Module(
        "parser",
        ("shop_r1/parser.py",),
        ("tests/shop_r1/test_parser.py", "tests/shop_r1/test_rewards_decisions.py"),
    ),
    Module(
        "metrics",
        ("shop_r1/metrics.py",),
        ("tests/shop_r1/test_score.py", "tests/shop_r1/test_rewards_decisions.py"),
    ),
    Module(
        "rouge",
        ("shop_r1/rouge.py",),
        (
            "tests/shop_r1/test_rewards.py",
            "tests/shop_r1/test_parser.py",
            "tests/shop_r1/test_rewards_decisions.py",
        ),
    ),
    Module(
        "config",
        ("shop_r1/config.py",),
        (
            "tests/shop_r1/test_config.py",
            "tests/shop_r1/test_config_table.py",
            "tests/shop_r1/test_autoconfig_batch.py",
            "tests/shop_r1/test_config_keys.py",
        ),
    ),
    Module(
        "autoconfig",
        ("shop_r1/autoconfig.py",),
        # the decision rows first: they kill most mutants in milliseconds
        (
            "tests/shop_r1/test_autoconfig_rows.py",
            "tests/shop_r1/test_autoconfig_rows_batch.py",
            "tests/shop_r1/test_autoconfig_rows_grpo.py",
            "tests/shop_r1/test_autoconfig.py",
            "tests/shop_r1/test_autoconfig_batch.py",
        ),
    ),
    Module(
        "memory",
        ("shop_r1_doctor/memory.py",),
        (
            "tests/shop_r1_doctor/test_memory.py",
            "tests/shop_r1_doctor/test_memory_shapes.py",
            "tests/shop_r1_doctor/test_plan_fields.py",
            "tests/shop_r1_doctor/test_memory_table.py",
        ),
    ),
    # one entry per decision table of the doctor's checks (each is its own score)
    *(
        Module(
            f"checks-{name}",
            (f"shop_r1_doctor/checks/{name}.py",),
            (
                "tests/shop_r1_doctor/checks/test_checks_catalog.py",
                # the wording of every finding lives in its module's golden, not in the rows
                f"tests/shop_r1_doctor/checks/test_check_goldens.py::test_check_module_wording_matches_its_golden[{name}]",
                "tests/shop_r1_doctor/knowledge/test_knowledge_load.py",
                "tests/shop_r1_doctor/checks/test_gpu_driver_tables.py",
                "tests/shop_r1_doctor/test_plan_fields.py",
                "tests/shop_r1/test_autoconfig_batch.py",
                f"tests/shop_r1_doctor/checks/test_{name}_rows*.py",  # where any exist
            ),
        )
        for name in (
            "gpu_driver",
            "torch_build",
            "flash_attn",
            "vllm",
            "nccl",
            "packages",
            "platform",
            "plan",
            "plan_memory",
            "probes",
            "ray",
        )
    ),
    Module(
        "profile-match",
        ("shop_r1_doctor/profiles/match.py",),
        (
            "tests/shop_r1_doctor/profiles/test_match.py",
            "tests/shop_r1_doctor/profiles/test_match_table.py",
        ),
    ),
    Module(
        "isolate",
        ("shop_r1_doctor/isolate.py",),
        (
            "tests/shop_r1_doctor/probes/test_collect_faults.py",
            "tests/shop_r1_doctor/test_isolate.py",
        ),
    ),
    Module(
        "logscan",
        ("shop_r1_doctor/logscan.py",),
        (
            "tests/shop_r1_doctor/test_logscan.py",
            "tests/shop_r1_doctor/test_logscan_table.py",
            "tests/shop_r1_doctor/test_logscan_real_logs.py",
            "tests/shop_r1_doctor/test_logscan_rows.py",
        ),
    ),
    Module(
        "redact",
        ("shop_r1_doctor/redact.py",),
        ("tests/shop_r1_doctor/test_redact.py", "tests/shop_r1_doctor/test_redact_rows.py"),
    ),
)

# What mutmut's exit-code verdicts count as.
KILLED = {"killed", "timeout", "caught by type check", "segfault"}


def equivalent_names(doc: Path | None = None) -> set[str]:
    """Mutant names listed as equivalent (`` `name` `` in a table row) in docs/testing.md
    and docs/mutants/*.md, and those under testing.md's "import time" heading (see
    `import_time_names`)."""
    docs = [doc] if doc else [EQUIVALENT_DOC, *sorted(EQUIVALENT_DIR.glob("*.md"))]
    names: set[str] = set()
    for path in docs:
        if path.exists():
            names |= set(re.findall(r"^\| `([\wǁ.]+__mutmut_\d+)`", path.read_text(), flags=re.M))
    return names


def import_time_names(doc: Path = EQUIVALENT_DOC) -> set[str]:
    """Mutants of code that runs only while a module is imported (a dataclass field's
    factory): mutmut switches a mutant on after the import, so no test can see it. They
    are left out of the score like equivalent ones but counted apart."""
    if not doc.exists():
        return set()
    text = doc.read_text()
    start = text.find("### Run only at import time")
    if start < 0:
        return set()
    end = text.find("\n#", start + 1)
    section = text[start : end if end > 0 else len(text)]
    return set(re.findall(r"^\| `([\wǁ.]+__mutmut_\d+)`", section, flags=re.M))


def _copy_tree(dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in tracked:
        src = ROOT / rel
        if not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def _mutmut_table(module: Module) -> str:
    def arr(items: tuple[str, ...] | list[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    # a path, a glob for a check's row files (none, one or several may exist), or one
    # test's node id (`file::test[param]`), kept as given
    tests = [
        t if "::" in t else str(p.relative_to(ROOT))
        for t in module.tests
        for p in ([ROOT / t.partition("::")[0]] if "::" in t else sorted(ROOT.glob(t)))
    ]
    return (
        "\n[tool.mutmut]\n"
        f"source_paths = {arr(['shop_r1', 'shop_r1_doctor'])}\n"
        f"only_mutate = {arr(module.sources)}\n"
        f"pytest_add_cli_args_test_selection = {arr(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:warnings", "-p", "no:cacheprovider", "-x"]\n'
        'also_copy = ["profiles", "docs", "README.md", "scripts", "dockerfiles", "benchmarks"]\n'
        "use_git_change_detection = false\n"
        "timeout_multiplier = 5.0\n"
        "timeout_constant = 5.0\n"
    )


def run_module(module: Module, workdir: Path, workers: int, limit_s: int) -> dict:
    dest = workdir / module.name
    _copy_tree(dest)
    pyproject = dest / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + _mutmut_table(module))
    # Exists before mutmut starts: a sys.path entry for a missing folder is cached as
    # "nothing here" and the editable install of the main checkout would be imported.
    (dest / "mutants").mkdir()
    env = dict(os.environ)
    # Subprocesses the tests start must import the mutated copy, not this checkout.
    env["PYTHONPATH"] = str(dest / "mutants")
    env.pop("CI", None)
    start = time.monotonic()
    log = dest / "mutmut.log"
    with log.open("w") as out:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "mutmut", "run", "--max-children", str(workers)],
                cwd=dest,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=limit_s,
            )
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
    seconds = time.monotonic() - start
    return {"module": module.name, "rc": rc, "seconds": seconds, **collect(module, dest)}


def collect(module: Module, dest: Path) -> dict:
    """Read mutmut's per-file verdicts for the module's sources."""
    from mutmut.stats import status_by_exit_code

    counts: dict[str, int] = {}
    survivors: list[str] = []
    equivalent = equivalent_names()
    import_time = import_time_names()
    skipped_equivalent = skipped_import = 0
    for src in module.sources:
        meta = dest / "mutants" / (src + ".meta")
        if not meta.exists():
            continue
        data = json.loads(meta.read_text())
        for name, code in sorted(data.get("exit_code_by_key", {}).items()):
            status = status_by_exit_code[code]
            if name in import_time:
                skipped_import += 1
                continue
            if name in equivalent:
                skipped_equivalent += 1
                continue
            counts[status] = counts.get(status, 0) + 1
            if status not in KILLED:
                survivors.append(f"{name} ({status})")
    total = sum(counts.values())
    killed = sum(n for s, n in counts.items() if s in KILLED)
    return {
        "total": total,
        "killed": killed,
        "equivalent": skipped_equivalent,
        "import_time": skipped_import,
        "counts": counts,
        "score": killed / total if total else None,
        "survivors": survivors,
    }


def show(module: Module, workdir: Path) -> None:
    dest = workdir / module.name
    for name in collect(module, dest)["survivors"]:
        mutant = name.split(" ")[0]
        diff = subprocess.run(
            [sys.executable, "-m", "mutmut", "show", mutant],
            cwd=dest,
            capture_output=True,
            text=True,
        ).stdout
        print(f"## {name}\n{diff}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("modules", nargs="*", help="module names (default: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=900, help="seconds per module (default 900)")
    ap.add_argument(
        "--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "shop-r1-mutation"
    )
    ap.add_argument("--list", action="store_true", help="print the module table and exit")
    ap.add_argument("--show", action="store_true", help="print surviving mutants of the last run")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    args = ap.parse_args()

    by_name = {m.name: m for m in MODULES}
    unknown = [n for n in args.modules if n not in by_name]
    if unknown:
        print(
            f"error: unknown module(s) {', '.join(unknown)}; known: {', '.join(by_name)}",
            file=sys.stderr,
        )
        return 2
    selected = [by_name[n] for n in args.modules] if args.modules else list(MODULES)
    if args.list:
        for m in selected:
            print(f"{m.name:14} {' '.join(m.sources)}\n{'':14} tests: {' '.join(m.tests)}")
        return 0
    if args.show:
        for m in selected:
            show(m, args.workdir)
        return 0

    results = []
    print(
        f"{'module':14} {'mutants':>8} {'killed':>7} {'equiv':>6} {'score':>7} {'time':>7}  notes"
    )
    for module in selected:
        r = run_module(module, args.workdir, args.workers, args.limit)
        results.append(r)
        score = "-" if r["score"] is None else f"{100 * r['score']:.1f}%"
        note = (
            ""
            if r["rc"] == 0
            else ("TIMED OUT (partial)" if r["rc"] is None else f"mutmut rc={r['rc']}")
        )
        other = ", ".join(f"{n} {s}" for s, n in sorted(r["counts"].items()) if s not in KILLED)
        if r["import_time"]:
            other = f"{other}, {r['import_time']} import-time".lstrip(", ")
        print(
            f"{module.name:14} {r['total']:>8} {r['killed']:>7} {r['equivalent']:>6} {score:>7} "
            f"{r['seconds']:>6.0f}s  {other} {note}".rstrip(),
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    below = [r["module"] for r in results if r["score"] is not None and r["score"] < GOAL]
    if below:
        print(f"below the {GOAL:.0%} goal: {', '.join(below)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
