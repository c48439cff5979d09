"""Cause the GPU failures for real on an NVIDIA machine and record what each printed.

    python -m tests.faults.gpu_record --out DIR            # every case this machine can cause
    python -m tests.faults.gpu_record --out DIR cuda_oom   # some cases

Writes DIR/gpu/<case>.log (stdout + stderr as a terminal shows them) and DIR/gpu/<case>.json
(the CPU corpus's format: command, exit status, versions, expected codes); with --environment
also DIR/gpu/<case>.env.txt, what a reporter pastes beside the log (collect_env, nvidia-smi,
pip list, run in the case's environment once it has failed); copy DIR/gpu to
tests/fixtures/faults/gpu/ and tests/faults/test_gpu_recorded.py checks the diagnosis
names each one. Every case runs in its own process group under its own timeout (killed
whole when it hangs); cases needing two GPUs, vLLM or TRL are skipped with the reason
where the machine lacks them, and the run stops starting cases before BUDGET_S is spent.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .case import ROOT, versions
from .gpu_cases import CASES, FAMILY, GpuCase
from .record import portable

BUDGET_S = 405.0  # the whole run ends inside one 10-minute device call
HOLDER_WAIT_S = 30.0
SCRATCH = "/tmp/shop-r1-fault"  # how recordings name the case's work directory

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def gpu_count(run: Runner = subprocess.run) -> int:
    """GPUs `nvidia-smi -L` lists (0 without the tool or a driver)."""
    try:
        proc = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    if proc.returncode != 0:
        return 0
    return sum(1 for line in proc.stdout.splitlines() if line.startswith("GPU "))


def gpu_versions(run: Runner = subprocess.run) -> dict[str, str]:
    try:
        proc = run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    rows = [r.strip() for r in proc.stdout.splitlines() if r.strip()]
    if proc.returncode != 0 or not rows:
        return {}
    name, driver, memory = (part.strip() for part in [*rows[0].split(","), "", ""][:3])
    return {"gpu": f"{len(rows)} x {name} ({memory})", "nvidia_driver": driver}


def importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def skip_reason(
    case: GpuCase, gpus: int, can_import: Callable[[str], bool] = importable
) -> str | None:
    if gpus < case.min_gpus:
        return f"needs {case.min_gpus} GPUs, this machine has {gpus}"
    missing = [m for m in case.needs if not can_import(m)]
    if missing:
        return f"needs {', '.join(missing)} (not importable here)"
    if case.hide and not hidden_paths(case):
        return f"nothing here matches what it hides ({', '.join(case.hide)})"
    return None


def torch_site() -> str:
    """The site-packages directory holding torch (where the pip nvidia-* and triton
    packages sit beside it), found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return ""
    return str(Path(next(iter(spec.submodule_search_locations))).parent)


