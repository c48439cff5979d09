"""A run started from an SSH session, without nohup, tmux or setsid, when the session
closes: the kernel hangs up the session's terminal and SIGHUP reaches the shell and the
job it started, as when a laptop sleeps or the connection drops.

The driver opens a pseudo-terminal (pty.fork: the child is a session leader with the pty
as its controlling terminal, as sshd starts a login shell) and runs torchrun (2 CPU ranks,
gloo, a training loop that prints each step) from a shell in it, its output redirected to
train.log as a user does. Once both ranks have printed steps, the session ends: the pty's
master side is closed (what sshd does when the connection goes), or the interactive shell
is sent SIGHUP. The driver waits for the job to end and prints train.log: the log the user
finds the next morning.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

from .case import FaultCase, drive
from .preempted import LOOP

FAMILY = "session_hangup"
EXPECTED = ("LAUNCH_SESSION_HANGUP",)
PORT = 29531
TORCHRUN = f"torchrun --nproc-per-node 2 --master-port {PORT} train.py"
CASES = (
    FaultCase(
        FAMILY,
        "pty_closed_foreground",
        EXPECTED,
        f"`bash -c '{TORCHRUN} > train.log 2>&1'` as the session leader of a pty (pty.fork, as"
        " sshd starts a session); after both ranks print steps the pty's master is closed (the"
        " SSH connection drops): train.log",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "interactive_shell_background_job",
        EXPECTED,
        f"an interactive `bash --norc -i` on a pty runs `{TORCHRUN} > train.log 2>&1 &`; after"
        " steps the shell is sent SIGHUP (it passes SIGHUP to its jobs, as when the session"
        " closes): train.log",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "nohup_rank_raises",
        (),
        f"`nohup {TORCHRUN} --fail > train.log 2>&1` from the same kind of pty session, closed"
        " 10 s later (nohup ignores the hangup); rank 1 raises ValueError at step 3 from the"
        " user's own loss check (the user's own bug): train.log",
        timeout=90,
    ),
)


def _drain(master: int, seconds: float) -> None:
    """Read the terminal for `seconds` (what it shows is not the log), as a session does."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([master], [], [], min(left, 0.5))
        if ready:
            try:
                os.read(master, 4096)
            except OSError:
                time.sleep(0.1)


def _session(work: Path, argv: list[str]) -> tuple[int, int]:
    (work / "train.py").write_text(LOOP, encoding="utf-8")
    pid, master = pty.fork()
    if pid == 0:
        os.chdir(work)
        # A session sshd starts has SIGHUP at its default. The recorder may itself run
        # under nohup or a CI runner that ignores it, and exec would pass SIG_IGN on to
        # the shell and its jobs, which would then outlive the hangup.
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    return pid, master


def _job_pids(work: Path) -> list[int]:
    """The processes running train.py in `work` (the launcher and its ranks)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd == str(work) and any(part == b"train.py" for part in cmd):
            pids.append(int(proc.name))
    return pids


def _wait_job_end(work: Path, seconds: float = 45.0) -> None:
    """Until nothing runs train.py any more; a job that outlives the wait would hold its
    port into the next case, so it is ended."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _job_pids(work):
            return
        time.sleep(0.5)
    for pid in _job_pids(work):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _print_log(work: Path) -> None:
    print(f"$ cat train.log   # {TORCHRUN} started from the closed session", flush=True)
    print((work / "train.log").read_text(encoding="utf-8", errors="replace"), end="", flush=True)


def _run_then_close_terminal(work: Path, command: str) -> None:
    """`command` in the foreground of a terminal whose master side then closes (a dropped
    SSH connection), then the job's log."""
    pid, master = _session(work, ["bash", "-c", command])
    _drain(master, 10.0)
    os.close(master)
    os.waitpid(pid, 0)
    _wait_job_end(work)
    _print_log(work)
    sys.exit(1)


def pty_closed_foreground(work: Path) -> None:
    _run_then_close_terminal(work, f"{TORCHRUN} > train.log 2>&1")


def interactive_shell_background_job(work: Path) -> None:
    pid, master = _session(work, ["bash", "--norc", "--noprofile", "-i"])
    _drain(master, 1.0)
    os.write(master, f"{TORCHRUN} > train.log 2>&1 &\n".encode())
    _drain(master, 10.0)
    os.kill(pid, signal.SIGHUP)
    _drain(master, 1.0)
    os.close(master)
    os.waitpid(pid, 0)
    _wait_job_end(work)
    _print_log(work)
    sys.exit(1)


def nohup_rank_raises(work: Path) -> None:
    _run_then_close_terminal(work, f"nohup {TORCHRUN} --fail > train.log 2>&1")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
