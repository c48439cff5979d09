"""One ordered plan of fixes for a machine's packaging findings, under its profile.

Each finding carries its own fix, and on a machine with several packaging problems
those fixes can contradict each other (three flash-attn commands, a cu130 torch on a
driver that runs CUDA <= 12.8, a bare `pip` that installs wherever PATH points). This
module turns the findings into the *target state* they call for and renders that once:

- prerequisites first: a driver the profile's stack needs, as a step of its own;
- torch, when a finding is about it (or vLLM needs another torch), at the profile's
  version in the build this machine's GPUs and driver run (`builds`), never newer CUDA;
- vLLM next, pinned with that torch, or left out (and said why) when its wheels are for
  a CUDA the driver cannot run; a vLLM that the new torch would break is removed;
- flash-attn rebuilt once, throttled (a new torch breaks its compiled extension);
- the libraries last, in the profile's ranges, with torch pinned so nothing swaps it.

Every command names the environment's own interpreter (`<python> -m pip`). A pure
function of (facts, findings, profile): `doctor`, `doctor --from` and `report` show the
same plan for the same facts. `Diagnosis.to_json()["fix_plan"]` is `shop-r1.fixplan/1`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from shop_r1_doctor.builds import (
    build_jobs,
    choose_torch_build,
    driver_max_cuda,
    vllm_wheel_blocker,
)
from shop_r1_doctor.facts import Facts, parse_version
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.knowledge import driver_text
from shop_r1_doctor.profiles.model import Profile
from shop_r1_doctor.target_python import pip_command, python_command

FIXPLAN_SCHEMA = "shop-r1.fixplan/1"
PLAN_HEADING = (
    "One plan for these findings (profile {profile}), in this order, instead of each fix alone:"
)
DEVIATION = "PROFILE_DEVIATION"
# Findings a package install fixes, by the component the install touches. Codes fixed by
# a setting (attn_implementation, an env var) or by the hardware are not in the plan.
COMPONENT_CODES: dict[str, frozenset[str]] = {
    "driver": frozenset({"DRIVER_TOO_OLD_FOR_TORCH_CUDA", "CONTAINER_CUDA_GT_HOST_DRIVER"}),
    "torch": frozenset(
        {
            "TORCH_CPU_ONLY_BUILD",
            "TORCH_NO_BLACKWELL_ARCH",
            "TORCH_ARCH_UNSUPPORTED_GPU",
            "CUDA_NO_KERNEL_IMAGE",
            "TORCH_IMPORT_FAILED",
            # vLLM runs on a torch without the GPU's kernels: the torch is what is wrong
            "VLLM_WHEEL_NO_SM120",
        }
    ),
    "vllm": frozenset(
        {
            "VLLM_INSTALL_SWAPS_TORCH",
            "VLLM_IMPORT_FAILED",
            "VLLM_REQUESTED_NOT_INSTALLED",
        }
    ),
    "flash-attn": frozenset(
        {
            "FA_REQUESTED_NOT_INSTALLED",
            "FA_TORCH_ABI_UNDEFINED_SYMBOL",
            "FA_CXX11_ABI_WHEEL_MISMATCH",
            "FA_BLACKWELL_SM120_KERNELS",
        }
    ),
    "libraries": frozenset(
        {
            "REQUIREMENT_CONFLICT",
            "NUMPY2_BINARY_INCOMPAT",
            "NUMPY_OLDER_THAN_BUILD",
            "NUMPY2_MEGATRON_VS_OPENCV",
            "LIGER_REQUESTED_NOT_INSTALLED",
            "TRL_VLLM_VERSION_SKEW",
        }
    ),
}
ORDER = ("driver", "torch", "vllm", "flash-attn", "libraries")
_QUOTED_REQ = re.compile(r"""["']([A-Za-z0-9][A-Za-z0-9._-]*\s*(?:[<>=!~]=?|===)[^"']+)["']""")


@dataclass(frozen=True)
class FixStep:
    component: str  # driver, torch, vllm, flash-attn, libraries
    kind: str  # "prerequisite" (done outside the environment) or "install"
    text: str  # the command, or for a prerequisite what to do
    reason: str
    addresses: tuple[str, ...] = ()  # "CODE: title" of the findings it fixes

    @property
    def command(self) -> str | None:
        return self.text if self.kind == "install" else None

    def to_json(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "kind": self.kind,
            "command": self.command,
            "text": self.text,
            "reason": self.reason,
            "addresses": list(self.addresses),
        }


@dataclass(frozen=True)
class FixPlan:
    profile: str
    python: str  # the interpreter every command names
    steps: tuple[FixStep, ...]
    deferred: tuple[str, ...] = ()  # what waits for a prerequisite, and why
    torch_reason: str = ""
    not_covered: tuple[str, ...] = field(default=())  # packaging findings fixed otherwise

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": FIXPLAN_SCHEMA,
            "profile": self.profile,
            "python": self.python,
            "torch": self.torch_reason or None,
            "steps": [{"order": i, **s.to_json()} for i, s in enumerate(self.steps, 1)],
            "deferred": list(self.deferred),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FixPlan:
        """A saved report's plan back (golden renders read saved reports)."""
        steps = tuple(
            FixStep(
                s["component"], s["kind"], s["text"], s["reason"], tuple(s.get("addresses", ()))
            )
            for s in data.get("steps", [])
        )
        return cls(
            data["profile"],
            data["python"],
            steps,
            tuple(data.get("deferred", ())),
            data.get("torch") or "",
        )


