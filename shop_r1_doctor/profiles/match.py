"""Which profile fits this machine, and where the machine deviates from it.

`match_profile(facts)` is pure: it reads a snapshot through `Facts` and the shipped
profiles, and returns the best profile with one PROFILE_DEVIATION finding per package,
driver or env var that differs, each with the command that aligns it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from packaging.version import Version

from shop_r1_doctor.builds import choose_torch_build
from shop_r1_doctor.catalog import finding
from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, parse_version, shown
from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.hardware import parse_arch_list, parse_cc
from shop_r1_doctor.knowledge import grpo_vllm_speedup
from shop_r1_doctor.profiles.model import Profile, load_profiles
from shop_r1_doctor.target_python import pip_command

CODE = "PROFILE_DEVIATION"


@dataclass(frozen=True)
class ProfileMatch:
    name: str
    deviations: list[Finding] = field(default_factory=list)
    reason: str = ""  # e.g. "2 x sm_90 (NVIDIA H100 80GB HBM3)"


def best_profile(facts: Facts, profiles: dict[str, Profile]) -> tuple[Profile, str] | None:
    """The profile matching the most GPUs (compute capability first, else the name).

    No GPU at all (an empty `gpus` list) -> the cpu profile; GPUs unknown (no `gpus`
    section) or none of them matched -> None.
    """
    if not isinstance(facts.listed_gpus, list):
        return None
    gpus = facts.gpus
    if not gpus:
        cpu = profiles.get("cpu")
        return (cpu, "no NVIDIA GPU") if cpu else None
    # most GPUs matched, then a member before its family (the smaller image; a family wins
    # only where it matches more GPUs, a machine mixing its members), then the explicit
    # priority (`profiles check` rejects overlaps without one); the name only keeps the
    # order deterministic
    scored = [
        (sum(gpu_matches(p, gpu) for gpu in gpus), not p.is_family, p.match.priority or 0, p)
        for p in sorted(profiles.values(), key=lambda p: p.name)
    ]
    scored = [s for s in scored if s[0]]
    if not scored:
        return None
    count, _, _, profile = max(scored, key=lambda s: s[:3])
    names = sorted({shown(g.name) for g in gpus if gpu_matches(profile, g)})
    ccs = sorted({shown(g.compute_capability, "None") for g in gpus if gpu_matches(profile, g)})
    arch = "/".join(f"sm_{c.replace('.', '')}" for c in ccs if c != "None") or "GPU"
    return profile, f"{count} x {arch} ({', '.join(names)})"


def gpu_matches(profile: Profile, gpu: GpuFacts) -> bool:
    cc = parse_cc(gpu.compute_capability)
    if cc is not None:
        return profile.match.matches_cc(cc)
    return isinstance(gpu.name, str) and profile.match.matches_name(gpu.name)


def match_profile(facts: Facts, profiles: dict[str, Profile] | None = None) -> ProfileMatch | None:
    """Best profile for the machine's GPUs and the deviations from it (BRIEF contract)."""
    found = best_profile(facts, profiles if profiles is not None else load_profiles())
    if found is None:
        return None
    profile, reason = found
    return ProfileMatch(profile.name, deviations(facts, profile), reason)


