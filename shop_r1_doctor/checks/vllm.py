"""vLLM against torch (its exact pin), the GPU, the platform and the environment."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from shop_r1_doctor.checks._base import (
    cc_text,
    finding,
    gpu_cc,
    gpu_name,
    torch_version,
    uses_vllm,
)
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.knowledge import load_compat, public
from shop_r1_doctor.target_python import pip_command


def _needed_if(needed: bool) -> Severity:
    return "error" if needed else "warning"


def requirement_on(facts: Facts, dist: str, target: str) -> Requirement | None:
    """`dist`'s declared requirement on `target` (markers already evaluated by the probe)."""
    for text in facts.requires(dist):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        extra_only = req.marker is not None and "extra" in str(req.marker)
        if canonicalize_name(req.name) == target and req.specifier and not extra_only:
            return req
    return None


def vllm_for_torch(torch: Version) -> str | None:
    """The vLLM range whose pin is this torch (for an install command that keeps it)."""
    rows = [r for r in load_compat().vllm_torch if r.value == public(torch).base_version]
    if not rows:
        return None
    return str(rows[-1].spec)


def vllm_requested(facts: Facts) -> Iterator[Finding]:
    if not uses_vllm(facts) or facts.installed("vllm") is not False or facts.os == "windows":
        return
    tv = torch_version(facts)
    spec = vllm_for_torch(tv) if tv else None
    keep = f" (this range keeps torch {tv.public})" if spec and tv else ""
    yield finding(
        "VLLM_REQUESTED_NOT_INSTALLED",
        "the plan sets use_vllm but vllm is not installed",
        detail="A plain `pip install vllm` replaces torch with the exact version the newest vLLM "
        "pins; flash-attn and other extensions built for your torch then break." + keep,
        fix=f'{pip_command(facts)} install "vllm{spec}"'
        if spec
        else f"{pip_command(facts)} install vllm  (it pins its own torch)",
    )


def vllm_torch_pin(facts: Facts) -> Iterator[Finding]:
    vv, tv = facts.version("vllm"), torch_version(facts)
    if vv is None or tv is None:
        return
    req = requirement_on(facts, "vllm", "torch")
    if req is not None:
        spec, source = req.specifier, f"vllm {vv}'s Requires-Dist"
    else:
        row = load_compat().vllm_torch_pin(vv)
        if row is None:
            return
        spec, source = SpecifierSet(f"=={row.value}"), f"compat table: {row.source}"
    if public(tv) in spec:
        return
    keep = vllm_for_torch(tv)
    yield finding(
        "VLLM_INSTALL_SWAPS_TORCH",
        f"vLLM {vv} requires torch{spec}; torch {tv} is installed",
        detail=f"From {source}. vllm's compiled ops are built for that torch: expect "
        "'undefined symbol' from vLLM's compiled ops, or pip swapping torch back on the next install.",
        fix=f'{pip_command(facts)} install "torch{spec}" (from the index of your CUDA) and rebuild extensions'
        + (
            f', or {pip_command(facts)} install "vllm{keep}" to keep torch {tv.public}'
            if keep
            else ""
        ),
    )


def vllm_windows(facts: Facts) -> Iterator[Finding]:
    if facts.os != "windows" or not (uses_vllm(facts) or facts.installed("vllm")):
        return
    yield finding(
        "VLLM_NATIVE_WINDOWS",
        "vLLM does not run natively on Windows",
        detail="'No module named vllm._C': vLLM supports Linux only (WSL2 works).",
    )


def vllm_import(facts: Facts) -> Iterator[Finding]:
    # `vllm._custom_ops` loads the compiled kernels the way vLLM does (probes/imports.py);
    # `vllm._C` is read too, from snapshots written before that probe.
    modules = ("vllm", "vllm._custom_ops", "vllm._C")
    failed = next((m for m in modules if facts.import_ok(m) is False), None)
    if facts.os == "windows" or failed is None:
        return
    yield finding(
        "VLLM_IMPORT_FAILED",
        f"vllm {facts.version('vllm') or ''} does not import".replace("  ", " "),
        severity=_needed_if(uses_vllm(facts)),
        detail=facts.import_error(failed),
        fix=f"{pip_command(facts)} install --force-reinstall vllm==<installed version> (matching its torch pin)",
    )


def _expandable(value: str | None) -> bool:
    return value is not None and "expandable_segments:true" in value.replace(" ", "").lower()


