"""Torch facts from a child interpreter, cached on what could change them.

`import torch` is the one slow step of the doctor (about 5 s cold on an H100 host) and
CUDA initialisation can abort the process (WSL2 `double free` in cuInit), so it runs in
a child with a timeout. The child initialises CUDA once (`is_available`, then the
device queries) and imports nothing else. Its answer is cached under the user cache dir
keyed on the torch/nvidia-*/triton dist-infos (names, versions, mtimes), the driver
version, the interpreter and the env vars torch reads at init: any change re-probes.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from shop_r1_doctor.isolate import (
    MARKER,
    ChildResult,
    child_env,
    run_child,
    start_child,
    wait_child,
)
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


# A torch child started at the command's first line, before the CLI's own imports and
# the probes that decide whether it is needed (the cache): `import torch` is the doctor's
# critical path, and this takes 0.15-0.25 s off a cold run. The probe adopts it when it
# was started exactly as the probe would start it, and kills it otherwise (cache hit,
# another interpreter or environment); at exit it is killed if still unclaimed.
_early: tuple[tuple[str, dict[str, str]], subprocess.Popen[str], float] | None = None
_early_lock = threading.Lock()


def prestart(python: str | None = None, environ: Mapping[str, str] | None = None) -> None:
    """Start the torch child now for a probe that will likely need it (see `_early`)."""
    global _early
    launch = (python or sys.executable, child_env(os.environ if environ is None else environ))
    with _early_lock:
        if _early is not None:
            return
        try:
            proc = start_child(CHILD_CODE, python=launch[0], env=launch[1])
        except OSError:
            return  # the probe will start it and say why it could not
        _early = (launch, proc, time.perf_counter())
    atexit.register(discard_prestarted)


def discard_prestarted() -> None:
    """Kill an unclaimed early child (the cache answered, or the command never probed)."""
    global _early
    with _early_lock:
        early, _early = _early, None
    if early is not None and early[1].poll() is None:
        early[1].kill()
        early[1].communicate()


def _adopt(python: str, env: Mapping[str, str]) -> tuple[subprocess.Popen[str], float] | None:
    global _early
    with _early_lock:
        early, _early = _early, None
    if early is None:
        return None
    launch, proc, started = early
    if launch == (python, dict(env)):
        return proc, started
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
    return None


def run_torch_child(deps: ProbeDeps, timeout: float) -> ChildResult:
    adopted = _adopt(deps.python, child_env(deps.environ, deps.extra_path))
    if adopted is not None:
        return wait_child(*adopted, timeout)
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
        discard_prestarted()
        return {"torch": None}, None, "torch not installed"
    cache_dir = deps.resolved_cache_dir()
    key = fingerprint(dists, driver, deps.python, deps.environ)
    cached = read_cache(cache_dir, key)
    if cached is not None or fast:
        discard_prestarted()
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
