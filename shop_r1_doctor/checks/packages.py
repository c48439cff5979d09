"""Declared requirements across installed dists (the `pip check` kind), numpy 2, Megatron.

Pairs that a catalog id names exactly are left to their own rule: vLLM's and xformers'
torch pins (vllm.py), torch's NCCL pin (nccl.py), numpy<2 pins (numpy rules below).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from packaging.markers import (
    InvalidMarker,
    UndefinedComparison,
    UndefinedEnvironmentName,
    default_environment,
)
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from shop_r1_doctor.checks._base import (
    env_set,
    finding,
    torch_version,
)
from shop_r1_doctor.facts import NOT_PROBED, Facts, parse_version
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.knowledge import load_compat
from shop_r1_doctor.target_python import pip_command

OPENCV = ("opencv-python", "opencv-python-headless")
NAMED_ELSEWHERE = {("vllm", "torch"), ("xformers", "torch")}


def marker_env(facts: Facts) -> dict[str, str]:
    """Marker variables of the snapshot's machine (not of the one re-running checks)."""
    py = facts.host.python
    version = py.version if py else None
    system = {"linux": "Linux", "windows": "Windows", "darwin": "Darwin"}.get(facts.os or "", "")
    env = {
        "extra": "",
        "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}.get(system, ""),
        "platform_system": system,
        "platform_machine": str(facts.host.arch or ""),
        "os_name": "nt" if system == "Windows" else "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    if isinstance(version, str) and version.count(".") >= 1:
        env["python_version"] = ".".join(version.split(".")[:2])
        env["python_full_version"] = version
        env["implementation_version"] = version
    return env


# packaging fills a variable the snapshot lacks from the interpreter re-running the checks
MARKER_NAMES = tuple(default_environment())


def _applies(req: Requirement, env: dict[str, str]) -> bool:
    if req.marker is None:
        return True
    text = str(req.marker)
    if any(name in text for name in MARKER_NAMES if name not in env):
        return False  # the snapshot's value is unknown (e.g. no Python version recorded)
    try:
        return req.marker.evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def _requirements(facts: Facts) -> Iterator[tuple[str, Version, Requirement]]:
    env = marker_env(facts)
    for name, record in sorted(facts.packages.items()):
        version = parse_version(record.version) if record else None
        reqs = record.requires if record else NOT_PROBED
        if version is None or reqs is NOT_PROBED:
            continue
        for text in reqs:
            req = _parse(text) if isinstance(text, str) and not _extra_only(text) else None
            if req is not None and _applies(req, env):
                yield name, version, req


def _extra_only(text: str) -> bool:
    """`x; extra == "test"` never applies to a plain install: skip it before parsing (a fast
    path: evaluating it with extra "" says the same). An `or` may still apply: evaluated."""
    _, _, marker = text.partition(";")
    marker = marker.replace("extra==", "extra ==")
    return "extra ==" in marker and " or " not in marker


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> Requirement | None:
    """Parsing is the slow part of these checks; the same texts repeat across runs."""
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _named_elsewhere(dist: str, target: str, req: Requirement) -> bool:
    if (dist, target) in NAMED_ELSEWHERE:
        return True
    if dist == "torch" and target.startswith("nvidia-nccl-"):
        return True
    return target == "numpy" and any(
        s.operator in ("<", "<=") and s.version.startswith("2") for s in req.specifier
    )


def requirement_conflicts(facts: Facts) -> Iterator[Finding]:
    table = facts.packages
    for dist, version, req in _requirements(facts):
        target = canonicalize_name(req.name)
        if target not in table or _named_elsewhere(dist, target, req):
            continue
        record = table[target]
        if record is None:
            yield finding(
                "REQUIREMENT_CONFLICT",
                f"{dist} {version} requires {req}, which is not installed",
                fix=f'{pip_command(facts)} install "{req.name}{req.specifier}"',
            )
            continue
        have = parse_version(record.version)
        if have is None or not req.specifier or req.specifier.contains(have, prereleases=True):
            continue
        yield finding(
            "REQUIREMENT_CONFLICT",
            f"{dist} {version} requires {req.name}{req.specifier}; {target} {have} is installed",
            detail="pip check reports this; the dist may fail at import or at its first call.",
            fix=f'{pip_command(facts)} install "{req.name}{req.specifier}"  (or a {dist} release that accepts {target} {have})',
        )


def numpy2(facts: Facts) -> Iterator[Finding]:
    numpy = facts.version("numpy")
    if numpy is None:
        return
    rules = load_compat().numpy2
    source = rules.source
    megatron = facts.version("megatron-core")
    opencv = [(n, v) for n in OPENCV if (v := facts.version(n)) is not None]
    last = rules.opencv_last_numpy1
    pin_fix = f'{pip_command(facts)} install "numpy<2" "opencv-python-headless=={last}"'
    if (
        numpy.major >= 2
        and megatron is not None
        and megatron.release[:2] <= rules.megatron_numpy1_until.release
    ):
        yield finding(
            "NUMPY2_MEGATRON_VS_OPENCV",
            f"megatron-core {megatron} needs numpy<2; numpy {numpy} is installed",
            detail=f"'module numpy has no attribute product' at the first call. {source}",
            fix=f'{pin_fix}  (or {pip_command(facts)} install "megatron-core>=0.16")',
        )
    if numpy.major < 2:
        for name, ov in opencv:
            if ov >= rules.opencv_numpy2_from:
                yield finding(
                    "NUMPY2_MEGATRON_VS_OPENCV",
                    f"{name} {ov} requires numpy>=2; numpy {numpy} is installed",
                    detail=f"cv2 fails to import against numpy 1 (vLLM pulls opencv >= 4.11). {source}",
                    fix=pin_fix,
                )
        return
    tv = torch_version(facts)
    if tv is not None and tv < rules.torch_numpy2_from:
        yield finding(
            "NUMPY2_BINARY_INCOMPAT",
            f"torch {tv} was built against NumPy 1; numpy {numpy} is installed",
            detail="'A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x'.",
            fix=f'{pip_command(facts)} install "numpy<2"  (or torch >= {rules.torch_numpy2_from})',
        )
    for dist, version, req in _requirements(facts):
        if canonicalize_name(req.name) != "numpy" or dist == "megatron-core":
            continue
        if req.specifier and not req.specifier.contains(numpy, prereleases=True):
            yield finding(
                "NUMPY2_BINARY_INCOMPAT",
                f"{dist} {version} requires numpy{req.specifier}; numpy {numpy} is installed",
                detail="Extensions built against NumPy 1 fail: 'A module that was compiled using "
                "NumPy 1.x cannot be run in NumPy 2.x'.",
                fix=f'{pip_command(facts)} install "numpy{req.specifier}"  (or upgrade {dist})',
            )


def megatron_fusion(facts: Facts) -> Iterator[Finding]:
    megatron = facts.version("megatron-core")
    if megatron is None or facts.plan.gradient_accumulation_fusion is False:
        return
    apex = facts.installed("apex")
    fused = facts.import_ok("fused_weight_gradient_mlp_cuda")
    # the import is what Megatron tries; without its fact, an absent apex decides
    if fused is True or (fused is None and apex is not False):
        return
    yield finding(
        "MEGATRON_GRAD_ACCUM_FUSION_NO_APEX",
        f"megatron-core {megatron}: gradient_accumulation_fusion needs apex's fused_weight_gradient_mlp_cuda, "
        + ("apex is not installed" if apex is False else "which does not import"),
        severity="error" if facts.plan.gradient_accumulation_fusion else "warning",
        detail="Megatron enables the fusion by default and stops at start-up without it.",
    )


def liger_cutedsl(facts: Facts) -> Iterator[Finding]:
    """Liger's dispatcher takes its CuTe DSL kernels once `cutlass.cute` imports (vLLM
    brings nvidia-cutlass-dsl); measured several times slower on packed rows of varying
    length. Pinning the ops to Triton per op is Liger's own switch."""
    rule = load_compat().liger_cutedsl
    liger = facts.version("liger-kernel")
    dsl = facts.version(rule.dsl_package)
    if liger is None or dsl is None or not rule.liger.contains(liger, prereleases=True):
        return
    if facts.plan.use_liger_kernel is False:
        return
    pins = rule.env()
    chosen = ["LIGER_KERNEL_IMPL", "LIGER_KERNEL_BACKEND", *pins]
    if any(env_set(facts, name) is not False for name in chosen):
        return  # the user chose an implementation, or the environment was not probed
    yield finding(
        "LIGER_CUTEDSL_AUTOSELECTED",
        f"liger-kernel {liger} runs its CuTe DSL kernels because {rule.dsl_package} {dsl} is "
        "installed",
        detail=f"{rule.measured}. {rule.source}",
        fix="export "
        + " ".join(f"{k}={v}" for k, v in pins.items())
        + "  (shop-r1 train sets these itself)",
    )


CHECKS = (requirement_conflicts, numpy2, megatron_fusion, liger_cutedsl)