def deviations(facts: Facts, profile: Profile) -> list[Finding]:
    pip = pip_command(facts)
    out: list[Finding] = []

    def add(severity: Severity, title: str, fix: str, detail: str = "") -> None:
        out.append(finding(CODE, title, detail=detail, fix=fix, severity=severity))

    # the build this machine's GPUs and driver run (never a CUDA the driver cannot run)
    build = choose_torch_build(
        profile.torch.version,
        profile.torch.variant,
        facts.ccs(),
        parse_version(facts.driver.version),
        profile_index=profile.torch.index_url,
    )
    index = build.index_url if build else profile.torch.index_url
    torch_cmd = f"{pip} install torch=={profile.torch.version} --index-url {index}"
    if facts.installed("torch") is False:
        add(
            "warning",
            f"torch not installed where profile {profile.name} says {profile.torch.local}",
            torch_cmd,
        )
    else:
        have = facts.version("torch")
        if have is not None:
            variant = _torch_variant(facts, have)
            if Version(have.public) != profile.torch.version or variant != profile.torch.variant:
                shown = f"{have.public}+{variant}" if variant else str(have)
                add(
                    "info" if profile.name == "cpu" else "warning",
                    f"torch {shown} where profile {profile.name} says {profile.torch.local}",
                    torch_cmd,
                )

    if profile.vllm is not None:
        vllm_cmd = (
            f"{pip} install vllm=={profile.vllm} torch=={profile.torch.version} "
            f"--extra-index-url {profile.torch.index_url}"
        )
        have = facts.version("vllm")
        if facts.installed("vllm") is False:
            add(
                "info",
                f"vLLM not installed where profile {profile.name} says {profile.vllm}",
                vllm_cmd,
                f"GRPO then generates with transformers (vLLM: {grpo_vllm_speedup()}).",
            )
        elif have is not None and Version(have.public) != profile.vllm:
            add(
                "warning", f"vllm {have} where profile {profile.name} says {profile.vllm}", vllm_cmd
            )

    fa = profile.flash_attn
    if fa.mode != "none" and fa.version is not None:
        have = facts.version("flash-attn")
        fa_cmd = flash_attn_install_command(profile, pip)
        if facts.installed("flash-attn") is False:
            add(
                "info",
                f"flash-attn not installed where profile {profile.name} says {fa.version} ({fa.mode})",
                fa_cmd,
                f"Training falls back to attn_implementation={profile.attention_fallback}.",
            )
        elif have is not None and Version(have.public) != fa.version:
            add("info", f"flash-attn {have} where profile {profile.name} says {fa.version}", fa_cmd)

    for dist, spec in sorted(profile.packages.items()):
        have = facts.version(dist)
        if have is not None and not spec.contains(Version(have.public), prereleases=True):
            add(
                "warning",
                f"{dist} {have} where profile {profile.name} says {spec}",
                f"{pip} install {shlex.quote(f'{dist}{spec}')}",
            )

    driver = parse_version(facts.driver.version)
    if profile.cuda is not None and driver is not None and driver < profile.cuda.min_driver:
        add(
            "warning",
            # as the driver writes it (580.65.05), not normalised (580.65.5)
            f"NVIDIA driver {facts.driver.version} where profile {profile.name} needs >= {profile.cuda.min_driver_text} "
            f"(CUDA {profile.cuda.version})",
            f"install NVIDIA driver >= {profile.cuda.min_driver_text} (data-center GPUs: or the "
            f"cuda-compat-{profile.cuda.version.major}-{profile.cuda.version.minor} package)",
        )

    for name, value in sorted(profile.env.items()):
        have_env = facts.env_value(name)
        if have_env is None or have_env == value:
            continue
        if name == "TORCH_CUDA_ARCH_LIST" and _arch_list_covers(have_env, value):
            continue  # e.g. '9.0a' builds everything '9.0' does, for the same GPUs
        add(
            "info",
            f"{name}={have_env!r} where profile {profile.name} sets {value!r}",
            f"export {name}={shlex.quote(value)}",
        )
    return out


def _arch_list_covers(have: str, want: str) -> bool:
    """Whether builds with arch list `have` run on every arch `want` names."""
    have_archs, want_archs = parse_arch_list(have), parse_arch_list(want)
    return bool(have_archs) and all(have_archs.runs_on(cc) for cc in want_archs.sass)


def _torch_variant(facts: Facts, version: Version) -> str:
    """`2.11.0+cu130` -> cu130; a PyPI build without a local tag -> from torch.version.cuda."""
    if version.local:
        return str(version.local)
    torch = facts.torch
    cuda = torch.cuda if torch else NOT_PROBED
    if isinstance(cuda, str) and cuda:
        return "cu" + cuda.replace(".", "")
    if cuda is None:  # torch said: no CUDA
        return "cpu"
    return ""


def flash_attn_install_command(profile: Profile, pip: str = "python3 -m pip") -> str:
    """The throttled install the profile asks for (FA's setup.py fetches a wheel if one exists)."""
    fa = profile.flash_attn
    flags = []
    if fa.mode == "source":
        flags = [
            f"MAX_JOBS={fa.max_jobs or 4}",
            f"NVCC_THREADS={fa.nvcc_threads or 2}",
            f"FLASH_ATTN_CUDA_ARCHS={shlex.quote(fa.cuda_archs or '')}",
        ]
    return " ".join([*flags, f"{pip} install flash-attn=={fa.version} --no-build-isolation"])
