"""Import health of native extensions, one child interpreter per package.

Importing flash_attn, vLLM's kernels or apex's CUDA extensions can raise `undefined
symbol` (built against another torch), abort the process, or hang (deepspeed probing
nvcc), so each package is imported in its own child with a timeout, and only when
installed.

vLLM is judged the way vLLM loads itself, not by a private module name: its compiled ops
moved from `vllm._C` (<= 0.2x) to `_C_stable_libtorch` (0.26) and may move again.
`vllm._custom_ops` (present in every release) calls the platform's kernel loader, which
logs "Failed to import from vllm.<module>: ..." and carries on instead of raising; the
child records such a log line as that import's failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from shop_r1_doctor.isolate import MARKER, ChildResult, run_child
from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps
from shop_r1_doctor.redact import redact_text


@dataclass(frozen=True)
class ImportGroup:
    """`modules` are imported in order in one child; the first names the package.

    `on_demand` groups are optional packages whose import costs more than the doctor's
    whole budget (`liger_kernel.transformers` pulls in triton and transformers: ~19 s on
    the H100 with the full stack, past the 20 s probe limit; `vllm` + its kernels ~16 s). They are imported only when
    the caller asks (the plan uses them), and their answer is cached on what could change
    it, like the torch facts; otherwise the package metadata is all the doctor reads.
    """

    key: str
    modules: tuple[str, ...]
    on_demand: bool = False
    dist: str = ""  # the distribution whose metadata stands in (on_demand groups)


GROUPS = (
    ImportGroup("flash_attn", ("flash_attn", "flash_attn_2_cuda")),
    ImportGroup("flash_attn_interface", ("flash_attn_interface",)),  # FlashAttention-3
    # vLLM's import took ~16 s on the H100: on demand too (the plan uses vLLM)
    ImportGroup("vllm", ("vllm", "vllm._custom_ops"), on_demand=True, dist="vllm"),
    ImportGroup("deepspeed", ("deepspeed",)),
    ImportGroup("apex", ("apex", "amp_C", "fused_weight_gradient_mlp_cuda")),
    # what transformers imports for `use_liger_kernel` (pulls in triton and transformers)
    ImportGroup(
        "liger_kernel",
        ("liger_kernel", "liger_kernel.transformers"),
        on_demand=True,
        dist="liger-kernel",
    ),
)
CACHE_PREFIX = "imports-"
# the answer depends on the group's own package and on what it imports (torch, triton,
# transformers): their versions and install times key the cache.
KEY_DISTS = ("torch", "triton", "transformers", "nvidia-")


def child_code(modules: tuple[str, ...]) -> str:
    # A marker line after each module keeps earlier answers if a later import aborts.
    # Packages that load their kernels in a try/except and only LOG the failure (vLLM's
    # platform.import_kernels) are caught by a handler on the root logger and on the
    # package's own logger (vLLM's does not propagate).
    return f"""