def component_of(f: Finding) -> str | None:
    """The installed component a finding is about (None: not fixed by an install)."""
    for component, codes in COMPONENT_CODES.items():
        if f.code in codes:
            return component
    if f.code != DEVIATION:
        return None
    title = f.title
    if title.startswith("NVIDIA driver"):
        return "driver"
    first = title.split(" ", 1)[0].lower()
    if first in ("torch", "vllm", "flash-attn"):
        return first
    if " where profile " in title and " sets " not in title:
        return "libraries"
    return None  # an env var: a setting, not an install


def _actionable(f: Finding) -> bool:
    return f.severity in ("error", "warning") and component_of(f) is not None


def settle_deviations(findings: Sequence[Finding]) -> list[Finding]:
    """A profile deviation of a version that is installed is information, unless a check
    found an error or warning on the same component (for a library: naming that library),
    which ties the deviation to a failure. A machine that works is not told to re-platform."""
    failing = [f for f in findings if f.code != DEVIATION and f.severity != "info"]

    def tied(dev: Finding) -> bool:
        component = component_of(dev)
        if component != "libraries":
            return any(component_of(f) == component for f in failing)
        dist = dev.title.split(" ", 1)[0].lower()
        return any(component_of(f) == "libraries" and dist in f.title.lower() for f in failing)

    return [
        replace(f, severity="info")
        if f.code == DEVIATION
        and f.severity == "warning"
        and "not installed" not in f.title
        and not tied(f)
        else f
        for f in findings
    ]