def hidden_paths(
    case: GpuCase, environ: Mapping[str, str] = os.environ, site: str | None = None
) -> list[tuple[bool, str]]:
    """What the case's `hide` globs match on this machine: (bind /dev/null over it, real
    path), each once."""
    site = torch_site() if site is None else site
    ldpath = [d for d in environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    found: dict[str, bool] = {}
    for entry in case.hide:
        null = entry.startswith("null:")
        pattern = entry.removeprefix("null:")
        if "{site}" in pattern and not site:
            continue
        patterns = [pattern.replace("{site}", site)]
        if "{ldpath}" in pattern:
            patterns = [p.replace("{ldpath}", d) for p in patterns for d in ldpath]
        for p in patterns:
            for match in sorted(glob.glob(p)):
                # the directory's real path (a toolkit reached through /usr/local/cuda and
                # /usr/local/cuda-13.0 is one), the entry's own name (a link is hidden too)
                real = os.path.join(os.path.realpath(os.path.dirname(match)), Path(match).name)
                found.setdefault(real, null)
    return [(null, path) for path, null in found.items()]


def hide_args(hidden: Sequence[tuple[bool, str]]) -> list[str]:
    """tests.faults.gpu_hide's options taking the paths away: a file or device node
    leaves its directory (--leave DIR NAMES), a directory gets an empty tmpfs (--empty),
    a `null:` path gets /dev/null bound over it (--null)."""
    args: list[str] = []
    leave: dict[str, list[str]] = {}
    for null, path in hidden:
        if null:
            args += ["--null", path]
        elif os.path.isdir(path):
            args += ["--empty", path]
        else:
            leave.setdefault(os.path.dirname(path), []).append(os.path.basename(path))
    for directory, names in sorted(leave.items()):
        args += ["--leave", directory, ",".join(sorted(names))]
    return args


def build_argv(case: GpuCase, workdir: Path, python: str = sys.executable) -> list[str]:
    driver = ["-m", "tests.faults.gpu_faults", case.name, str(workdir)]
    if case.ranks > 1:
        launch = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={case.ranks}"]
        argv = [python, *launch, *driver]
    else:
        argv = [python, *driver]
    if case.vmem_kib:
        argv = ["bash", "-c", f'ulimit -v {case.vmem_kib} && exec "$@"', "bash", *argv]
    if case.hide:
        hide = [python, "-m", "tests.faults.gpu_hide", "--stage", str(workdir)]
        argv = [*hide, *hide_args(hidden_paths(case)), "--", *argv]
    mounts = []
    if case.shm_mib:
        mounts.append(f"mount -t tmpfs -o size={case.shm_mib:g}m tmpfs /dev/shm")
    if case.work_tmpfs_mib:
        ro = "ro," if case.work_readonly else ""
        ro += "noexec," if case.work_noexec else ""
        mounts.append(f"mount -t tmpfs -o {ro}size={case.work_tmpfs_mib:g}m tmpfs {workdir}")
    private = ["unshare", "-m", "--propagation", "private"]
    if mounts:
        # A private mount namespace: the machine's own /dev/shm and /tmp stay as they are.
        mount = " && ".join([*mounts, 'exec "$@"'])
        return [*private, "sh", "-c", mount, "sh", *argv]
    if case.hide:
        return [*private, *argv]
    return argv


def command_line(case: GpuCase, argv: Sequence[str], workdir: Path) -> str:
    """The recorded command: the case's environment, then argv, as a shell would take it."""
    words = [a.replace(str(workdir), SCRATCH) for a in argv]
    pythons = [i for i, a in enumerate(argv) if a == sys.executable] or [0]
    for i in pythons:  # the case's interpreter, and the hiding helper's before it
        words[i] = "python"
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(case.env.items())]
    return " ".join([*env, shlex.join(words)])


def run_bounded(
    argv: Sequence[str], env: dict[str, str], timeout: float, cwd: Path = ROOT
) -> tuple[str, int]:
    """Run in a new process group; past `timeout` the whole group is killed (exit 124).

    Output goes to a file, not a pipe: a grandchild that outlives the kill (a torchrun
    rank, a vLLM engine) cannot keep us waiting on an open pipe."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            code = 124
        _kill_group(proc.pid)  # ranks or engine processes left behind, in both cases
        if timed_out:
            proc.wait()
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if timed_out:
        text += f"\n[timed out after {timeout:.0f} s; its process group was killed]\n"
    return text, code


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def holder_argv(case: GpuCase) -> list[str] | None:
    """The second process a case needs on GPU 0 (holding a share, or all but some MiB)."""
    if case.leaves_free_mib:
        how = ["hold_memory_leaving", str(case.leaves_free_mib)]
    elif case.holds_memory:
        how = ["hold_memory", str(case.holds_memory)]
    else:
        return None
    return [sys.executable, "-m", "tests.faults.gpu_faults", *how]


def start_holder(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The second process (holder_argv), started and confirmed holding."""
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + HOLDER_WAIT_S
    line = b""
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline and proc.poll() is None and b"holding" not in line:
        line += proc.stdout.read() or b""
        time.sleep(0.2)
    if b"holding" not in line:
        _kill_group(proc.pid)
        raise RuntimeError(f"the memory holder did not start: {line.decode(errors='replace')!r}")
    return proc


def metadata(case: GpuCase, command: str, exit_code: int, stack: dict[str, str]) -> dict[str, Any]:
    """The CPU corpus's recording format (schema shop-r1.fault-case/1)."""
    return {
        "schema": "shop-r1.fault-case/1",
        "family": FAMILY,
        "case": case.name,
        "cause": case.cause,
        "expected": list(case.expected),
        "command": command,
        "exit_code": exit_code,
        "evidence": {},
        "versions": stack,
    }


def write_recording(out: Path, case: GpuCase, output: str, meta: dict[str, Any]) -> Path:
    where = out / FAMILY
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{case.name}.log").write_text(portable(output), encoding="utf-8")
    text = json.dumps(meta, indent=2) + "\n"
    (where / f"{case.name}.json").write_text(portable(text), encoding="utf-8")
    return where / f"{case.name}.json"


