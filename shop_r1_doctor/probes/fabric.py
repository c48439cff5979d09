"""Host facts that decide whether NCCL and Triton can use what the kernel exposes.

- InfiniBand: HCAs listed in /sys/class/infiniband are visible even in a container that
  was started without `--device /dev/infiniband` or with the default 64 KiB memlock; NCCL
  then picks the IB transport and fails in `ibv_create_qp`.
- libcuda under WSL: the driver's libcuda.so lives in /usr/lib/wsl/lib; when ldconfig does
  not list it, Triton stops with "libcuda.so cannot found!".
Both are read from `deps.root` (and `ldconfig -p` through `deps.runner`), so tests use a
temporary file-system root and recorded command output.
"""

from __future__ import annotations

import subprocess
from typing import Any

from shop_r1_doctor.probes.deps import ProbeDeps

LDCONFIG_TIMEOUT = 5.0


def memlock_limit(limits_text: str | None) -> int | None:
    """The soft 'Max locked memory' of /proc/self/limits in bytes; -1 for unlimited."""
    for line in (limits_text or "").splitlines():
        if line.startswith("Max locked memory"):
            soft = line[len("Max locked memory") :].split()[0]
            if soft == "unlimited":
                return -1
            return int(soft) if soft.isdigit() else None
    return None


def probe_infiniband(deps: ProbeDeps) -> dict[str, Any] | None:
    """None on a host without the infiniband class (nothing to check, and not unknown)."""
    sys_class = deps.root / "sys/class/infiniband"
    try:
        devices = sorted(p.name for p in sys_class.iterdir())
    except OSError:
        return None
    dev = deps.root / "dev/infiniband"
    try:
        limits = (deps.root / "proc/self/limits").read_text(errors="replace")
    except OSError:
        limits = None
    return {
        "sys_devices": devices,
        "dev_present": dev.is_dir() and any(p.name.startswith("uverbs") for p in dev.iterdir()),
        "memlock_bytes": memlock_limit(limits),
    }


def libcuda_in_ldconfig(deps: ProbeDeps) -> bool | None:
    """Whether `ldconfig -p` lists libcuda.so.1; None when ldconfig cannot be asked."""
    try:
        result = deps.runner(["ldconfig", "-p"], LDCONFIG_TIMEOUT)
        if result is None:  # some minimal images keep ldconfig only in /sbin
            result = deps.runner(["/sbin/ldconfig", "-p"], LDCONFIG_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result is None or result.returncode != 0:
        return None
    return "libcuda.so" in result.stdout


def probe_fabric(deps: ProbeDeps, wsl: int | None) -> dict[str, Any]:
    """Keys merged into the `host` section. ldconfig is asked only under WSL, where the
    missing link is the known failure (elsewhere the driver installer registers it)."""
    return {
        "infiniband": probe_infiniband(deps),
        "libcuda_in_ldconfig": libcuda_in_ldconfig(deps) if wsl else None,
    }
