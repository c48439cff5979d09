"""`shop-r1 profiles check`: every profile against the compatibility knowledge.

Each rule is a small function of (profile, compat) that yields problems; a profile that
passes all of them names a stack whose parts agree with each other (vLLM's torch pin,
torch's arch list, CUDA of image, torch and driver, flash-attn wheels or build flags,
bf16, and the verl / megatron additions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from packaging.version import Version

from shop_r1_doctor.hardware import Archs, archs_with_ptx, parse_arch_list
from shop_r1_doctor.knowledge import Compat, driver_text
from shop_r1_doctor.profiles.model import CC, Profile


@dataclass(frozen=True)
class Problem:
    """One contradiction inside a profile; `where` is `file:line`."""

    profile: str
    where: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.field}: {self.message}"


Rule = Callable[[Profile, Compat], Iterator[tuple[str, str]]]


def cc_text(cc: CC) -> str:
    return f"{cc[0]}.{cc[1]}"


_IMAGE_CUDA = re.compile(r"^nvidia/cuda:(\d+)\.(\d+)(?:\.\d+)?-")


def image_cuda(base_image: str) -> Version | None:
    """`nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04` -> 13.0; None for other images."""
    m = _IMAGE_CUDA.match(base_image.removeprefix("docker.io/").removeprefix("nvcr.io/"))
    return Version(f"{m.group(1)}.{m.group(2)}") if m else None


# --- rules ---------------------------------------------------------------------------


def _vllm_pin(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    if p.vllm is None:
        return
    pin = compat.vllm_torch_pin(p.vllm)
    if pin is None:
        yield (
            "vllm",
            (
                f"the compatibility knowledge has no torch pin for vLLM {p.vllm}; "
                "run scripts/refresh_compat.py or choose a known vLLM"
            ),
        )
        return
    if Version(pin.value) != p.torch.version:
        yield (
            "vllm",
            (
                f"vLLM {p.vllm} pins torch=={pin.value} but the profile says torch "
                f"{p.torch.version}; installing vLLM would swap torch ({pin.source})"
            ),
        )
    torch_cuda = p.torch.cuda
    if pin.extra and torch_cuda is not None and Version(pin.extra).major != torch_cuda.major:
        yield (
            "vllm",
            (
                f"vLLM {p.vllm} wheels are built for CUDA {pin.extra} but torch is "
                f"{p.torch.variant}; vllm._C would not load"
            ),
        )
    floor = compat.vllm_min_cc_for(p.vllm)
    if floor is not None:
        need = tuple(int(x) for x in floor.value.split("."))
        for cc in p.match.compute_capabilities:
            if cc < need:
                yield (
                    "vllm",
                    f"vLLM {p.vllm} needs compute capability >= {floor.value}, not {cc_text(cc)}",
                )


def _torch_archs(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    release = compat.torch_release(p.torch.version)
    if release is not None and p.torch.variant != "cpu" and p.torch.variant not in release.variants:
        yield (
            "torch.variant",
            (
                f"torch {release.torch} has no {p.torch.variant} build "
                f"(has {', '.join(release.variants)}; {release.source})"
            ),
        )
    if release is not None and Version(f"{p.python}.0") not in release.python:
        yield "python", f"torch {release.torch} supports Python {release.python}, not {p.python}"
    if not p.match.compute_capabilities:
        return
    archs = compat.archs_for(p.torch.version, p.torch.variant)
    if archs is None:
        yield (
            "torch.variant",
            (f"no arch list known for torch {p.torch.local}; cannot tell which GPUs it runs on"),
        )
        return
    for cc in p.match.compute_capabilities:
        built = archs_with_ptx(archs.archs, archs.ptx)
        if not built.runs_on(cc):
            listed = built.text()
            yield (
                "torch.variant",
                (
                    f"torch {p.torch.local} is built for {listed}: no kernels for matched "
                    f"sm_{cc[0]}{cc[1]} ({archs.source})"
                ),
            )


def _cuda(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    torch_cuda = p.torch.cuda
    image = image_cuda(p.base_image)
    if p.cuda is None:
        if torch_cuda is not None or image is not None:
            yield "cuda", "profile has no CUDA but its torch or base image is a CUDA build"
        if p.match.compute_capabilities:
            yield "cuda", "profile matches GPUs but states no CUDA version"
        return
    if torch_cuda is None or torch_cuda != p.cuda.version:
        yield "cuda.version", f"CUDA {p.cuda.version} but torch is {p.torch.local}"
    if image is None:
        yield "base_image", f"{p.base_image} is not an nvidia/cuda image; its CUDA is unknown"
    elif image != p.cuda.version:
        yield "base_image", f"{p.base_image} has CUDA {image} but torch is {p.torch.local}"
    row = compat.driver_min_for(p.cuda.version)
    if row is None or row.linux is None:
        yield "cuda.min_driver", f"no driver minimum known for CUDA {p.cuda.version}"
    elif p.cuda.min_driver < row.linux:
        yield (
            "cuda.min_driver",
            (
                f"{p.cuda.min_driver_text} is below the {driver_text(row.linux)} that CUDA {p.cuda.version} needs "
                f"({row.source})"
            ),
        )


def _flash_attn(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    fa = p.flash_attn
    if p.attention == "flash_attention_2" and fa.mode == "none":
        yield "attention", "flash_attention_2 needs flash-attn, but flash_attn.mode is none"
    if fa.mode == "none":
        return
    feature = compat.feature("flash_attention_2")
    for cc in p.match.compute_capabilities:
        if feature is not None and cc < feature.min_cc:
            yield (
                "flash_attn.mode",
                (
                    f"FlashAttention 2 needs sm_{feature.min_cc[0]}{feature.min_cc[1]}+, "
                    f"profile matches sm_{cc[0]}{cc[1]}; use mode none ({feature.source})"
                ),
            )
    assert fa.version is not None  # the loader requires it for wheel and source
    torch_cuda = p.torch.cuda
    if fa.mode == "wheel":
        rows = compat.fa_wheel_rows(fa.version)
        ok = torch_cuda is not None and any(
            p.torch.version in r.torch and torch_cuda.major in r.cuda_majors for r in rows
        )
        if not ok:
            yield (
                "flash_attn.mode",
                (
                    f"no prebuilt flash-attn {fa.version} wheel for torch {p.torch.local}; "
                    "set mode: source with max_jobs, nvcc_threads and cuda_archs"
                ),
            )
        return
    for key, value in (
        ("max_jobs", fa.max_jobs),
        ("nvcc_threads", fa.nvcc_threads),
        ("cuda_archs", fa.cuda_archs),
    ):
        if value is None:
            yield (
                f"flash_attn.{key}",
                "missing: a source build without it can exhaust RAM or miss the GPU",
            )
    built = fa.arch_ccs()
    for cc in p.match.compute_capabilities:
        if built and not Archs(built).runs_on(cc):
            yield (
                "flash_attn.cuda_archs",
                f"{fa.cuda_archs} builds no kernels for sm_{cc[0]}{cc[1]}",
            )
        if cc >= (12, 0) and fa.version < compat.flash_attn_sm120_from:
            yield (
                "flash_attn.version",
                (
                    f"flash-attn {fa.version} has no native sm_120 kernels; use >= "
                    f"{compat.flash_attn_sm120_from} ({compat.flash_attn_archs_source})"
                ),
            )


def _bf16(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    feature = compat.feature("bf16")
    if not p.match.bf16 or feature is None:
        return
    for cc in p.match.compute_capabilities:
        if cc < feature.min_cc:
            yield (
                "match.bf16",
                (
                    f"bf16 is on but sm_{cc[0]}{cc[1]} has no bf16 (needs "
                    f"{cc_text(feature.min_cc)}+; {feature.source}); set bf16: false"
                ),
            )


def _env(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    if p.vllm is not None:
        for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
            if "expandable_segments:true" in p.env.get(name, "").replace(" ", "").lower():
                rule = compat.vllm_expandable_rule(p.vllm)
                why = rule.source if rule is not None else "vLLM memory pool"
                yield (
                    f"env.{name}",
                    f"expandable_segments breaks vLLM's memory pool ({why}); unset it",
                )
    arch_env = p.env.get("TORCH_CUDA_ARCH_LIST")
    if arch_env:
        env_archs = parse_arch_list(arch_env)
        for cc in p.match.compute_capabilities:
            if not env_archs.runs_on(cc):
                yield (
                    "env.TORCH_CUDA_ARCH_LIST",
                    (
                        f"{arch_env!r} misses matched sm_{cc[0]}{cc[1]}: extensions built in the "
                        "image would have no kernel for it"
                    ),
                )


def _extras(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    meg = p.extras.get("megatron")
    if meg is None:
        return
    if meg.gradient_accumulation_fusion and not meg.apex:
        yield (
            "extras.megatron.gradient_accumulation_fusion",
            ("needs Apex's fused_weight_gradient_mlp_cuda; set it false or apex: true"),
        )
    core = meg.packages.get("megatron-core")
    if core is None:
        yield "extras.megatron.packages", "missing megatron-core"
        return
    until = compat.numpy2.megatron_numpy1_until
    last_cv = compat.numpy2.opencv_last_numpy1
    if Version(core).release[:2] <= until.release[:2]:
        if meg.pins.get("numpy", "").replace(" ", "") != "<2":
            yield (
                "extras.megatron.pins.numpy",
                (f"megatron-core {core} declares numpy<2 and calls np.product; pin numpy: '<2'"),
            )
        if meg.pins.get("opencv-python-headless", "").replace(" ", "") != f"=={last_cv}":
            yield (
                "extras.megatron.pins.opencv-python-headless",
                (
                    f"opencv-python-headless >= {compat.numpy2.opencv_numpy2_from} needs numpy 2; "
                    f"pin '=={last_cv}' with megatron-core {core}"
                ),
            )
        vllm_opencv = _vllm_opencv_floor(p, compat)
        if vllm_opencv is not None and vllm_opencv > last_cv:
            yield (
                "extras.megatron.packages",
                (
                    f"megatron-core {core} needs numpy<2, but vLLM {p.vllm} requires "
                    f"opencv-python-headless>={vllm_opencv} (numpy 2); use megatron-core >= 0.16"
                ),
            )


def _constraints(p: Profile, compat: Compat) -> Iterator[tuple[str, str]]:
    """The one constraints file of each image (`--with` none, each extra, all) must resolve."""
    from shop_r1_doctor.profiles.resolve import resolve

    names = sorted(p.extras)
    combos = [()] + [(n,) for n in names] + ([tuple(names)] if len(names) > 1 else [])
    seen: set[str] = set()
    for extras in combos:
        for conflict in resolve(p, extras).conflicts:
            if conflict not in seen:
                seen.add(conflict)
                where = "extras" if extras else "packages"
                yield where, f"--with {','.join(extras) or '(none)'}: {conflict}"


def _vllm_opencv_floor(p: Profile, compat: Compat) -> Version | None:
    """vLLM's opencv-python-headless floor, where the knowledge records it (optional table)."""
    rows = compat.vllm_opencv
    if p.vllm is None or not rows:
        return None
    base = Version(p.vllm.public)
    row = next((r for r in rows if base in r.spec), None)
    return Version(row.value) if row is not None else None


