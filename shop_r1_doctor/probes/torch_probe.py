"""Torch facts from a child interpreter, cached on what could change them.

`import torch` is the one slow step of the doctor (about 5 s cold on an H100 host) and
CUDA initialisation can abort the process (WSL2 `double free` in cuInit), so it runs in
a child with a timeout. The child initialises CUDA once (`is_available`, then the
device queries) and imports nothing else. Its answer is cached under the user cache dir
keyed on the torch/nvidia-*/triton dist-infos (names, versions, mtimes), the driver
version, the interpreter and the env vars torch reads at init: any change re-probes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from shop_r1_doctor.isolate import MARKER, ChildResult, run_child
from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps
from shop_r1_doctor.probes.packages import TORCH_KEY_PREFIXES

CACHE_PREFIX = "torch-facts-"  # one small file per key: several venvs keep their caches
CACHE_FORMAT = 1
ENV_PREFIXES = ("CUDA", "NVIDIA", "TORCH", "PYTORCH", "NCCL", "LD_LIBRARY_PATH", "PYTHON")

CHILD_CODE = f"""
import json, sys
r = {{}}
try:
    import torch
except BaseException as e:
    r["error"] = type(e).__name__ + ": " + str(e)
    print({MARKER!r} + json.dumps(r)); sys.stdout.flush(); sys.exit(0)
r["version"] = torch.__version__
r["cuda"] = torch.version.cuda
r["hip"] = getattr(torch.version, "hip", None)
r["git_version"] = getattr(torch.version, "git_version", None)
r["cxx11_abi"] = bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", False))
# The compiled arch flags, without initialising CUDA (get_arch_list() needs a device).
flags = getattr(torch._C, "_cuda_getArchFlags", lambda: None)()
r["arch_list"] = flags.split() if flags else []
try:
    r["nccl"] = ".".join(map(str, torch.cuda.nccl.version())) if torch.version.cuda else None
except Exception:
    r["nccl"] = None
r["error"] = None
# A marker line before CUDA init keeps the static facts readable if init aborts.
print({MARKER!r} + json.dumps(r)); sys.stdout.flush()
r["cuda_available"] = torch.cuda.is_available()
r["device_count"] = torch.cuda.device_count() if r["cuda_available"] else 0
if r["cuda_available"]:
    caps = [torch.cuda.get_device_capability(i) for i in range(r["device_count"])]
    r["capabilities"] = ["%d.%d" % c for c in caps]
    r["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
else:
    r["bf16_supported"] = False
print({MARKER!r} + json.dumps(r))
"""


def fingerprint(
    dists: Mapping[str, DistRecord], driver: str | None, python: str, environ: Mapping[str, str]
) -> str:
    # The child's code is part of the key: a doctor that asks torch more must re-ask.
    parts: list[Any] = [CACHE_FORMAT, CHILD_CODE, os.path.realpath(python), driver]
    for name in sorted(dists):
        if name.startswith(TORCH_KEY_PREFIXES):
            rec = dists[name]
            parts.append([name, rec.version, rec.path, rec.mtime])
    parts.append(sorted((k, v) for k, v in environ.items() if k.startswith(ENV_PREFIXES)))
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def cache_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"{CACHE_PREFIX}{key[:20]}.json"


def read_cache(cache_dir: Path, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(cache_path(cache_dir, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("torch"), dict):
        return data["torch"]
    return None


def write_cache(cache_dir: Path, key: str, facts: dict[str, Any]) -> None:
    # A cache we cannot write (read-only home) only costs speed next time.
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        path = cache_path(cache_dir, key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "torch": facts}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


def run_torch_child(deps: ProbeDeps, timeout: float) -> ChildResult:
    return run_child(
        CHILD_CODE, timeout, python=deps.python, env=deps.environ, extra_path=deps.extra_path
    )


def probe_torch(
    deps: ProbeDeps,
    dists: Mapping[str, DistRecord],
    driver: str | None,
    *,
    timeout: float,
    fast: bool = False,
    before_child: Callable[[], object] = lambda: None,
) -> tuple[dict[str, Any], ChildResult | None, str]:
    """-> (sections, the child's result or None when it did not run, a note).

    torch not installed -> `"torch": null`. fast=True never starts the child: the cache
    answers if valid, else the probe is skipped.
    """
    if "torch" not in dists:
        return {"torch": None}, None, "torch not installed"
    cache_dir = deps.resolved_cache_dir()
    key = fingerprint(dists, driver, deps.python, deps.environ)
    cached = read_cache(cache_dir, key)
    if cached is not None:
        return {"torch": cached}, None, "cached"
    if fast:
        return {}, None, "skipped (--fast)"
    before_child()
    result = run_torch_child(deps, timeout)
    if result.status == "ok" and isinstance(result.value, dict):
        facts = result.value
        if facts.get("error") is None and "cuda_available" in facts:
            write_cache(cache_dir, key, facts)
        return {"torch": facts}, result, ""
    # What the child printed before dying (version, build, arch list) is still true.
    partial = result.value if isinstance(result.value, dict) else {}
    return {"torch": {**partial, "error": f"{result.status}: {result.detail}"}}, result, ""
