"""CUDA toolkit: CUDA_HOME and every `nvcc` on PATH with its version.

Extension builds (flash-attn, apex, deepspeed ops) use CUDA_HOME (CUDA_PATH on
Windows), else the first nvcc on PATH, else /usr/local/cuda; several toolkits on PATH
are a classic source of "detected CUDA version mismatches" errors, so all are listed.
"""

from __future__ import annotations

import os
import re
from typing import Any

from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.redact import redact_home


def parse_nvcc_version(text: str) -> str | None:
    """`Cuda compilation tools, release 12.8, V12.8.93` -> "12.8"."""
    match = re.search(r"release (\d+\.\d+)", text)
    return match.group(1) if match else None


def nvcc_on_path(deps: ProbeDeps) -> list[str]:
    names = ("nvcc.exe", "nvcc") if deps.platform.system == "windows" else ("nvcc",)
    found: list[str] = []
    seen: set[str] = set()
    for directory in deps.path_dirs():
        for name in names:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                real = os.path.realpath(candidate)
                if real not in seen:  # /usr/local/cuda/bin and /usr/local/cuda-12.8/bin
                    seen.add(real)
                    found.append(candidate)
    return found


def probe_cuda_toolkit(deps: ProbeDeps, timeout: float = 10.0) -> dict[str, Any]:
    env = deps.environ
    on_path = nvcc_on_path(deps)
    cuda_home, source = None, None
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(name):
            cuda_home, source = env[name], name
            break
    if cuda_home is None and on_path:
        cuda_home, source = os.path.dirname(os.path.dirname(on_path[0])), "nvcc on PATH"
    default = deps.root / "usr" / "local" / "cuda"
    if cuda_home is None and default.is_dir():
        cuda_home, source = str(default), "default"
    exe = "nvcc.exe" if deps.platform.system == "windows" else "nvcc"
    home_nvcc = os.path.join(cuda_home, "bin", exe) if cuda_home else None
    candidates = list(on_path)
    if home_nvcc and os.path.isfile(home_nvcc) and home_nvcc not in candidates:
        candidates.insert(0, home_nvcc)
    versions: dict[str, str | None] = {}
    for path in candidates:
        result = deps.runner([path, "--version"], timeout)
        versions[path] = parse_nvcc_version(result.stdout) if result else None
    chosen = home_nvcc if home_nvcc in versions else (on_path[0] if on_path else None)

    def r(path: str | None) -> str | None:
        return redact_home(path, deps.home) if path else None

    return {
        "cuda_toolkit": {
            "cuda_home": r(cuda_home),
            "cuda_home_source": source,
            "cuda_home_exists": os.path.isdir(cuda_home) if cuda_home else None,
            "nvcc": r(chosen),
            "nvcc_version": versions.get(chosen) if chosen else None,
            "nvcc_on_path": [r(p) for p in on_path],
            "nvcc_versions": {r(p): v for p, v in versions.items()},
        }
    }
