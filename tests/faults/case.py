"""A fault case, how it is caused (namespaces, tmpfs, cgroups, ulimits, another user) and
what it printed.

A case runs `python -m tests.faults.<family> <name> <workdir>` from the repository root,
inside a bash wrapper that builds the condition first (the wrapper is the recorded
command, so anyone can rerun it). Everything runs under a timeout; what comes back is
stdout and stderr interleaved as a terminal shows them, and the exit status.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "faults"
# The stack whose messages the corpus pins; recorded with every case.
VERSIONED = (
    "torch",
    "transformers",
    "trl",
    "accelerate",
    "datasets",
    "huggingface_hub",
    "safetensors",
    "tokenizers",
    "numpy",
    "ray",
)


@dataclass(frozen=True)
class FaultCase:
    family: str
    name: str
    expected: tuple[str, ...]  # finding codes naming the cause; () = the user's own bug
    cause: str  # what was done to cause it, one line
    tmpfs: tuple[str, str] | None = None  # (where, size): "work" = the case's dir, or a path
    memory_limit_mb: int | None = None  # run inside a memory cgroup with this limit
    no_network: bool = False  # a network namespace with no interface up
    env: dict[str, str] = field(default_factory=dict)
    path_without_compiler: bool = False  # PATH holds only python (no cc, c++, gcc, g++)
    # Run as a line of a launch script, so the shell reports how it ended ("Killed"),
    # as a terminal does; otherwise bash execs python and only the exit status tells.
    shell_reports: bool = False
    timeout: float = 120.0
    # False: recorded, not re-caused by the suite (say why in `cause`: e.g. the Hub
    # client's retries with back-off take 25-50 s without a network).
    live: bool = True
    # False: the process is killed before it can print why (an OOM kill); the cause is
    # in the evidence the machine keeps (the cgroup's oom_kill count), not in the log.
    log_shows_cause: bool = True
    # When the log cannot tell the cause from another with the same symptom (a bare
    # SIGBUS: a full /dev/shm or a mapped file cut short under the process), the hint it
    # must lead with instead, never at error level; the figures still count it a miss.
    log_reads_as: tuple[str, ...] = ()
    # A function of the family module, prepare(cache_dir) -> env for the driver, that
    # builds what the case needs (a compiled extension) once per cache directory; it
    # raises Unavailable (one line: why) when this machine cannot build it.
    prepare: str | None = None
    # `ulimit -<flag> <value>` set in the wrapper before the driver starts, e.g. {"n": "128"}
    # (open files), {"v": "4000000"} (address space, kB), {"u": "60"} (processes per user).
    ulimits: dict[str, str] = field(default_factory=dict)
    pids_limit: int | None = None  # run inside a pids cgroup with this pids.max
    # Directories (relative to the case's dir, or absolute) mounted as read-only tmpfs
    # in a private mount namespace, e.g. ("hf-home",): the run's HF_HOME.
    readonly: tuple[str, ...] = ()
    # Run the driver as this user (setpriv; its own group, no supplementary groups); the
    # case's dir is opened to it, its HF_HOME (hf-home) is created and owned by root.
    run_as: str | None = None
    # The case's dir is a btrfs file system on a loop device (a sparse 256 MiB image) in a
    # private mount namespace, with quotas on and a qgroup limit of this many MiB on it: a
    # write past it fails with EDQUOT (`[Errno 122] Disk quota exceeded`), as a home or
    # project directory under a quota does; df still shows the disk's free space. With
    # run_as, the file system is handed to that user.
    quota_mib: int | None = None
    # Shell lines run in the wrapper, in a private mount namespace, after the mounts above
    # and before the driver starts ("{work}" is the case's dir): a /dev/shm of mode 755, a
    # /dev without shm. The recorded command shows them.
    namespace_setup: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.family}/{self.name}"


class Unavailable(Exception):
    """This machine cannot build what the case needs (no compiler, no wheel): skip it."""


def download_wheel(spec: str, dest: Path) -> Path:
    """`NAME==VERSION`'s wheel for this Python in `dest` (pip download --no-deps, once);
    Unavailable, with pip's last line, where the index cannot give one."""
    name, version = spec.split("==")
    found = sorted(dest.glob(f"{name}-{version}-*.whl"))
    if found:
        return found[0]
    dest.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    argv += ["--disable-pip-version-check", "-q", spec, "-d", str(dest)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=180)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"pip download {spec} took over 180 s") from None
    found = sorted(dest.glob(f"{name}-{version}-*.whl"))
    if proc.returncode != 0 or not found:
        last = (proc.stderr.strip().splitlines() or ["no wheel for this Python"])[-1]
        raise Unavailable(f"pip could not download {spec}: {last}")
    return found[0]


