"""Run a command with its output shown live and saved, then judge how it ended.

The child gets its own process group (POSIX), so a Ctrl-C reaches it once, through
us, and we keep reading its output while it shuts down. Output is copied to our
stdout as it arrives (progress bars included) and to `output.log` with a
`[HH:MM:SS.mmm] ` stamp at the start of each line.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from shop_r1_doctor.catalog import finding
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.isolate import signal_name
from shop_r1_doctor.logscan import scan_log
from shop_r1_doctor.memwatch import MemoryEvidence, MemoryWatch, memory_finding

# Words that say "this is a training run": such a run cannot finish in seconds.
_TRAINING = re.compile(
    r"(?:^|[\s/=_-])(?:train|sft|grpo|ppo|dpo|torchrun|accelerate|deepspeed|main_ppo)"
    r"(?:$|[\s._-])",
    re.I,
)
TRAINING_MIN_SECONDS = 60.0
_HEAD_BYTES = 1 << 20  # what we keep in memory for the report: the first MiB ...
_TAIL_BYTES = 4 << 20  # ... and the last 4 MiB (the file on disk keeps everything)


def looks_like_training(argv: Sequence[str]) -> bool:
    return bool(_TRAINING.search(" ".join(argv)))


def default_min_seconds(argv: Sequence[str]) -> float:
    """60 s for training commands (a real run takes longer); 0 (off) for anything else."""
    return TRAINING_MIN_SECONDS if looks_like_training(argv) else 0.0


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int  # as subprocess reports it: negative for a signal on POSIX
    seconds: float
    log_path: Path
    log_text: str  # head + tail of the output, timestamps removed
    interrupted: bool  # the user pressed Ctrl-C (or we were sent SIGINT/SIGTERM)
    memory: MemoryEvidence | None = None  # cgroup counters and kernel log around the run

    @property
    def signal(self) -> str | None:
        return signal_name(self.returncode)

    @property
    def exit_code(self) -> int:
        """What a shell would report: 128+N for a death by signal N."""
        return 128 - self.returncode if self.returncode < 0 else self.returncode


@dataclass(frozen=True)
class Verdict:
    failed: bool
    sentence: str  # "exited with code 3", "was killed by SIGSEGV", ...
    findings: tuple[Finding, ...] = ()


def judge(result: RunResult, min_seconds: float) -> Verdict:
    """Failure, death by signal, or a success too quick/quiet/odd to be real."""
    # A shell or launcher exits 137 when its child was killed by SIGKILL.
    killed = result.signal == "SIGKILL" or result.returncode == 137
    memory = (
        memory_finding(result.memory, killed, result.signal, result.argv)
        if result.returncode
        else None
    )
    found = (memory,) if memory else ()
    if result.signal:
        return Verdict(True, f"was killed by {result.signal}", found)
    if result.returncode != 0:
        return Verdict(True, f"exited with code {result.returncode}", found)
    if not result.log_text.strip():
        return Verdict(True, "exited 0 but printed nothing (suspicious)", (_quiet_finding(result),))
    silent = [m for m in scan_log(result.log_text) if m.signature.silent]
    if silent:
        title = silent[0].signature.title
        return Verdict(True, f"exited 0 but its log says {title} (suspicious)")
    if min_seconds > 0 and result.seconds < min_seconds:
        return Verdict(
            True,
            f"exited 0 after {result.seconds:.1f} s, sooner than a training run can "
            f"(--min-seconds {min_seconds:g}; suspicious)",
            (_quiet_finding(result),),
        )
    return Verdict(False, "exited 0")


def _quiet_finding(result: RunResult) -> Finding:
    # A hint, not a cause: nothing here shows which interpreter ran. A wrong one shows as
    # `No module named ...` in the log (a signature) or as the doctor's own finding.
    return finding(
        "RUN_ENDED_AT_ONCE",
        f"the command 'succeeded' in {result.seconds:.1f} s, too soon to have done the work",
    )


def run_and_tee(argv: Sequence[str], run_dir: Path, *, out: BinaryIO | None = None) -> RunResult:
    """Run `argv`, show its output live, save it to `run_dir/output.log`."""
    out = out if out is not None else sys.stdout.buffer
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        log_file = (run_dir / "output.log").open("wb")
    except OSError as exc:
        raise ToolError(f"{run_dir}: cannot create the run directory: {exc.strerror}") from None
    # Unbuffered, so a crash loses no output; faulthandler, so a Python child that dies by
    # SIGSEGV/SIGABRT prints where (the report's "Fatal Python error" block). Users' own
    # settings win.
    env = {"PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1", **os.environ}
    start = time.monotonic()
    # The relay is in place before the child exists: a Ctrl-C during start-up is not lost,
    # and the child starts with the dispositions a shell would give it (a caught signal is
    # reset to the default across exec; one ignored by whoever started us stays ignored).
    relay = _SignalRelay()
    memory = MemoryWatch()
    memory.start()
    with relay, log_file:
        try:
            proc = subprocess.Popen(
                list(argv),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            raise ToolError(
                f"cannot start {argv[0]!r}: {exc.strerror}; check the command"
            ) from None
        relay.attach(proc)
        memory.child(proc.pid)
        keep = _HeadTail()
        stamper = _Stamper(log_file)
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(65536):  # type: ignore[attr-defined]
            out.write(chunk)
            out.flush()
            stamper.write(chunk)
            keep.add(chunk)
        returncode = proc.wait()
    text = keep.text()
    evidence = memory.finish() if returncode != 0 else None
    return RunResult(
        argv=tuple(argv),
        returncode=returncode,
        seconds=time.monotonic() - start,
        log_path=run_dir / "output.log",
        log_text=text,
        interrupted=relay.interrupted,
        memory=evidence,
    )


class _Stamper:
    """Writes chunks to the log with a wall-clock stamp at the start of every line."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.at_line_start = True

    def write(self, chunk: bytes) -> None:
        parts = chunk.split(b"\n")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part and self.at_line_start:
                now = time.time()
                stamp = (
                    time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
                )
                self.file.write(f"[{stamp}] ".encode())
            self.file.write(part if last else part + b"\n")
            self.at_line_start = not last or (not part and self.at_line_start)
        self.file.flush()