RULES: tuple[Rule, ...] = (
    _vllm_pin,
    _torch_archs,
    _cuda,
    _flash_attn,
    _bf16,
    _env,
    _extras,
    _constraints,
)


def check_profile(profile: Profile, compat: Compat) -> list[Problem]:
    return [
        Problem(profile.name, profile.where(field), field, message)
        for rule in RULES
        for field, message in rule(profile, compat)
    ]


def sample_gpus(profiles: dict[str, Profile]) -> list[tuple[str, CC | None]]:
    """GPUs to test the profiles' match rules on: every GPU of knowledge/gpus.yaml (its
    patterns as names, with and without its capability) and every capability a profile
    claims."""
    from shop_r1_doctor.hardware import load_gpus

    # with its capability (what NVML reports) and without (old nvidia-smi: names only)
    named: list[tuple[str, CC | None]] = [
        (f"NVIDIA {pattern}", cc)
        for g in load_gpus()
        for pattern in g.patterns
        for cc in (g.cc, None)
    ]
    claimed = {cc for p in profiles.values() for cc in p.match.compute_capabilities}
    return named + [(f"a GPU of cc {cc_text(cc)}", cc) for cc in sorted(claimed)]


def overlaps(profiles: dict[str, Profile]) -> list[Problem]:
    """Two profiles that match the same GPU need distinct `match.priority` values."""
    from shop_r1_doctor.facts import GpuFacts
    from shop_r1_doctor.profiles.match import gpu_matches

    found: dict[tuple[str, ...], str] = {}
    for name, cc in sample_gpus(profiles):
        gpu = GpuFacts(name=name, compute_capability=cc_text(cc) if cc else None)
        matched = {p for p in profiles if gpu_matches(profiles[p], gpu)}
        # a family overlaps its members by design (`families` checks it covers just them)
        matched -= {p for p in matched if set(profiles[p].members) & matched}
        both = tuple(sorted(matched))
        if len(both) < 2:
            continue
        priorities = [profiles[p].match.priority for p in both]
        if None in priorities or len(set(priorities)) < len(priorities):
            found.setdefault(both, name)
    return [
        Problem(
            both[0],
            profiles[both[0]].where("match"),
            "match",
            f"profiles {', '.join(both)} all match {gpu}; give them distinct match.priority "
            "values (higher wins) or narrow compute_capabilities / name_patterns",
        )
        for both, gpu in found.items()
    ]


