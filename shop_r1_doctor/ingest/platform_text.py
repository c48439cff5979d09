"""The OS as dumps word it: `Ubuntu 22.04.4 LTS (x86_64)`, `Linux-5.15...-WSL2-x86_64-with-glibc2.35`."""

from __future__ import annotations

import re
from typing import Any


def host_from_os(value: str) -> dict[str, Any]:
    """collect_env's `OS:` line -> os, os_release, arch."""
    # `Ubuntu 22.04.4 LTS (x86_64)`; `... 7.6 (Maipo)` is a code name, not an architecture.
    m = re.match(
        r"^(?P<release>.*?)\s*(?:\((?P<arch>x86_64|aarch64|arm64|ppc64le|s390x|AMD64)\))?$",
        value.strip(),
    )
    release = m.group("release") if m else value.strip()
    out: dict[str, Any] = {}
    lowered = release.lower()
    if "windows" in lowered:
        out["os"] = "windows"
    elif "macos" in lowered or "mac os" in lowered or "darwin" in lowered:
        out["os"] = "darwin"
    elif release:
        out["os"] = "linux"  # collect_env names the distribution on Linux
    if release:
        out["os_release"] = release
    if m and m.group("arch"):
        out["arch"] = m.group("arch")
    return out


def host_from_platform(value: str) -> dict[str, Any]:
    """`platform.platform()` -> os, kernel, arch and WSL (from the kernel's name)."""
    text = value.strip()
    out: dict[str, Any] = {}
    linux = re.match(r"^Linux-(?P<kernel>.+?)-(?P<arch>x86_64|aarch64|arm64|ppc64le|s390x)-", text)
    if linux:
        kernel = linux.group("kernel")
        out.update(os="linux", kernel=kernel, arch=linux.group("arch"))
        # WSL2 kernels end in `microsoft-standard-WSL2`; WSL1 reports `4.4.0-19041-Microsoft`.
        if "microsoft-standard" in kernel.lower() or "wsl2" in kernel.lower():
            out["wsl"] = 2
        elif kernel.endswith("-Microsoft"):
            out["wsl"] = 1
        else:
            out["wsl"] = None
    elif text.startswith("Windows-"):
        out["os"] = "windows"
    elif text.startswith(("macOS-", "Darwin-")):
        out["os"] = "darwin"
    return out
