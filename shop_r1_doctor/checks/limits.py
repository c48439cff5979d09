"""What the run inherits and cannot see until it fails: resource limits (open files,
processes and threads, address space), caches it cannot write, and environment variables
torch or NCCL reject at start-up (the `limits` section, probes/limits.py, and `env`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from shop_r1_doctor.checks._base import (
    bytes_gib,
    finding,
    torch_version,
    visible_gpus,
)
from shop_r1_doctor.facts import NOT_PROBED, Facts
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.knowledge import load_compat

UNLIMITED = -1

# Open files. With torch's default sharing strategy (file_descriptor) every tensor a
# DataLoader worker hands over holds a descriptor until the batch is freed; batches in
# flight are workers x prefetch_factor (2) x tensors per batch, on top of the few hundred
# CUDA, NCCL (a socket per peer) and the libraries keep open. Failures were recorded at
# 128 (tests/fixtures/faults/fd_limit) and are reported at the common default of 1024
# (detectron2#3953); 4096 is the first power of two that leaves room for both.
FD_SOFT_MIN = 4096
FD_ASK = 65535  # what torch's own message and Docker's docs suggest

# Processes and threads one training rank starts: torch's OpenMP pool and the tokenizers'
# Rayon pool, one thread per usable core each (recorded: an OpenMP pool failing at
# pids.max 8, a Rayon pool of 32 at 16; tests/fixtures/faults/process_limit), one process
# per DataLoader worker, and about 16 helper threads (CUDA's, NCCL's watchdog and proxy,
# the pin-memory thread, Python's) per rank.
THREADS_PER_CORE = 2
HELPER_THREADS = 16
DEFAULT_WORKERS = 2  # when no plan says


def _rlimit(facts: Facts, name: str) -> tuple[int, int] | None:
    rl = facts.limits.rlimits
    if rl is NOT_PROBED:
        return None
    limit = getattr(rl, name)
    if limit is NOT_PROBED or not isinstance(limit.soft, int):
        return None
    hard = limit.hard if isinstance(limit.hard, int) else UNLIMITED
    return limit.soft, hard


def _shown(n: int) -> str:
    return "unlimited" if n == UNLIMITED else str(n)


def fd_limit(facts: Facts) -> Iterator[Finding]:
    got = _rlimit(facts, "nofile")
    if got is None:
        return
    soft, hard = got
    if soft == UNLIMITED or soft >= FD_SOFT_MIN or facts.plan.dataloader_num_workers == 0:
        return
    raise_to = FD_ASK if hard == UNLIMITED else min(hard, FD_ASK)
    if raise_to >= FD_SOFT_MIN:
        fix = (
            f"ulimit -n {raise_to} in the shell or job script before the run (the hard limit "
            f"is {_shown(hard)}); or torch.multiprocessing.set_sharing_strategy('file_system')"
        )
    else:
        fix = (
            f"the hard limit is {hard}: raise it where the job starts (docker run --ulimit "
            f"nofile={FD_ASK}:{FD_ASK}, the pod's or scheduler's limits, /etc/security/"
            "limits.conf), or torch.multiprocessing.set_sharing_strategy('file_system')"
        )
    yield finding(
        "DATALOADER_FD_LIMIT",
        f"open files limit (ulimit -n) is {soft}, below {FD_SOFT_MIN}",
        detail="DataLoader workers hand each tensor over as a file descriptor; a run fails "
        "with 'Too many open files' or 'received 0 items of ancdata' once batches in flight "
        "and the libraries' own descriptors pass the limit.",
        fix=fix,
        severity="warning",
    )


def threads_needed(facts: Facts) -> tuple[int, str]:
    """Processes and threads the run is expected to start, and how that was counted."""
    cores = facts.host.cpu_usable
    if not isinstance(cores, int) or cores < 1:
        cores = facts.host.cpu_count if isinstance(facts.host.cpu_count, int) else 1
    gpus = len(visible_gpus(facts))
    ranks = facts.plan.num_processes or max(gpus, 1)
    workers = facts.plan.dataloader_num_workers
    workers = DEFAULT_WORKERS if workers is None else workers
    per_rank = THREADS_PER_CORE * cores + workers + HELPER_THREADS
    how = (
        f"{ranks} rank(s) x ({THREADS_PER_CORE} x {cores} cores for the OpenMP and Rayon "
        f"pools + {workers} DataLoader workers + {HELPER_THREADS} helper threads)"
    )
    return ranks * per_rank, how


def process_limit(facts: Facts) -> Iterator[Finding]:
    need, how = threads_needed(facts)
    pids = facts.limits.pids_cgroup
    if pids and isinstance(pids.max, int) and pids.max != UNLIMITED:
        current = pids.current if isinstance(pids.current, int) else 0
        left = pids.max - current
        if left < need:
            yield finding(
                "PROCESS_LIMIT_REACHED",
                f"the pids cgroup {pids.path} allows {pids.max} processes and threads "
                f"({current} in use), fewer than the {need} a run here starts",
                detail=f"Counted as {how}. Past the limit, fork and thread creation fail "
                "with EAGAIN: 'can't start new thread', libgomp's 'Thread creation failed', "
                "tokenizers' ThreadPoolBuildError. A snapshot sees the limit, not the moment "
                "it is reached.",
                fix=f"raise the limit to at least {need} (docker run --pids-limit -1 or "
                f"--pids-limit {need}, the pod's or job's pids limit); or fewer threads: "
                "OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false and "
                "fewer DataLoader workers",
                severity="warning",
            )
    nproc = _rlimit(facts, "nproc")
    euid = facts.limits.euid
    # root (and CAP_SYS_RESOURCE) is exempt from RLIMIT_NPROC
    if nproc is None or not isinstance(euid, int) or euid == 0:
        return
    soft, hard = nproc
    if soft != UNLIMITED and soft < need:
        fix = (
            f"ulimit -u {need if hard == UNLIMITED else min(need, hard)} before the run "
            f"(the hard limit is {_shown(hard)})"
        )
        if hard != UNLIMITED and hard < need:
            fix = (
                f"the hard limit is {hard}: raise it where the job starts (/etc/security/"
                "limits.conf nproc, the scheduler's limits); or OMP_NUM_THREADS=1 "
                "RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false and fewer DataLoader workers"
            )
        yield finding(
            "PROCESS_LIMIT_REACHED",
            f"max user processes (ulimit -u) is {soft} for uid {euid}, fewer than the {need} "
            "a run here starts",
            detail=f"Counted as {how}; the limit counts every thread of every process of "
            "this user on the machine.",
            fix=fix,
            severity="warning",
        )


def address_space_limit(facts: Facts) -> Iterator[Finding]:
    got = _rlimit(facts, "address_space")
    if got is None or got[0] == UNLIMITED:
        return
    soft, hard = got
    gpus = visible_gpus(facts)
    gpu_bytes = sum(g.memory_total_bytes for g in gpus if isinstance(g.memory_total_bytes, int))
    error = bool(gpu_bytes) and soft < gpu_bytes
    detail = (
        "Allocations and mappings are refused while RAM is free: torch's 'DefaultCPUAllocator: "
        "can't allocate memory', 'Cannot allocate memory (os error 12)' from safetensors' mmap, "
        "MemoryError."
    )
    if error:
        detail += (
            f" The visible GPUs hold {bytes_gib(gpu_bytes)}: CUDA maps device memory into "
            "the process's address space (unified addressing), torch's expandable segments "
            "reserve 1.125x a GPU's memory up front (pytorch/pytorch#192269) and NCCL's "
            "memory pools 2x per pool (NVIDIA/nccl#2064), so the GPUs cannot be used under "
            "this limit. Measured on an H100 80GB: CUDA's first use needs 16-24 GiB of "
            "address space, a 40 GiB allocation 48-64 GiB, an 8 GiB one with expandable "
            "segments 96-128 GiB (benchmarks/results/h100_vmem_limits/); below that CUDA "
            "says 'out of memory', as for a full GPU."
        )
    fix = "ulimit -v unlimited before the run"
    if hard != UNLIMITED:
        fix = (
            f"the hard limit is {bytes_gib(hard)}: ask the scheduler for resident memory "
            "(Slurm --mem) instead of virtual memory, or have the limit lifted where the job "
            "starts"
        )
    yield finding(
        "ADDRESS_SPACE_LIMIT",
        f"address space is limited (ulimit -v) to {bytes_gib(soft)}"
        + (f", less than the {bytes_gib(gpu_bytes)} of the visible GPUs" if error else ""),
        detail=detail,
        fix=fix,
        severity="error" if error else "warning",
    )


def _writable_temp(facts: Facts) -> str | None:
    caches = facts.limits.caches
    for c in caches if caches is not NOT_PROBED else ():
        if c.name == "TMPDIR" and c.writable is True and c.read_only_mount is not True:
            return c.path if isinstance(c.path, str) else None
    return None


HF_DERIVED = ("HF_HUB_CACHE", "HF_DATASETS_CACHE", "HF_MODULES_CACHE")


def cache_not_writable(facts: Facts) -> Iterator[Finding]:
    caches = facts.limits.caches
    if caches is NOT_PROBED:
        return
    temp = _writable_temp(facts)
    said: set[str] = set()
    for c in caches:
        if not isinstance(c.name, str) or not isinstance(c.path, str):
            continue
        ro = c.read_only_mount is True
        if c.writable is not False and not ro:
            continue
        # a derived cache not set on its own is fixed through HF_HOME
        var = "HF_HOME" if c.name in HF_DERIVED and facts.env_value(c.name) is None else c.name
        if var in said:
            continue
        said.add(var)
        where = c.checked if isinstance(c.checked, str) else c.path
        why = "is on a read-only file system" if ro else "is not writable by this user"
        place = (
            f"{temp.rstrip('/')}/{var.lower()}"
            if temp and var != "TMPDIR"
            else "<a directory you own>"
        )
        yield finding(
            "CACHE_DIR_NOT_WRITABLE",
            f"{c.name} {c.path} {why}"
            if where == c.path
            else f"{c.name} {c.path}: its nearest existing parent {where} {why}",
            detail=f"{c.name} is where the stack writes downloads, locks and compiled "
            "kernels; the first write fails with '[Errno 30] Read-only file system' or "
            "'[Errno 13] Permission denied'.",
            fix=f"mkdir -p {place} && export {var}={place}",
        )


def _ifname_entries(value: str) -> tuple[bool, bool, list[str]]:
    """NCCL's syntax: a leading ^ excludes, then a leading = matches names exactly (else
    as prefixes); a comma-separated list."""
    text = value.strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    return exclude, exact, [p.strip() for p in text.split(",") if p.strip()]


def _matches(name: str, entry: str, exact: bool) -> bool:
    return name == entry if exact else name.startswith(entry)


def socket_ifname(facts: Facts) -> Iterator[Finding]:
    ifaces = facts.limits.net_interfaces
    if not ifaces:  # NOT_PROBED, None (not Linux) or nothing listed
        return
    listed = ", ".join(ifaces)
    value = facts.env_value("NCCL_SOCKET_IFNAME")
    if value is not None and value.strip():
        exclude, exact, entries = _ifname_entries(value)
        hits = [i for i in ifaces if any(_matches(i, e, exact) for e in entries)]
        usable = [i for i in ifaces if i not in hits] if exclude else hits
        if entries and not usable:
            yield finding(
                "NCCL_SOCKET_IFNAME_NO_MATCH",
                f"NCCL_SOCKET_IFNAME={value} "
                + ("excludes every interface" if exclude else "names no interface")
                + f" of this machine ({listed})",
                detail="NCCL stops at init with 'Bootstrap : no socket interface found'.",
                fix=f"unset NCCL_SOCKET_IFNAME, or set it to an interface every node has "
                f"(here: {listed}; `ip -br addr` lists them)",
            )
    gloo = facts.env_value("GLOO_SOCKET_IFNAME")
    if gloo is not None and gloo.strip():
        names = [n.strip() for n in gloo.split(",") if n.strip()]
        missing = [n for n in names if n not in ifaces]
        if missing:
            yield finding(
                "NCCL_SOCKET_IFNAME_NO_MATCH",
                f"GLOO_SOCKET_IFNAME={gloo} names {', '.join(missing)}, not an interface of "
                f"this machine ({listed})",
                detail="gloo takes exact interface names; init_process_group fails to find "
                "or bind the device.",
                fix=f"unset GLOO_SOCKET_IFNAME, or set it to an interface every node has "
                f"(here: {listed})",
            )


def _split_conf(value: str) -> list[str]:
    """Entries of an allocator config: commas outside [...], spaces dropped (torch's lexer
    skips them)."""
    out, depth, cur = [], 0, ""
    for ch in value.replace(" ", ""):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth <= 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [e for e in out if e]


def _entry_fix(conf: Any, entry: str) -> str | None:
    """The entry as torch would take it: a misspelt key corrected when one known key is
    close, a boolean spelled True/False; None when it cannot be saved (drop it)."""
    key, sep, val = entry.partition(":")
    if not sep:
        return None
    info = conf.key(key)
    if info is None:
        near = difflib.get_close_matches(key, [k.key for k in conf.keys], n=1, cutoff=0.6)
        if not near:
            return None
        info, key = conf.key(near[0]), near[0]
    if info.value == "bool" and val not in ("True", "False"):
        val = "True" if val.lower() in ("true", "1", "yes", "on") else "False"
    if info.value == "backend" and val not in ("native", "cudaMallocAsync"):
        return None
    return f"{key}:{val}"


def alloc_conf(facts: Facts) -> Iterator[Finding]:
    if not facts.installed("torch") and not facts.torch:
        return
    conf = load_compat().cuda_alloc_conf
    known = ", ".join(sorted(k.key for k in conf.keys))
    version = torch_version(facts)
    for var in conf.variables:
        value = facts.env_value(var)
        if value is None or not value.strip():
            continue
        entries = _split_conf(value)
        saved = [f for f in (_entry_fix(conf, e) for e in entries) if f]
        fix = f"export {var}={','.join(saved)}" if saved else f"unset {var}"
        for entry in entries:
            key, sep, val = entry.partition(":")
            info = conf.key(key) if sep else None
            if not sep:
                title = f"'{entry}' has no ':value'"
                detail = "torch reads comma-separated key:value pairs and stops at CUDA init on any other shape."
            elif info is None:
                near = difflib.get_close_matches(key, [k.key for k in conf.keys], n=1, cutoff=0.6)
                title = f"'{key}' is not a key torch accepts" + (
                    f" (did you mean '{near[0]}'?)" if near else ""
                )
                detail = (
                    f"torch stops at CUDA init: \"Unrecognized key '{key}' in CUDA allocator "
                    f'config." Keys torch reads: {known}.'
                )
            elif info.value == "bool" and val not in ("True", "False"):
                title = f"{key} takes True or False, not '{val}'"
                detail = (
                    f"torch stops at CUDA init: 'Expected a single True/False argument for {key}'."
                )
            elif info.value == "backend" and val not in ("native", "cudaMallocAsync"):
                title = f"backend is native or cudaMallocAsync, not '{val}'"
                detail = "torch stops at CUDA init: 'Unknown allocator backend'."
            elif (
                info.since is not None
                and version is not None
                and version.release < info.since.release
            ):
                yield finding(
                    "CUDA_ALLOC_CONF_INVALID",
                    f"{var}={value}: '{key}' is read from torch {info.since} on; torch here is "
                    f"{version}",
                    detail="Where this torch does not know the key it stops at CUDA init. "
                    f"Source: {info.source}.",
                    fix=f"upgrade torch to >= {info.since}, or drop {key} from {var}",
                    severity="info",
                )
                continue
            else:
                continue
            yield finding(
                "CUDA_ALLOC_CONF_INVALID", f"{var}={value}: {title}", detail=detail, fix=fix
            )


CHECKS = (
    fd_limit,
    process_limit,
    address_space_limit,
    cache_not_writable,
    socket_ifname,
    alloc_conf,
)