def families(profiles: dict[str, Profile]) -> list[Problem]:
    """A family (`members: [...]`) builds one image for its members: it matches exactly the
    capabilities they match together, and its flash-attn build covers every one of them."""
    out = []
    for name in sorted(profiles):
        fam = profiles[name]
        if not fam.is_family:
            continue

        def problem(field: str, message: str, fam: Profile = fam) -> Problem:
            return Problem(fam.name, fam.where(field), field, message)

        missing = [m for m in fam.members if m not in profiles]
        nested = [m for m in fam.members if m in profiles and profiles[m].is_family]
        if missing or nested:
            what = f"no such profile {', '.join(missing)}" if missing else ""
            what += ("; " if what else "") + (f"{', '.join(nested)} is a family" if nested else "")
            out.append(problem("members", f"{what}; members are profiles of one GPU class"))
            continue
        union = {cc for m in fam.members for cc in profiles[m].match.compute_capabilities}
        own = set(fam.match.compute_capabilities)
        if own != union:
            extra = ", ".join(cc_text(c) for c in sorted(own - union)) or "none"
            lost = ", ".join(cc_text(c) for c in sorted(union - own)) or "none"
            out.append(
                problem(
                    "match.compute_capabilities",
                    f"a family matches exactly its members' capabilities; not in a member: "
                    f"{extra}; a member's, missing here: {lost}",
                )
            )
        built = fam.flash_attn.arch_ccs()
        if fam.flash_attn.mode == "source" and built:
            for cc in sorted(union):
                if not Archs(built).runs_on(cc):
                    out.append(
                        problem(
                            "flash_attn.cuda_archs",
                            f"{fam.flash_attn.cuda_archs} builds no kernels for sm_{cc[0]}{cc[1]} "
                            "of a member",
                        )
                    )
    return out


def check_profiles(profiles: dict[str, Profile], compat: Compat) -> list[Problem]:
    return (
        [problem for name in sorted(profiles) for problem in check_profile(profiles[name], compat)]
        + overlaps(profiles)
        + families(profiles)
    )