def build_fix_plan(
    facts: Facts, findings: Sequence[Finding], profile: Profile | None, *, minimum: int = 2
) -> FixPlan | None:
    """The one plan, when at least `minimum` actionable packaging findings call for it."""
    acting = [f for f in findings if _actionable(f)]
    if profile is None or len(acting) < minimum:
        return None
    by: dict[str, list[Finding]] = {}
    for f in acting:
        by.setdefault(component_of(f) or "", []).append(f)
    pip = pip_command(facts)
    python = python_command(facts)
    needs = set(by)
    vllm_have = facts.version("vllm")
    torch_have = facts.version("torch")
    torch_off_profile = torch_have is not None and torch_have.public != str(profile.torch.version)
    if "vllm" in needs and profile.vllm is not None and torch_off_profile:
        needs.add("torch")  # the profile's vLLM pins the profile's torch
    if "torch" in needs:
        if facts.installed("vllm") is True and profile.vllm is not None:
            needs.add("vllm")  # vLLM pins one exact torch: a new torch needs its vLLM
        if facts.installed("flash-attn") is True and profile.flash_attn.mode != "none":
            needs.add("flash-attn")  # its extension is compiled against the old torch

    steps: list[FixStep] = []
    deferred: list[str] = []
    driver = parse_version(facts.driver.version)
    driver_shown = facts.driver.version or (driver_text(driver) if driver else "")
    cuda = profile.cuda
    driver_short = cuda is not None and driver is not None and driver < cuda.min_driver
    build = choose_torch_build(
        profile.torch.version,
        profile.torch.variant,
        facts.ccs(),
        driver,
        os_name=facts.os or "linux",
        profile_index=profile.torch.index_url,
    )
    if cuda is not None and ("driver" in needs or (driver_short and needs & {"torch", "vllm"})):
        max_cuda = driver_max_cuda(driver)
        now = f"; driver {driver_shown} runs CUDA <= {max_cuda}" if max_cuda else ""
        steps.append(
            FixStep(
                "driver",
                "prerequisite",
                f"install NVIDIA driver >= {cuda.min_driver_text} (data-center GPUs: or the "
                f"cuda-compat-{cuda.version.major}-{cuda.version.minor} package)",
                f"the profile's stack is CUDA {cuda.version}{now}",
                _addresses(by.get("driver", ())),
            )
        )
    torch_pin = f"torch=={build.local}" if build and "torch" in needs else None
    if "torch" in needs:
        if build is None:
            deferred.append(
                f"torch {profile.torch.version}: no CUDA build runs on this driver; after the "
                "driver step, run `shop-r1 doctor` again"
            )
        else:
            steps.append(
                FixStep(
                    "torch",
                    "install",
                    f"{pip} install torch=={build.local} --index-url {build.index_url}",
                    f"torch {build.local}: {build.reason}",
                    _addresses(by.get("torch", [])),
                )
            )
    if torch_pin is None and torch_have is not None:
        torch_pin = f"torch=={torch_have}"  # what works stays: no later step may swap it
    variant = build.variant if build and "torch" in needs else _variant(torch_have)
    if "vllm" in needs and profile.vllm is not None:
        blocker = vllm_wheel_blocker(profile.vllm, variant) if variant else ""
        vllm_findings = by.get("vllm", [])
        if blocker or (build is None and "torch" in needs):
            why = blocker or "it needs the profile's torch"
            deferred.append(
                f"vLLM {profile.vllm}: {why}; after the driver step, run `shop-r1 doctor` again"
            )
            if vllm_have is not None:
                steps.append(
                    FixStep(
                        "vllm",
                        "install",
                        f"{pip} uninstall -y vllm",
                        f"vLLM {vllm_have} pins another torch and cannot stay; GRPO generates "
                        "with transformers until the profile's vLLM can be installed",
                        _addresses(vllm_findings),
                    )
                )
        else:
            index = build.index_url if build else profile.torch.index_url
            steps.append(
                FixStep(
                    "vllm",
                    "install",
                    " ".join(
                        x
                        for x in (
                            pip,
                            "install",
                            f"vllm=={profile.vllm}",
                            torch_pin,
                            "--extra-index-url",
                            index,
                        )
                        if x
                    ),
                    f"vLLM {profile.vllm} pins torch=={profile.torch.version}; the pin keeps the "
                    "build above",
                    _addresses(vllm_findings),
                )
            )
    fa = profile.flash_attn
    if "flash-attn" in needs and fa.mode != "none" and fa.version is not None:
        ram, cpus = facts.host.ram_bytes, facts.host.cpu_count
        jobs, why = build_jobs(
            fa.max_jobs or 4,
            ram if isinstance(ram, int) else None,
            cpus if isinstance(cpus, int) else None,
        )
        flags = [f"MAX_JOBS={jobs}", f"NVCC_THREADS={fa.nvcc_threads or 2}"]
        if fa.mode == "source":
            flags.append(f"FLASH_ATTN_CUDA_ARCHS={shlex.quote(fa.cuda_archs or '')}")
        steps.append(
            FixStep(
                "flash-attn",
                "install",
                " ".join(
                    [
                        *flags,
                        f"{pip} install --no-build-isolation --no-deps --force-reinstall "
                        f"--no-cache-dir flash-attn=={fa.version}",
                    ]
                ),
                f"flash-attn {fa.version} built against the torch above ({why}); --no-deps: "
                "it cannot swap torch",
                _addresses(by.get("flash-attn", [])),
            )
        )
    if "libraries" in needs:
        specs = _library_specs(by.get("libraries", []), profile)
        if specs:
            reqs = " ".join(shlex.quote(s) for s in specs)
            steps.append(
                FixStep(
                    "libraries",
                    "install",
                    f"{pip} install {reqs}" + (f" {torch_pin}" if torch_pin else ""),
                    "the libraries in the profile's ranges, torch pinned so none swaps it",
                    _addresses(by.get("libraries", [])),
                )
            )
    covered = {a.split(":", 1)[0] for s in steps for a in s.addresses}
    return FixPlan(
        profile=profile.name,
        python=python,
        steps=tuple(steps),
        deferred=tuple(deferred),
        torch_reason=build.reason if build and "torch" in needs else "",
        not_covered=tuple(sorted({f.code for f in acting} - covered)),
    )


def _addresses(findings: Iterable[Finding]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f"{f.code}: {f.title}" for f in findings))


def _variant(version: Any) -> str:
    local = getattr(version, "local", None)
    return str(local) if local else ""


def _library_specs(findings: Sequence[Finding], profile: Profile) -> list[str]:
    """One requirement per dist: the profile's range and what the findings' fixes ask for,
    intersected (`pip install "numpy<2"` from a check, `transformers<6,>=5.5.3` from the
    profile)."""
    merged: dict[str, tuple[str, SpecifierSet]] = {}

    def add(name: str, spec: SpecifierSet) -> None:
        key = canonicalize_name(name)
        shown, have = merged.get(key, (name, SpecifierSet()))
        merged[key] = (shown, have & spec)

    for f in findings:
        if f.code == DEVIATION:
            dist = f.title.split(" ", 1)[0]
            if dist in profile.packages:
                add(dist, profile.packages[dist])
            continue
        for text in _QUOTED_REQ.findall(f.fix):
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) in ("torch", "vllm", "flash-attn"):
                continue  # their own steps own them
            add(req.name, req.specifier)
            if req.name in profile.packages:
                add(req.name, profile.packages[req.name])
    return [
        name + ",".join(sorted({str(s) for s in spec}))
        for _, (name, spec) in sorted(merged.items())
    ]


def render_lines(plan: FixPlan) -> list[str]:
    """The plan as the terminal and the markdown report print it."""
    out = []
    for i, step in enumerate(plan.steps, 1):
        tag = "first, outside the environment: " if step.kind == "prerequisite" else ""
        out.append(f"{i}. {tag}{step.text}")
        out.append(f"   why: {step.reason}")
    out += [f"later: {d}" for d in plan.deferred]
    return out