class _HeadTail:
    """The first and last bytes of the output, enough for a report of any run length."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = _HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > _TAIL_BYTES:
            cut = len(self.tail) - _TAIL_BYTES
            del self.tail[:cut]
            self.dropped += cut

    def text(self) -> str:
        gap = f"\n[... {self.dropped} bytes not kept in memory; see output.log ...]\n"
        body = bytes(self.head) + (gap.encode() if self.dropped else b"") + bytes(self.tail)
        return body.decode("utf-8", errors="replace")


class _SignalRelay:
    """While the child runs, SIGINT/SIGTERM/SIGHUP sent to us go to its process group.

    A third Ctrl-C sends SIGKILL, for a child that ignores interrupts. A signal that the
    process which started us set to ignored (`cmd &` in a script ignores SIGINT) stays
    ignored, by us and by the child: `shop-r1 run` is as transparent as the shell."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending: int | None = None  # a signal that came before the child existed
        self.interrupted = False
        self.count = 0
        self.saved: dict[int, object] = {}

    def __enter__(self) -> _SignalRelay:
        for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
                self.saved[sig] = signal.signal(sig, self._forward)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def attach(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        if self.pending is not None:
            self._send(self.pending)

    def _forward(self, signum: int, frame: object) -> None:
        self.interrupted = True
        self.count += 1
        sig = signal.SIGKILL if self.count >= 3 and hasattr(signal, "SIGKILL") else signum
        if self.proc is None:
            self.pending = sig
        else:
            self._send(sig)

    def _send(self, sig: int) -> None:
        assert self.proc is not None
        try:
            if os.name == "posix":
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass  # the child is already gone; proc.wait() returns its status
