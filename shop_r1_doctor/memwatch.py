"""Did memory run out while a command ran? The evidence this machine keeps, read around a run.

A child killed by SIGKILL (or a shell that exits 137 for it) was killed by the kernel's
OOM killer, by a scheduler or a supervisor, or by `kill -9`. What tells them apart:
- the memory cgroup the child ran in and every cgroup above it (a container's or a job's
  limit sits on an ancestor): cgroup v2 `memory.events` (`oom`, `oom_kill`) and
  `memory.max`; cgroup v1 `memory.oom_control` (`oom_kill`) and `memory.limit_in_bytes`.
  A counter that rose during the run is the kernel's own record of an OOM kill there;
- the kernel log (`/dev/kmsg`, where readable): `Killed process <pid>` for the child.

Read before and after the run (`MemoryWatch`); judged by `memory_finding`, a pure function:
evidence found -> an error-level HOST_OOM_KILLED naming the limit and the counter; a
SIGKILL without evidence -> a hint (info), never an error.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from shop_r1_doctor.catalog import finding
from shop_r1_doctor.findings import Finding

NO_LIMIT = 1 << 62  # cgroup v1 writes "no limit" as a page-rounded 2**63-1
_KMSG_OOM = re.compile(
    r"(?:Out of memory|Memory cgroup out of memory): Killed process (\d+) \(([^)]*)\)"
)
_KMSG_MEMCG = re.compile(r"oom-kill:.*?\btask_memcg=([^,\s]+).*?\bpid=(\d+)")
# a container's memory cgroup as Docker, Podman, containerd, CRI-O and Kubernetes name it
_CONTAINER_MEMCG = re.compile(r"docker|libpod|containerd|crio|kubepods|machine\.slice/")
# a command that starts a container whose processes live in the container's own cgroup,
# not under the launcher: its OOM kill is not in the cgroups this run can read
_LAUNCHERS = frozenset({"docker", "podman", "nerdctl"})


@dataclass(frozen=True)
class CgroupMemory:
    """One memory cgroup's limit and OOM counters (None: the file is absent/unreadable)."""

    path: str  # the cgroup as /proc/<pid>/cgroup names it ("/" = the hierarchy's root)
    version: int  # 1 or 2
    limit: int | None  # bytes; None = no limit
    oom: int | None  # v2: times the limit was hit and the OOM killer ran
    oom_kill: int | None  # processes the OOM killer killed in it


@dataclass(frozen=True)
class MemoryEvidence:
    before: tuple[CgroupMemory, ...]
    after: tuple[CgroupMemory, ...]
    kernel_lines: tuple[str, ...] | None  # None: the kernel log was not readable
    pid: int | None = None  # the child's pid, to find it in the kernel log