import importlib, json, logging, sys
class _Failed(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []
    def emit(self, record):
        try:
            text = record.getMessage()
        except Exception:
            return
        if text.startswith("Failed to import"):
            self.lines.append(text)
_h = _Failed()
r = {{}}
for m in {list(modules)!r}:
    for name in ("", m.split(".")[0]):
        logging.getLogger(name).addHandler(_h)
    _h.lines = []
    try:
        mod = importlib.import_module(m)
        if _h.lines:
            r[m] = {{"ok": False, "error": ("ImportError: " + _h.lines[0])[:2000]}}
        else:
            r[m] = {{"ok": True, "error": None, "version": getattr(mod, "__version__", None)}}
    except BaseException as e:
        r[m] = {{"ok": False, "error": (type(e).__name__ + ": " + str(e))[:2000]}}
    print({MARKER!r} + json.dumps(r)); sys.stdout.flush()
"""


def installed_groups(deps: ProbeDeps) -> tuple[list[ImportGroup], list[ImportGroup]]:
    """-> (installed, absent), found without importing anything."""
    path = [*deps.extra_path, *sys.path]
    present: list[ImportGroup] = []
    absent: list[ImportGroup] = []
    for group in GROUPS:
        (present if PathFinder.find_spec(group.modules[0], path) else absent).append(group)
    return present, absent


def cache_key(deps: ProbeDeps, group: ImportGroup, dists: Mapping[str, DistRecord]) -> str:
    parts: list[Any] = [child_code(group.modules), os.path.realpath(deps.python)]
    for name in sorted(dists):
        if name == group.dist or name.startswith(KEY_DISTS):
            rec = dists[name]
            parts.append([name, rec.version, rec.path, rec.mtime])
    parts.append(list(deps.extra_path))
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _cache_file(deps: ProbeDeps, group: ImportGroup, key: str) -> Path:
    return deps.resolved_cache_dir() / f"{CACHE_PREFIX}{group.key}-{key[:16]}.json"


def read_cached(deps: ProbeDeps, group: ImportGroup, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_cache_file(deps, group, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("imports"), dict):
        return data["imports"]
    return None


def write_cached(deps: ProbeDeps, group: ImportGroup, key: str, answer: dict[str, Any]) -> None:
    try:  # a cache we cannot write only costs speed next time
        path = _cache_file(deps, group, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "imports": answer}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


def metadata_only(group: ImportGroup, dists: Mapping[str, DistRecord]) -> dict[str, Any]:
    """What an on-demand group's record says when it was not imported: `ok` is unknown."""
    rec = dists.get(group.dist)
    note = "not imported (the plan does not use it); installed per its metadata"
    return {
        m: {"ok": None, "error": None, "version": rec.version if rec else None, "checked": note}
        for m in group.modules
    }


def probe_on_demand(
    deps: ProbeDeps,
    group: ImportGroup,
    dists: Mapping[str, DistRecord],
    timeout: float,
    *,
    wanted: bool,
) -> tuple[dict[str, Any], ChildResult | None, str]:
    """-> (sections, the child's result or None, note): cached answer, a child when
    `wanted`, else the metadata record. Only definite answers (ok / error) are cached."""
    key = cache_key(deps, group, dists)
    cached = read_cached(deps, group, key)
    if cached is not None:
        return {"imports": cached}, None, "cached"
    if not wanted:
        return {"imports": metadata_only(group, dists)}, None, "skipped (not in the plan)"
    sections, child = probe_import_group(deps, group, timeout)
    if child.status in ("ok", "error"):
        write_cached(deps, group, key, sections["imports"])
    return sections, child, ""


def _clean(text: str, deps: ProbeDeps) -> str:
    return redact_text(text, home=deps.home)


def probe_import_group(
    deps: ProbeDeps, group: ImportGroup, timeout: float
) -> tuple[dict[str, Any], ChildResult]:
    """-> ({"imports": {module: {ok, error, version}}}, the child's result).

    A module that fails to import turns the child's `ok` into `error` for the probe
    record, so the failure is visible in `probes` as well as in `imports`.
    """
    result = run_child(
        child_code(group.modules),
        timeout,
        python=deps.python,
        env=deps.environ,
        extra_path=deps.extra_path,
    )
    answers = result.value if isinstance(result.value, dict) else {}
    imports: dict[str, Any] = {}
    for module in group.modules:
        answer = answers.get(module)
        if isinstance(answer, dict):
            if answer.get("error"):
                answer["error"] = _clean(answer["error"], deps)
            imports[module] = answer
        elif result.status != "ok":
            imports[module] = {
                "ok": False,
                "error": _clean(f"{result.status}: {result.detail}", deps),
            }
    if result.status == "ok":
        failed = [m for m, a in imports.items() if not a.get("ok")]
        if failed:
            first = imports[failed[0]]["error"]
            result = ChildResult("error", result.seconds, result.value, f"{failed[0]}: {first}")
    else:
        result = ChildResult(
            result.status, result.seconds, result.value, _clean(result.detail, deps)
        )
    return {"imports": imports}, result