def case_env(case: GpuCase, base: Mapping[str, str]) -> dict[str, str]:
    """The case's environment: this one, the checkout first on the import path (the
    cases are `tests.faults.gpu_faults`), then the case's own variables. The paths
    already there stay: on the GPU machine TRL and vLLM come from a carried tree on
    PYTHONPATH, and a child without them recorded "No module named 'vllm'" in place of
    the failure the case causes."""
    paths = [str(ROOT), *(p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**base, "PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1", **case.env}


# What a reporter pastes beside a failed run's log, as they would type each command.
ENV_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("python -m torch.utils.collect_env", ("{python}", "-m", "torch.utils.collect_env")),
    ("nvidia-smi", ("nvidia-smi",)),
    ("python -m pip list", ("{python}", "-m", "pip", "list")),
)
ENV_TIMEOUT_S = 60.0


def capture_environment(
    env: dict[str, str],
    python: str = sys.executable,
    timeout: float = ENV_TIMEOUT_S,
    commands: Sequence[tuple[str, tuple[str, ...]]] = ENV_COMMANDS,
) -> tuple[str, dict[str, int]]:
    """The `commands`' output, each under the command as typed, and their exit statuses.

    They run in the failed case's environment (its variables, its interpreter; a holder
    still holding), side by side, each under `timeout`; one that fails or hangs is kept as
    it printed: that is what the reporter would paste."""

    def one(argv: tuple[str, ...]) -> tuple[str, int]:
        try:
            return run_bounded([a.format(python=python) for a in argv], env, timeout)
        except OSError as exc:  # no such program: what a shell would print
            return f"bash: {argv[0]}: {exc.strerror}\n", 127

    with concurrent.futures.ThreadPoolExecutor(len(commands)) as pool:
        runs = list(pool.map(one, (argv for _, argv in commands)))
    parts = [f"$ {typed}\n{text.rstrip()}\n" for (typed, _), (text, _) in zip(commands, runs)]
    codes = {typed: code for (typed, _), (_, code) in zip(commands, runs)}
    return "\n".join(parts), codes


def record_case(
    case: GpuCase, out: Path, stack: dict[str, str], with_environment: bool = False
) -> int:
    work = Path(tempfile.mkdtemp(prefix=f"shop-r1-{case.name}-"))
    env = case_env(case, os.environ)
    hold = holder_argv(case)
    holder = start_holder(hold, env) if hold else None
    pasted: tuple[str, dict[str, int]] | None = None
    try:
        argv = build_argv(case, work)
        output, code = run_bounded(argv, env, case.timeout)
        if with_environment:  # after the failure, before the holder lets go
            pasted = capture_environment(env)
    finally:
        if holder is not None:
            _kill_group(holder.pid)
            holder.wait()
    output = output.replace(str(work), SCRATCH)
    meta = metadata(case, command_line(case, argv, work), code, stack)
    if pasted is not None:
        meta["pasted_environment"] = {"file": f"{case.name}.env.txt", "exit_codes": pasted[1]}
    write_recording(out, case, output, meta)
    if pasted is not None:
        (out / FAMILY / f"{case.name}.env.txt").write_text(portable(pasted[0]), encoding="utf-8")
    return code


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.gpu_record")
    parser.add_argument("--out", type=Path, required=True, help="where to write gpu/<case>.*")
    parser.add_argument("--batch", type=int, help="only this batch's cases (each fits one call)")
    parser.add_argument(
        "--environment",
        action="store_true",
        help="also write <case>.env.txt: collect_env, nvidia-smi and pip list in its environment",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=BUDGET_S,
        help=f"start no case that might end past this many seconds (default {BUDGET_S:.0f})",
    )
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if not args.cases or c.name in args.cases]
    chosen = [c for c in chosen if args.batch is None or c.batch == args.batch]
    if not chosen:
        print(f"no case matches {args.cases}; cases: {[c.name for c in CASES]}", file=sys.stderr)
        return 2
    gpus = gpu_count()
    if gpus == 0:
        print("no NVIDIA GPU visible (nvidia-smi -L lists none): nothing to record")
        return 2
    stack = {**versions(), **gpu_versions()}
    if importable("vllm"):
        import importlib.metadata

        stack["vllm"] = importlib.metadata.version("vllm")
    started = time.monotonic()
    for case in chosen:
        why = skip_reason(case, gpus)
        left = args.budget_s - (time.monotonic() - started)
        needs_s = case.timeout + (HOLDER_WAIT_S if holder_argv(case) else 0)
        needs_s += ENV_TIMEOUT_S if args.environment else 0
        if why is None and needs_s > left:
            why = f"{left:.0f} s left of the {args.budget_s:.0f} s budget"
        if why:
            print(f"skip {case.id}: {why}", flush=True)
            continue
        t0 = time.monotonic()
        code = record_case(case, args.out, stack, args.environment)
        note = "" if code != 0 else "  (exit 0: the failure did not happen; check the log)"
        print(f"{case.id}: exit {code}, {time.monotonic() - t0:.1f} s{note}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