def default_cache() -> Path:
    return Path(tempfile.gettempdir()) / "shop-r1-fault-cache"


@dataclass(frozen=True)
class Captured:
    case: FaultCase
    output: str
    exit_code: int
    command: str
    evidence: dict[str, str]  # what the machine recorded besides the log (cgroup files)
    # Run `under` another program (run_case's `under`): what it printed on stdout; `output`
    # is then its stderr (where `shop-r1 run --json` sends the command's own output).
    stdout: str | None = None


def missing_requirement(case: FaultCase) -> str | None:
    """Why this machine cannot cause the case for real, or None."""
    needs_root = (
        case.tmpfs is not None
        or case.memory_limit_mb is not None
        or case.no_network
        or case.pids_limit is not None
        or bool(case.readonly)
        or case.run_as is not None
        or case.quota_mib is not None
        or bool(case.namespace_setup)
    )
    if needs_root and os.geteuid() != 0:
        return "needs root (mount namespace, tmpfs, cgroup, network namespace or another user)"
    needs_unshare = case.tmpfs or case.no_network or case.readonly or case.namespace_setup
    if needs_unshare and shutil.which("unshare") is None:
        return "needs util-linux unshare"
    if case.run_as is not None and shutil.which("setpriv") is None:
        return "needs util-linux setpriv"
    if case.quota_mib is not None:
        why = quota_unavailable()
        if why:
            return why
    if case.memory_limit_mb is not None and memory_cgroup_parent() is None:
        return "needs a writable memory cgroup (v2 with the memory controller, or v1)"
    if case.pids_limit is not None and pids_cgroup_parent() is None:
        return "needs a writable pids cgroup (v2 with the pids controller, or v1)"
    if sys.platform != "linux":
        return "Linux only"
    mounted = [case.tmpfs[0]] if case.tmpfs and case.tmpfs[0] != "work" else []
    mounted += [p for p in case.readonly if isinstance(p, str) and p.startswith("/")]
    for where in mounted:
        for needed in (ROOT, Path(sys.prefix)):
            if needed.resolve().is_relative_to(Path(where)):
                # A mount over it would hide the checkout or the interpreter from the case.
                return f"the case mounts over {where}, which holds {needed}"
    return None


def quota_unavailable() -> str | None:
    """Why this machine cannot mount a btrfs image with a qgroup limit, or None."""
    for tool in ("unshare", "losetup", "mkfs.btrfs", "btrfs"):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux, btrfs-progs) for a quota-limited file system"
    if not Path("/dev/loop-control").exists():
        return "needs loop devices (/dev/loop-control) for a quota-limited file system"
    known = Path("/proc/filesystems")
    if not known.exists() or "btrfs" not in known.read_text().split():
        return "needs a kernel with btrfs (its qgroups give the quota)"
    return None


def memory_cgroup_parent() -> tuple[str, Path] | None:
    """("v2"|"v1", the cgroup directory this process may create a child under)."""
    own = Path("/proc/self/cgroup").read_text().splitlines() if sys.platform == "linux" else []
    unified = Path("/sys/fs/cgroup")
    for line in own:
        hier, controllers, path = line.split(":", 2)
        if hier == "0" and (unified / "cgroup.controllers").exists():
            base = unified / path.lstrip("/")
            # A v2 leaf may hold processes only if it enables no controllers; use its parent.
            for cand in (base, base.parent):
                ctl = cand / "cgroup.subtree_control"
                if (
                    ctl.exists()
                    and "memory" in ctl.read_text().split()
                    and os.access(cand, os.W_OK)
                ):
                    return "v2", cand
        if "memory" in controllers.split(","):
            base = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            if (base / "memory.limit_in_bytes").exists() and os.access(base, os.W_OK):
                return "v1", base
    return None


