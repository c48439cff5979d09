"""TRL against the installed vLLM (TRL supports a bounded vLLM range)."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from shop_r1_doctor.checks._base import finding, uses_vllm
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.knowledge import load_compat, public
from shop_r1_doctor.target_python import pip_command


def _declared_vllm_range(facts: Facts) -> SpecifierSet | None:
    """trl's `vllm` extra, when the snapshot kept extras-only requirements."""
    for text in facts.requires("trl"):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name.lower() == "vllm" and req.specifier:
            return req.specifier
    return None


def trl_vllm_skew(facts: Facts) -> Iterator[Finding]:
    trl, vv = facts.version("trl"), facts.version("vllm")
    if trl is None or vv is None:
        return
    spec = _declared_vllm_range(facts)
    source = f"trl {trl}'s Requires-Dist"
    if spec is None:
        row = load_compat().trl_vllm_range(trl)
        if row is None or row.value.startswith("<"):  # the V0/V1 row is vllm.py's rule
            return
        spec, source = SpecifierSet(row.value), row.source
    if public(vv) in spec:
        return
    yield finding(
        "TRL_VLLM_VERSION_SKEW",
        f"trl {trl} supports vllm{spec}; vllm {vv} is installed",
        severity="error" if uses_vllm(facts) else "warning",
        detail=f"From {source}. Outside that range TRL's vLLM calls fail (e.g. 'unexpected "
        "keyword argument worker_extension_cls', 'invalid choice: vllm-serve').",
        fix=f'{pip_command(facts)} install "vllm{spec}" (or {pip_command(facts)} install -U "trl[vllm]")',
    )


CHECKS = (trl_vllm_skew,)