# --- reading the files (I/O) ----------------------------------------------------------


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """`/proc/<pid>/cgroup` -> {"v2": path} and/or {"v1": path} of the memory hierarchy."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            out["v2"] = path
        elif "memory" in controllers.split(","):
            out["v1"] = path
    return out


def parse_mountinfo(text: str, controller: str = "memory") -> dict[str, tuple[str, str]]:
    """{"v2"/"v1": (mount point, the mount's root in the hierarchy)} of the cgroups with
    `controller` (v2's unified hierarchy holds them all)."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, options = after[0], (after[2] if len(after) > 2 else "")
        if fstype == "cgroup2":
            out.setdefault("v2", (fields[4], fields[3]))
        elif fstype == "cgroup" and controller in options.split(","):
            out.setdefault("v1", (fields[4], fields[3]))
    return out


def parse_counters(text: str) -> dict[str, int]:
    """`memory.events` / `memory.oom_control`: `name value` lines."""
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[name] = int(value)
    return out


def parse_limit(text: str) -> int | None:
    value = text.strip()
    if value in ("", "max"):
        return None
    n = int(value)
    return None if n >= NO_LIMIT else n


def read_cgroups(pid: int | str = "self", proc: Path = Path("/proc")) -> list[CgroupMemory]:
    """The memory cgroup of `pid` and every ancestor visible here, innermost first."""
    try:
        where = parse_proc_cgroup((proc / str(pid) / "cgroup").read_text())
        mounts = parse_mountinfo((proc / "self" / "mountinfo").read_text())
    except OSError:
        return []
    out: list[CgroupMemory] = []
    for key, version in (("v2", 2), ("v1", 1)):
        if key not in where or key not in mounts:
            continue
        mount, mount_root = mounts[key]
        path = where[key]
        # Without a cgroup namespace a container sees its host path (/docker/<id>) while its
        # mount's root is that same cgroup: the part below the mount root is the directory.
        rel = path[len(mount_root) :] if path.startswith(mount_root) else path
        parts = [p for p in rel.split("/") if p]
        for depth in range(len(parts), -1, -1):
            directory = Path(mount, *parts[:depth])
            shown = "/".join([mount_root.rstrip("/"), *parts[:depth]]) or "/"
            level = _read_level(directory, shown, version)
            if level is not None:
                out.append(level)
    return out


def _read_level(directory: Path, shown: str, version: int) -> CgroupMemory | None:
    names = (
        ("memory.max", "memory.events")
        if version == 2
        else ("memory.limit_in_bytes", "memory.oom_control")
    )
    limit_text, counters_text = (_read(directory / n) for n in names)
    if limit_text is None and counters_text is None:
        return None  # the root of a v2 hierarchy has neither; a controller not enabled here
    counters = parse_counters(counters_text or "")
    return CgroupMemory(
        path=shown,
        version=version,
        limit=parse_limit(limit_text) if limit_text is not None else None,
        oom=counters.get("oom") if version == 2 else None,
        oom_kill=counters.get("oom_kill"),
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, ValueError):
        return None


def read_kernel_log(since_monotonic: float, kmsg: str = "/dev/kmsg") -> list[str] | None:
    """Kernel log records stamped at or after `since_monotonic`; None when not readable.

    /dev/kmsg stamps records in microseconds of CLOCK_MONOTONIC; reading it needs root or
    `kernel.dmesg_restrict=0`, and a container often has neither."""
    try:
        fd = os.open(kmsg, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    since = int(since_monotonic * 1e6)
    lines = []
    try:
        while True:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue  # records overwritten while we read: the next read resumes
            except OSError:
                return None
            head, _, message = record.decode("utf-8", errors="replace").partition(";")
            stamp = head.split(",")
            if len(stamp) >= 3 and stamp[2].isdigit() and int(stamp[2]) >= since:
                lines.append(message.splitlines()[0] if message else "")
    finally:
        os.close(fd)
    return lines


@dataclass
class MemoryWatch:
    """Counters before the run, evidence after it. Never raises: a machine without cgroups
    or a kernel log simply yields no evidence."""

    before: list[CgroupMemory] = field(default_factory=list)
    started: float = 0.0
    pid: int | None = None

    def start(self) -> None:
        self.started = time.clock_gettime(time.CLOCK_MONOTONIC) - 1.0  # clock skew margin
        self.before = read_cgroups("self")

    def child(self, pid: int) -> None:
        """The child's own cgroup, when something (systemd-run) put it elsewhere."""
        self.pid = pid
        seen = {(c.version, c.path) for c in self.before}
        self.before += [c for c in read_cgroups(pid) if (c.version, c.path) not in seen]

    def finish(self) -> MemoryEvidence:
        paths = {(c.version, c.path) for c in self.before}
        after = [c for c in read_cgroups("self") if (c.version, c.path) in paths]
        found = {(c.version, c.path) for c in after}
        after += [c for c in _reread(self.before) if (c.version, c.path) not in found]
        kernel = read_kernel_log(self.started)
        return MemoryEvidence(tuple(self.before), tuple(after), _tuple(kernel), self.pid)


def _reread(levels: Sequence[CgroupMemory]) -> list[CgroupMemory]:
    """The child's cgroups when they are not ours: re-read through our own view of them."""
    if not levels:
        return []
    mounts = {}
    try:
        mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    except OSError:
        return []
    out = []
    for level in levels:
        key = f"v{level.version}"
        if key not in mounts:
            continue
        mount, root = mounts[key]
        rel = level.path[len(root) :] if level.path.startswith(root) else level.path
        again = _read_level(
            Path(mount, *[p for p in rel.split("/") if p]), level.path, level.version
        )
        if again is not None:
            out.append(again)
    return out


def _tuple(lines: list[str] | None) -> tuple[str, ...] | None:
    return tuple(lines) if lines is not None else None


# --- judging (pure) ---------------------------------------------------------------------


def oom_evidence(ev: MemoryEvidence) -> list[str]:
    """Lines that show the OOM killer acted on this run, most direct first."""
    lines: list[str] = []
    before = {(c.version, c.path): c for c in ev.before}
    for c in ev.after:
        old = before.get((c.version, c.path))
        if old is None or c.oom_kill is None or old.oom_kill is None:
            continue
        if c.oom_kill > old.oom_kill:
            name = "memory.events" if c.version == 2 else "memory.oom_control"
            lines.append(
                f"cgroup v{c.version} {c.path}: {name} oom_kill {old.oom_kill} -> {c.oom_kill}"
                f" (limit {_size(c.limit)})"
            )
    memcgs = {c.path for c in ev.before}
    for line in ev.kernel_lines or ():
        m = _KMSG_OOM.search(line)
        if m and ev.pid is not None and int(m.group(1)) == ev.pid:
            lines.append(f"kernel log: {line.strip()[:200]}")
        memcg = _KMSG_MEMCG.search(line)
        if memcg and memcg.group(1) in memcgs and memcg.group(1) != "/" and not m:
            lines.append(f"kernel log: {line.strip()[:200]}")
    return list(dict.fromkeys(lines))


def starts_container(argv: Sequence[str]) -> bool:
    """`docker run ...`, `podman run ...`, `nerdctl run ...` (a path or `sudo` before it too)."""
    words = [PurePath(w).name for w in argv]
    for i, word in enumerate(words):
        if word in _LAUNCHERS:
            return "run" in words[i + 1 : i + 4]
    return False


def container_oom_evidence(ev: MemoryEvidence) -> list[str]:
    """Kernel OOM kills in a container's memory cgroup during the run."""
    return [
        f"kernel log: {line.strip()[:200]}"
        for line in ev.kernel_lines or ()
        if (m := _KMSG_MEMCG.search(line)) and _CONTAINER_MEMCG.search(m.group(1))
    ]


def memory_finding(
    ev: MemoryEvidence | None, killed: bool, signal: str | None, argv: Sequence[str] = ()
) -> Finding | None:
    """An error when the evidence shows an OOM kill; a hint when killed without evidence."""
    shown = oom_evidence(ev) if ev is not None else []
    if not shown and killed and ev is not None:
        inside = container_oom_evidence(ev)
        if inside:
            # A container's processes live in its own cgroup, not under the command: the
            # kernel's record of an OOM kill there is the evidence. When the command itself
            # starts the container it is its kill; else (a script that runs docker) likely.
            started = starts_container(argv)
            return finding(
                "HOST_OOM_KILLED",
                "the kernel's OOM killer killed a process in a container's memory cgroup while"
                + (
                    " the container ran: it reached its memory limit (docker run --memory / -m)"
                    if started
                    else " the command ran: if the command started that container, its memory"
                    " limit (docker run --memory / -m) killed it"
                ),
                detail="Evidence on this machine, during the run:\n"
                + "\n".join(f"- {line}" for line in inside),
                severity="error" if started else "warning",
            )
    if shown:
        limit = _tightest_limit(ev)
        where = f" (memory limit {_size(limit.limit)} on cgroup {limit.path})" if limit else ""
        return finding(
            "HOST_OOM_KILLED",
            f"the kernel's OOM killer killed the run: memory ran out{where}",
            detail="Evidence on this machine:\n" + "\n".join(f"- {line}" for line in shown),
        )
    if not killed:
        return None
    how = f"was killed by {signal}" if signal else "exited 137 (a child killed by SIGKILL)"
    return finding(
        "KILLED_WITHOUT_OOM_EVIDENCE",
        f"the command {how} and this machine records no out-of-memory kill",
        detail=_what_was_checked(ev),
    )


def _tightest_limit(ev: MemoryEvidence | None) -> CgroupMemory | None:
    limited = [c for c in (ev.after if ev else ()) if c.limit is not None]
    return min(limited, key=lambda c: c.limit or 0) if limited else None


def _what_was_checked(ev: MemoryEvidence | None) -> str:
    if ev is None or (not ev.after and ev.kernel_lines is None):
        return "No memory cgroup and no kernel log were readable here, so nothing rules memory out."
    parts = [
        f"cgroup v{c.version} {c.path}: oom_kill {c.oom_kill} (limit {_size(c.limit)})"
        for c in ev.after
    ]
    parts.append(
        "kernel log: not readable (needs root or kernel.dmesg_restrict=0)"
        if ev.kernel_lines is None
        else "kernel log: no OOM kill of this run"
    )
    return "Checked, unchanged during the run:\n" + "\n".join(f"- {p}" for p in parts)


def _size(n: int | None) -> str:
    if n is None:
        return "none"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