def expandable_segments(facts: Facts) -> Iterator[Finding]:
    vv = facts.version("vllm")
    if vv is None and not uses_vllm(facts):
        return
    cuda_conf = facts.env_value("PYTORCH_CUDA_ALLOC_CONF")
    alloc_conf = facts.env_value("PYTORCH_ALLOC_CONF")
    pooled = (
        facts.plan.vllm_enable_sleep_mode is True
        or facts.plan.vllm_mode == "colocate"
        or (facts.plan.vllm_tensor_parallel_size or 1) > 1
    )
    severity = _needed_if(pooled)
    name = f"vLLM {vv}" if vv else "vLLM"
    if _expandable(alloc_conf):
        yield finding(
            "VLLM_EXPANDABLE_SEGMENTS",
            f"PYTORCH_ALLOC_CONF={alloc_conf} with {name}: vLLM does not look at this name",
            severity=severity,
            detail="vLLM turns expandable segments off only when set through "
            "PYTORCH_CUDA_ALLOC_CONF (trl PR #5794): its memory pool then asserts 'Expandable "
            "segments are not compatible with memory pool' or custom all-reduce fails.",
            fix="unset PYTORCH_ALLOC_CONF for vLLM processes",
        )
    if not _expandable(cuda_conf):
        return
    rule = load_compat().vllm_expandable_rule(vv) if vv else None
    if rule is not None and rule.value == "handled":
        return
    yield finding(
        "VLLM_EXPANDABLE_SEGMENTS",
        f"PYTORCH_CUDA_ALLOC_CONF={cuda_conf} breaks {name}'s memory pool",
        severity=severity,
        detail="'AssertionError: Expandable segments are not compatible with memory pool' "
        "(sleep mode / colocate) or custom all-reduce 'invalid argument' (TP>1). Applies to "
        f"vLLM {rule.spec if rule else '0.8-0.20'} ({rule.source if rule else 'vllm PR #14189'}).",
        fix="unset PYTORCH_CUDA_ALLOC_CONF for vLLM processes",
    )


def attention_backend_env(facts: Facts) -> Iterator[Finding]:
    value = facts.env_value("VLLM_ATTENTION_BACKEND")
    vv = facts.version("vllm")
    if not value or vv is None:
        return
    rules = load_compat().vllm_attention_env
    if value.upper() == "XFORMERS" and vv > rules.xformers_removed_after:
        why = f"the XFORMERS backend was removed after vLLM {rules.xformers_removed_after}"
    elif vv >= rules.ignored_from:
        why = f"vLLM >= {rules.ignored_from} ignores VLLM_ATTENTION_BACKEND silently"
    elif vv >= rules.deprecated_from:
        why = f"VLLM_ATTENTION_BACKEND is deprecated since vLLM {rules.deprecated_from}"
    else:
        return
    yield finding(
        "VLLM_ATTENTION_BACKEND_IGNORED",
        f"VLLM_ATTENTION_BACKEND={value} with vLLM {vv}: {why}",
        detail=rules.source,
    )


def turing_backend(facts: Facts) -> Iterator[Finding]:
    if facts.version("vllm") is None and not uses_vllm(facts):
        return
    ccs = [(g, gpu_cc(g)) for g in facts.gpus]
    old = [(g, cc) for g, cc in ccs if cc is not None and (7, 0) <= cc < (8, 0)]
    if old:
        gpu, cc = old[0]
        yield finding(
            "VLLM_TURING_ATTENTION_BACKEND",
            f"vLLM has no FlashAttention backend for {gpu_name(gpu)} (cc {cc_text(cc)})",
            detail="'Cannot use FlashAttention-2 backend for Volta and Turing GPUs': vLLM falls "
            "back to a slower backend; some features are missing.",
        )


def forked_cuda(facts: Facts) -> Iterator[Finding]:
    tp = facts.plan.vllm_tensor_parallel_size or 1
    if tp <= 1 or facts.env_value("VLLM_WORKER_MULTIPROC_METHOD") == "spawn":
        return
    yield finding(
        "VLLM_FORKED_CUDA_REINIT",
        f"vLLM tensor_parallel_size={tp} with forked workers",
        detail="'Cannot re-initialize CUDA in forked subprocess' when CUDA was initialised first.",
    )


def v1_engine_vs_trl(facts: Facts) -> Iterator[Finding]:
    vv, trl = facts.version("vllm"), facts.version("trl")
    if vv is None or trl is None or vv < Version("0.8"):
        return
    row = next((r for r in load_compat().trl_vllm if r.value == "<0.8"), None)
    if row is None or public(trl) not in row.spec:
        return
    yield finding(
        "VLLM_V1_DEFAULT_BREAKS_RL_INTEGRATION",
        f"trl {trl} predates vLLM {vv}'s V1 engine",
        severity=_needed_if(uses_vllm(facts)),
        detail=f"trl reaches into V0 internals ('model_executor'; --worker-cls). {row.source}",
        fix=f"{pip_command(facts)} install -U 'trl[vllm]'",
    )


def xformers_pin(facts: Facts) -> Iterator[Finding]:
    xv, tv = facts.version("xformers"), torch_version(facts)
    req = requirement_on(facts, "xformers", "torch")
    if xv is None or tv is None or req is None or public(tv) in req.specifier:
        return
    yield finding(
        "XFORMERS_WHEEL_MISMATCH",
        f"xformers {xv} requires torch{req.specifier}; torch {tv} is installed",
        detail="'No operator found for memory_efficient_attention_forward': its kernels are "
        "built for another torch.",
        fix=f"{pip_command(facts)} uninstall -y xformers (vLLM >= 0.11.1 does not need it), or install the "
        "xformers release built for your torch",
    )


CHECKS = (
    vllm_requested,
    vllm_torch_pin,
    vllm_windows,
    vllm_import,
    expandable_segments,
    attention_backend_env,
    turing_backend,
    forked_cuda,
    v1_engine_vs_trl,
    xformers_pin,
)