def pids_cgroup_parent() -> tuple[str, Path] | None:
    """("v2"|"v1", the cgroup directory this process may create a pids child under)."""
    own = Path("/proc/self/cgroup").read_text().splitlines() if sys.platform == "linux" else []
    unified = Path("/sys/fs/cgroup")
    for line in own:
        hier, controllers, path = line.split(":", 2)
        if hier == "0" and (unified / "cgroup.controllers").exists():
            base = unified / path.lstrip("/")
            for cand in (base, base.parent):
                ctl = cand / "cgroup.subtree_control"
                if ctl.exists() and "pids" in ctl.read_text().split() and os.access(cand, os.W_OK):
                    return "v2", cand
        if "pids" in controllers.split(","):
            base = Path("/sys/fs/cgroup/pids") / path.lstrip("/")
            if (base / "cgroup.procs").exists() and os.access(base, os.W_OK):
                return "v1", base
    return None


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "kernel": platform.release()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _cgroup(limit_mb: int) -> tuple[Path, Path, Callable[[], dict[str, str]]]:
    found = memory_cgroup_parent()
    assert found is not None
    kind, parent = found
    group = Path(tempfile.mkdtemp(prefix="shop-r1-fault-", dir=parent))
    limit = str(limit_mb * 1024 * 1024)
    if kind == "v2":
        (group / "memory.max").write_text(limit)
        if (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")
        files = ("memory.max", "memory.events", "memory.peak")
    else:
        (group / "memory.limit_in_bytes").write_text(limit)
        files = ("memory.limit_in_bytes", "memory.oom_control", "memory.failcnt")

    def read() -> dict[str, str]:
        got = {
            f"cgroup {kind} {f}": (group / f).read_text().strip()
            for f in files
            if (group / f).exists()
        }
        return got

    return group, group / "cgroup.procs", read


def _pids_cgroup(limit: int) -> tuple[Path, Path, Callable[[], dict[str, str]]]:
    found = pids_cgroup_parent()
    assert found is not None
    kind, parent = found
    group = Path(tempfile.mkdtemp(prefix="shop-r1-fault-", dir=parent))
    (group / "pids.max").write_text(str(limit))
    files = ("pids.max", "pids.events", "pids.peak")

    def read() -> dict[str, str]:
        return {
            f"cgroup {kind} {f}": (group / f).read_text().strip()
            for f in files
            if (group / f).exists()
        }

    return group, group / "cgroup.procs", read


def build_command(
    case: FaultCase, workdir: Path, procs: Path | None = None, under: Sequence[str] = ()
) -> str:
    """The bash script that sets the condition up and runs the driver.

    `under`: the arguments of a Python program put in front of the driver, which it runs
    (`-m shop_r1.cli run --json --`): inside the same namespaces, cgroup and ulimits, as
    the same user."""
    # As another user, the interpreter by its path: a PATH lookup that cannot follow the
    # venv's symlink (into a home the user cannot enter) falls through to /usr/bin.
    python = "python" if case.run_as is None else "$(command -v python)"
    run = f"{python} -m tests.faults.{case.family} {case.name} {workdir}"
    if under:
        run = f"{python} {shlex.join(under)} {run}"
    if case.run_as is not None:
        u = case.run_as
        run = f"setpriv --reuid={u} --regid=$(id -g {u}) --clear-groups {run}"
    lines = []
    if procs is not None:
        lines.append(f"echo $$ > {procs}")
    if case.tmpfs is not None:
        where, size = case.tmpfs
        target = workdir if where == "work" else Path(where)
        lines.append(f"mount -t tmpfs -o size={size} tmpfs {target}")
    if case.quota_mib is not None:
        # The image lies in the case's dir, under the mount that hides it (the loop
        # device holds it open; it goes with the namespace and the scratch dir).
        img = workdir / "quota.img"
        lines.append(f"truncate -s 256M {img} && mkfs.btrfs -q -f {img} >/dev/null")
        lines.append(f"mount -o loop {img} {workdir} && btrfs quota enable {workdir}")
        lines.append(f"btrfs qgroup limit {case.quota_mib}M {workdir}")
    if case.run_as is not None:
        lines.append(f"chmod 755 {workdir} && mkdir -p {workdir}/hf-home")
        if case.quota_mib is not None:
            lines.append(f"chown -R {case.run_as}: {workdir}")
    for where in case.readonly:
        target = Path(where) if where.startswith("/") else workdir / where
        lines.append(f"mkdir -p {target} && mount -t tmpfs -o ro,size=1m tmpfs {target}")
    lines.extend(line.replace("{work}", str(workdir)) for line in case.namespace_setup)
    for flag, value in case.ulimits.items():
        lines.append(f"ulimit -{flag} {value}")
    if case.path_without_compiler:
        lines.append(f"export PATH={Path(sys.executable).parent}")
    lines.append(run)
    if case.shell_reports:
        lines.append("exit $?")
    script = "\n".join(lines)
    unshare = []
    if (
        case.tmpfs is not None
        or case.readonly
        or case.quota_mib is not None
        or case.namespace_setup
    ):
        unshare.append("-m")
    if case.no_network:
        unshare.append("-n")
    wrapped = f"bash -c {shlex.quote(script)}"
    return f"unshare {' '.join(unshare)} {wrapped}" if unshare else wrapped


def run_case(
    case: FaultCase,
    cache: Path | None = None,
    *,
    under: Sequence[str] = (),
    extra_seconds: float = 0.0,
) -> Captured:
    """Cause the failure; raises RuntimeError when the machine cannot (see
    missing_requirement), Unavailable when what it needs cannot be built here.

    `under` (build_command's): the driver runs under that program, whose stdout is kept
    apart (Captured.stdout); `extra_seconds` is added to the case's timeout for it."""
    why = missing_requirement(case)
    if why:
        raise RuntimeError(f"{case.id}: {why}")
    prepared: dict[str, str] = {}
    if case.prepare is not None:
        module = importlib.import_module(f"{__package__}.{case.family}")
        prepared = getattr(module, case.prepare)(cache or default_cache())
    scratch = Path(tempfile.mkdtemp(prefix=f"shop-r1-{case.name}-"))
    group = procs = None
    read_cgroup: Callable[[], dict[str, str]] = dict
    try:
        if case.memory_limit_mb is not None:
            group, procs, read_cgroup = _cgroup(case.memory_limit_mb)
        elif case.pids_limit is not None:
            group, procs, read_cgroup = _pids_cgroup(case.pids_limit)
        command = build_command(case, scratch, procs, under)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "CUDA_"))}
        env.update(
            HF_HOME=str(scratch / "hf-home"),  # an empty cache: nothing downloaded earlier helps
            PYTHONPATH=str(ROOT),
            PYTHONUNBUFFERED="1",
            TOKENIZERS_PARALLELISM="false",
        )
        env.update(case.env)  # a case may set any of the above (TOKENIZERS_PARALLELISM)
        env.update(prepared)
        # `python` in the command is this interpreter (its directory first on PATH).
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        timeout = case.timeout + extra_seconds
        stdout: str | None = None
        try:
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if under else subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
            code = proc.returncode
            if under:
                stdout = proc.stdout.decode("utf-8", "replace")
                output = proc.stderr.decode("utf-8", "replace")
            else:
                output = proc.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as exc:
            output = ((exc.stderr if under else exc.stdout) or b"").decode("utf-8", "replace")
            output += f"\n[timed out after {timeout:.0f} s]\n"
            code = 124
            if under:
                stdout = (exc.stdout or b"").decode("utf-8", "replace")
        evidence = read_cgroup()
    finally:
        if group is not None:
            group.rmdir()
        shutil.rmtree(scratch, ignore_errors=True)
    # The scratch directory's random name would make every recording differ.
    output = output.replace(str(scratch), "/tmp/shop-r1-fault")
    command = command.replace(str(scratch), "/tmp/shop-r1-fault")
    if group is not None:
        command = command.replace(str(group), f"{group.parent}/shop-r1-fault")
    if stdout is not None:
        stdout = stdout.replace(str(scratch), "/tmp/shop-r1-fault")
    return Captured(case, output, code, command, evidence, stdout)


def metadata(captured: Captured) -> dict[str, Any]:
    c = captured.case
    return {
        "schema": "shop-r1.fault-case/1",
        "family": c.family,
        "case": c.name,
        "cause": c.cause,
        "expected": list(c.expected),
        "command": captured.command,
        "exit_code": captured.exit_code,
        "evidence": captured.evidence,
        "versions": versions(),
    }


def drive(cases: dict[str, Callable[[Path], None]], argv: list[str]) -> None:
    """`python -m tests.faults.<family> <case> <workdir>`: run one driver."""
    if len(argv) != 3 or argv[1] not in cases:
        sys.exit(f"usage: {argv[0]} {{{','.join(cases)}}} WORKDIR")
    cases[argv[1]](Path(argv[2]))
