"""This process's limits and the caches the stack writes: what a run inherits from its
shell, container or scheduler and cannot see until it fails.

- rlimits (`resource`): open files (each DataLoader batch in flight holds descriptors),
  processes/threads per user (every worker and every OpenMP/Rayon thread counts), and
  address space (CUDA and mmap'd weights reserve far more than they touch);
- the pids cgroup (v2 `pids.max`/`pids.current`, v1 the `pids` hierarchy), tightest level
  of this cgroup and its ancestors, and the memory cgroup's limit (memwatch's reader);
- each cache directory the stack writes (Hub, datasets, remote code, Triton, Inductor,
  temp): whether this user can write it, or the nearest existing parent that would hold
  it, and whether that is a read-only mount;
- the network interfaces in /sys/class/net, which NCCL_SOCKET_IFNAME must name.

Everything is read, nothing is created; a value that cannot be read is None. Files come
from `deps.root`, so tests use a temporary file-system root.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.probes.host import temp_dir
from shop_r1_doctor.redact import redact_home

UNLIMITED = -1  # how the section writes RLIM_INFINITY and a cgroup's "max"


def rlimits() -> dict[str, dict[str, int]]:
    """{"nofile"|"nproc"|"address_space": {"soft", "hard"}}; -1 is unlimited. {} off POSIX."""
    try:
        import resource
    except ImportError:  # Windows
        return {}
    out: dict[str, dict[str, int]] = {}
    for name, rid in (
        ("nofile", "RLIMIT_NOFILE"),
        ("nproc", "RLIMIT_NPROC"),
        ("address_space", "RLIMIT_AS"),
    ):
        if not hasattr(resource, rid):
            continue
        try:
            soft, hard = resource.getrlimit(getattr(resource, rid))
        except (OSError, ValueError):
            continue
        inf = resource.RLIM_INFINITY
        out[name] = {
            "soft": UNLIMITED if soft == inf else soft,
            "hard": UNLIMITED if hard == inf else hard,
        }
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None


def _count(text: str | None) -> int | None:
    value = (text or "").strip()
    if value == "max":
        return UNLIMITED
    return int(value) if value.isdigit() else None


def _pids_mounts(mountinfo: str) -> dict[str, tuple[str, str]]:
    """{"v2"/"v1": (mount point, the mount's root)} of the cgroup hierarchies with pids."""
    from shop_r1_doctor.memwatch import parse_mountinfo

    return parse_mountinfo(mountinfo, controller="pids")


def pids_cgroup(deps: ProbeDeps) -> dict[str, Any] | None:
    """The level of this process's pids cgroup (or an ancestor's) with the least headroom:
    {"version", "path", "max", "current"}; "max" -1 is no limit (no level sets one).
    None: no cgroup hierarchy is visible (no cgroups mounted, not Linux)."""
    proc = deps.root / "proc"
    own, mounts = _read(proc / "self" / "cgroup"), _read(proc / "self" / "mountinfo")
    if own is None or mounts is None:
        return None
    where: dict[str, str] = {}
    for line in own.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            where["v2"] = parts[2]
        elif len(parts) == 3 and "pids" in parts[1].split(","):
            where["v1"] = parts[2]
    best: dict[str, Any] | None = None
    for key, (mount, mount_root) in _pids_mounts(mounts).items():
        if key not in where:
            continue
        if best is None:
            # a hierarchy is visible: where no level sets pids.max, nothing limits
            best = {"version": key, "path": "/", "max": UNLIMITED, "current": None}
        path = where[key]
        rel = path[len(mount_root) :] if path.startswith(mount_root) else path
        parts = [p for p in rel.split("/") if p]
        for depth in range(len(parts), -1, -1):
            directory = deps.root / mount.lstrip("/") / Path(*parts[:depth])
            limit = _count(_read(directory / "pids.max"))
            if limit is None:
                continue  # the hierarchy's root has no pids.max; the controller is off here
            current = _count(_read(directory / "pids.current"))
            level = {
                "version": key,
                "path": "/".join([mount_root.rstrip("/"), *parts[:depth]]) or "/",
                "max": limit,
                "current": current,
            }
            if best is None or _headroom(level) < _headroom(best):
                best = level
    return best


def _headroom(level: dict[str, Any]) -> float:
    if level["max"] == UNLIMITED:
        return float("inf")
    return level["max"] - (level["current"] or 0)


def memory_max(deps: ProbeDeps) -> int | None:
    """The smallest memory cgroup limit over this process's cgroup and its ancestors;
    -1: none is set; None: no memory cgroup is visible."""
    from shop_r1_doctor.memwatch import read_cgroups

    levels = read_cgroups("self", deps.root / "proc")
    if not levels:
        return None
    limits = [c.limit for c in levels if c.limit is not None]
    return min(limits) if limits else UNLIMITED


def cache_dirs(environ: Mapping[str, str], home: str) -> list[tuple[str, str]]:
    """(what, path) of each cache the stack writes, as the libraries resolve them.

    huggingface_hub: HF_HOME (default $XDG_CACHE_HOME/huggingface), HF_HUB_CACHE (default
    $HF_HOME/hub), HF_MODULES_CACHE (remote code, default $HF_HOME/modules); datasets:
    HF_DATASETS_CACHE (default $HF_HOME/datasets); Triton: TRITON_CACHE_DIR (default
    ~/.triton/cache); Inductor: TORCHINDUCTOR_CACHE_DIR (default <temp>/torchinductor_<user>);
    the temp dir: TMPDIR, TEMP or TMP, else /tmp (as the host probe reads it)."""
    xdg = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    hf_home = environ.get("HF_HOME") or os.path.join(xdg, "huggingface")
    temp = temp_dir(environ)
    user = _user(environ)
    return [
        ("HF_HOME", hf_home),
        ("HF_HUB_CACHE", environ.get("HF_HUB_CACHE") or os.path.join(hf_home, "hub")),
        (
            "HF_DATASETS_CACHE",
            environ.get("HF_DATASETS_CACHE") or os.path.join(hf_home, "datasets"),
        ),
        ("HF_MODULES_CACHE", environ.get("HF_MODULES_CACHE") or os.path.join(hf_home, "modules")),
        (
            "TRITON_CACHE_DIR",
            environ.get("TRITON_CACHE_DIR")
            or os.path.join(environ.get("TRITON_HOME") or home, ".triton", "cache"),
        ),
        (
            "TORCHINDUCTOR_CACHE_DIR",
            environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(temp, f"torchinductor_{user}"),
        ),
        ("TMPDIR", temp),
    ]


def _user(environ: Mapping[str, str]) -> str:
    """getpass.getuser()'s answer for this environment (Inductor names its dir by it)."""
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if environ.get(name):
            return re.sub(r'[\\/:*?"<>|]', "_", environ[name])
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):
        return "user"


def _nearest(path: Path) -> Path | None:
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate
        except OSError:
            return None
    return None


def cache_state(path: str) -> dict[str, Any]:
    """Whether this user can create files where `path` is (or would be created)."""
    target = Path(path).expanduser()
    found = _nearest(target)
    out: dict[str, Any] = {"exists": found == target, "checked": None, "writable": None}
    if found is None:
        return out
    out["checked"] = str(found)
    # A cache that does not exist yet is created by the library: its nearest existing
    # parent must take a new directory. A file in the way is not writable as a directory.
    out["writable"] = found.is_dir() and os.access(found, os.W_OK | os.X_OK)
    try:
        out["read_only_mount"] = bool(os.statvfs(found).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        out["read_only_mount"] = None
    return out


def net_interfaces(deps: ProbeDeps) -> list[str] | None:
    try:
        return sorted(p.name for p in (deps.root / "sys/class/net").iterdir())
    except OSError:
        return None


def probe_limits(deps: ProbeDeps) -> dict[str, Any]:
    """The `limits` section."""
    home = deps.home
    linux = deps.platform.system == "linux"
    caches = []
    for what, path in cache_dirs(deps.environ, home):
        state = cache_state(path)
        if state["checked"]:
            state["checked"] = redact_home(state["checked"], home)
        caches.append({"name": what, "path": redact_home(path, home), **state})
    return {
        "limits": {
            "rlimits": rlimits() if sys.platform != "win32" else {},
            "euid": os.geteuid() if hasattr(os, "geteuid") else None,
            "pids_cgroup": pids_cgroup(deps) if linux else None,
            "memory_max": memory_max(deps) if linux else None,
            "caches": caches,
            "net_interfaces": net_interfaces(deps) if linux else None,
        }
    }
