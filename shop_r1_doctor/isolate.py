"""Run risky things where they cannot take the doctor down with them.

Importing torch, flash_attn or vllm can abort the interpreter (SIGABRT `double free`
inside cuInit on WSL2), segfault, or hang. Such probes run as `sys.executable -c CODE`
in a child with a timeout; the child prints one JSON line after a marker and whatever
else it prints (warnings, banners) is ignored.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Status = Literal["ok", "error", "timeout", "crash", "skipped"]
MARKER = "@@shop-r1-result@@"


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str


class CommandRunner(Protocol):
    """Runs a command; returns None when the executable does not exist.

    Raises subprocess.TimeoutExpired on timeout. Tests pass a fake that returns
    recorded outputs (e.g. real `nvidia-smi` text from an H100).
    """

    def __call__(
        self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None
    ) -> CommandResult | None: ...


def subprocess_runner(
    argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None
) -> CommandResult | None:
    exe = shutil.which(argv[0]) if not os.path.isabs(argv[0]) else argv[0]
    if exe is None or not os.path.exists(exe):
        return None
    proc = subprocess.run(
        [exe, *argv[1:]],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
    )
    return CommandResult(proc.returncode, proc.stdout, proc.stderr)


@dataclass(frozen=True)
class ChildResult:
    """How a child probe went. `value` is the JSON it printed when status is ok."""

    status: Status
    seconds: float
    value: Any = None
    detail: str = ""

    def probe_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"status": self.status, "seconds": round(self.seconds, 3)}
        if self.detail:
            record["detail"] = self.detail
        return record


def signal_name(returncode: int) -> str | None:
    """-6 -> 'SIGABRT'; Windows NTSTATUS crash codes -> their names; else None."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    windows_crashes = {
        0xC0000005: "ACCESS_VIOLATION",
        0xC0000409: "STACK_BUFFER_OVERRUN",
        0xC000001D: "ILLEGAL_INSTRUCTION",
        0xC0000374: "HEAP_CORRUPTION",
    }
    return windows_crashes.get(returncode & 0xFFFFFFFF)


def _last_value(stdout: str | bytes | None) -> Any:
    """The last marker value a child printed: what it learned before crashing or hanging
    (torch prints its version and build before the risky CUDA init)."""
    if isinstance(stdout, bytes):
        stdout = stdout.decode("utf-8", errors="replace")
    for line in reversed((stdout or "").splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER) :])
            except json.JSONDecodeError:
                return None
    return None


def _last_lines(text: str, n: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:])[:500]


def child_env(env: Mapping[str, str] | None, extra_path: Sequence[str] = ()) -> dict[str, str]:
    """The environment a child probe gets: `env` (else ours), `extra_path` first on
    PYTHONPATH (tests put fake packages there), UTF-8 output."""
    result = dict(os.environ if env is None else env)
    if extra_path:
        result["PYTHONPATH"] = os.pathsep.join(
            [*extra_path, *filter(None, [result.get("PYTHONPATH", "")])]
        )
    # The child's JSON must survive a GBK console; warnings must not pollute stdout.
    result["PYTHONIOENCODING"] = "utf-8"
    return result


def start_child(code: str, *, python: str | None, env: Mapping[str, str]) -> subprocess.Popen[str]:
    """Start `code` in a fresh interpreter (env as `child_env` made it); `wait_child`
    collects it. Raises OSError when the interpreter cannot start."""
    return subprocess.Popen(
        [python or sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=dict(env),
    )


def wait_child(proc: subprocess.Popen[str], start: float, timeout: float) -> ChildResult:
    """Collect a started child: its marker value, or how it failed. `timeout` counts
    from `start` (when the child was started), as `run_child`'s does."""
    try:
        stdout, stderr = proc.communicate(timeout=max(timeout - (time.perf_counter() - start), 0))
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, _ = proc.communicate()
        return ChildResult(
            "timeout",
            time.perf_counter() - start,
            value=_last_value(stdout),
            detail=f"no answer in {timeout:g} s",
        )
    seconds = time.perf_counter() - start
    sig = signal_name(proc.returncode)
    if sig is not None:
        tail = _last_lines(stderr)
        return ChildResult(
            "crash",
            seconds,
            value=_last_value(stdout),
            detail=f"killed by {sig}" + (f": {tail}" if tail else ""),
        )
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                return ChildResult("ok", seconds, value=json.loads(line[len(MARKER) :]))
            except json.JSONDecodeError as exc:
                return ChildResult("error", seconds, detail=f"unreadable child output: {exc}")
    tail = _last_lines(stderr) or _last_lines(stdout)
    return ChildResult("error", seconds, detail=f"exit {proc.returncode}: {tail}")


def run_child(
    code: str,
    timeout: float,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    extra_path: Sequence[str] = (),
) -> ChildResult:
    """Run `code` in a fresh interpreter; it must `print(MARKER + json.dumps(value))`.

    `extra_path` is prepended to PYTHONPATH (tests put fake packages there).
    """
    start = time.perf_counter()
    try:
        proc = start_child(code, python=python, env=child_env(env, extra_path))
    except OSError as exc:
        return ChildResult(
            "error", time.perf_counter() - start, detail=f"cannot start python: {exc}"
        )
    return wait_child(proc, start, timeout)
