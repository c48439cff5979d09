"""Import health of native extensions, one child interpreter per package.

Importing flash_attn, vllm._C or apex's CUDA extensions can raise `undefined symbol`
(built against another torch), abort the process, or hang (deepspeed probing nvcc), so
each package is imported in its own child with a timeout, and only when installed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib.machinery import PathFinder
from typing import Any

from shop_r1_doctor.isolate import MARKER, ChildResult, run_child
from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.redact import redact_text


@dataclass(frozen=True)
class ImportGroup:
    """`modules` are imported in order in one child; the first names the package."""

    key: str
    modules: tuple[str, ...]


GROUPS = (
    ImportGroup("flash_attn", ("flash_attn", "flash_attn_2_cuda")),
    ImportGroup("flash_attn_interface", ("flash_attn_interface",)),  # FlashAttention-3
    ImportGroup("vllm", ("vllm", "vllm._C")),
    ImportGroup("deepspeed", ("deepspeed",)),
    ImportGroup("apex", ("apex", "amp_C", "fused_weight_gradient_mlp_cuda")),
    # what transformers imports for `use_liger_kernel` (pulls in triton and transformers)
    ImportGroup("liger_kernel", ("liger_kernel", "liger_kernel.transformers")),
)


def child_code(modules: tuple[str, ...]) -> str:
    # A marker line after each module keeps earlier answers if a later import aborts.
    return f"""
import importlib, json, sys
r = {{}}
for m in {list(modules)!r}:
    try:
        mod = importlib.import_module(m)
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
