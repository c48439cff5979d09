"""The doctor's public API: everything the trainer (`shop_r1`) may use, in one place.

`shop_r1` imports `shop_r1_doctor.api` (and `shop_r1_doctor.errors` for `ToolError`),
never the doctor's internals; an import-linter contract in pyproject.toml enforces it.
The doctor never imports the trainer. Pure-Python models (memory/FLOPs, facts,
findings, the run plan) are re-exported here; the costly parts (probes, checks,
redaction) are imported when called, so `import shop_r1_doctor.api` stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from shop_r1_doctor.atomic import atomic_open, atomic_path, write_text
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, parse_version, shown
from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.knowledge import grpo_vllm_speedup
from shop_r1_doctor.memory import (
    GIB,
    KNOWN_SHAPES,
    LOADER_SHM_MIN,
    ModelShape,
    estimate_training_memory,
    flops_per_token,
    vllm_memory_fraction,
)
from shop_r1_doctor.runplan import RUNPLAN_SCHEMA, PlanShape, RunPlan, trl_plan_fields
from shop_r1_doctor.schema import Reader
from shop_r1_doctor.trl_rules import (
    TRL_DEFAULTS,
    accumulation_steps,
    effective_batch,
    grpo_batch,
    grpo_generation_unit,
    round_up_to,
    sft_effective_batch,
    vllm_layout,
)
from shop_r1_doctor.yamlio import SafeLoader, read_yaml

__all__ = [
    "GIB",
    "KNOWN_SHAPES",
    "LOADER_SHM_MIN",
    "NOT_PROBED",
    "RUNPLAN_SCHEMA",
    "TRL_DEFAULTS",
    "Facts",
    "Finding",
    "GpuFacts",
    "ModelShape",
    "PlanShape",
    "Reader",
    "RunPlan",
    "SafeLoader",
    "Severity",
    "ToolError",
    "accumulation_steps",
    "atomic_open",
    "atomic_path",
    "cache_dir",
    "collect_snapshot",
    "effective_batch",
    "estimate_training_memory",
    "finding",
    "finding_json",
    "flops_per_token",
    "grpo_batch",
    "grpo_generation_unit",
    "grpo_vllm_speedup",
    "liger_triton_pins",
    "load_snapshot",
    "parse_version",
    "peak_flops",
    "read_yaml",
    "redact_text",
    "render_finding",
    "round_up_to",
    "run_checks",
    "sft_effective_batch",
    "shown",
    "trl_plan_fields",
    "vllm_layout",
    "vllm_memory_fraction",
    "write_text",
]


def collect_snapshot(
    *,
    fast: bool = False,
    timeout: float = 60.0,
    output_dir: str | None = None,
    want_imports: tuple[str, ...] = (),
) -> dict[str, Any]:
    """This machine's facts (the snapshot contract, docs/doctor.md); risky probes isolated.
    `output_dir`: also record its free disk (the checkpoint check reads it).
    `want_imports`: optional kernels the plan may use, imported (else read from metadata)."""
    from shop_r1_doctor.probes.collect import collect_snapshot as collect
    from shop_r1_doctor.probes.deps import ProbeDeps

    return collect(
        fast=fast, timeout=timeout, deps=ProbeDeps(output_dir=output_dir), want_imports=want_imports
    )


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """A saved `shop-r1 doctor --save` snapshot, validated against the contract."""
    from shop_r1_doctor.snapshot import load_snapshot as load

    return load(path)


def run_checks(snapshot: dict[str, Any]) -> list[Finding]:
    """Every doctor check on a snapshot (with its `plan`), errors first."""
    from shop_r1_doctor.checks import run_checks as run

    return run(snapshot)


def finding(
    code: str,
    title: str,
    *,
    detail: str = "",
    fix: str | None = None,
    severity: Severity | None = None,
    urls: Iterable[str] = (),
) -> Finding:
    """A Finding for a catalogued code (knowledge/codes.yaml): severity, fix, sources filled in."""
    from shop_r1_doctor.catalog import finding as build

    return build(code, title, detail=detail, fix=fix, severity=severity, urls=urls)


def render_finding(
    f: Finding, *, stream: IO[Any] | None = None, verbose: bool = False, note: str = ""
) -> str:
    """A finding's block as every command prints it (`MARK title [CODE] (note)`, then
    detail, fix, source), redacted. With `stream`: its encoding's marks, and colour when
    it is a terminal and NO_COLOR is unset; without: UTF-8, no colour."""
    from shop_r1_doctor.render import findings as rf

    encoding = rf.stream_encoding(stream) if stream is not None else "utf-8"
    color = rf.wants_color(stream) if stream is not None else False
    return rf.render_finding(f, encoding=encoding, verbose=verbose, color=color, note=note)


def finding_json(f: Finding) -> dict[str, Any]:
    """A finding as every `--json` document carries it, redacted."""
    from shop_r1_doctor.render.findings import finding_json as to_json

    return to_json(f)


def peak_flops(gpu_name: str | None, dtype: str = "bf16") -> float | None:
    """Dense tensor-core peak FLOP/s of a GPU by name (knowledge/gpus.yaml); None if unknown."""
    from shop_r1_doctor.hardware import gpu_info

    info = gpu_info(gpu_name)
    return info.peak_flops(dtype) if info else None


def liger_triton_pins(liger_version: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The per-op variables that keep Liger's kernels on Triton (knowledge/compat.yaml's
    `liger_cutedsl`): empty outside the Liger versions whose dispatcher prefers CuTe DSL,
    or when the environment already chooses an implementation."""
    from packaging.version import InvalidVersion, Version

    from shop_r1_doctor.knowledge import load_compat

    rule = load_compat().liger_cutedsl
    try:
        if liger_version is None or not rule.liger.contains(Version(liger_version), True):
            return {}
    except InvalidVersion:
        return {}
    pins = rule.env()
    if any(environ.get(k) for k in ("LIGER_KERNEL_IMPL", "LIGER_KERNEL_BACKEND", *pins)):
        return {}
    return pins


def redact_text(text: str) -> str:
    """Tokens, keys, passwords and the home directory taken out of text that is shown."""
    from shop_r1_doctor.redact import redact_text as redact

    return redact(text)


def cache_dir() -> Path:
    """shop-r1's cache directory (SHOP_R1_CACHE_DIR, else the platform's user cache)."""
    import os

    from shop_r1_doctor.probes.deps import default_cache_dir

    return default_cache_dir(os.environ)
