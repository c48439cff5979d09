"""Hardware profiles (`profiles/*.yaml`) as typed, frozen records, with one loader.

A profile names one software stack that is known to work on a family of GPUs. Every
other part of shop-r1 (the doctor's profile match, `build-image`, `launch`) reads
profiles through `load_profiles()`; a malformed file fails here with one line naming
the file, the line and the field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.hardware import parse_cc
from shop_r1_doctor.schema import Reader

CC = tuple[int, int]
FlashAttnMode = Literal["wheel", "source", "none"]
FLASH_ATTN_MODES: tuple[str, ...] = ("wheel", "source", "none")
ATTENTION_IMPLS: tuple[str, ...] = ("flash_attention_2", "flash_attention_3", "sdpa", "eager")
EXTRA_NAMES: tuple[str, ...] = ("verl", "megatron")


def profiles_dir() -> Path:
    """Where the shipped profiles live: `profiles/` at the repository root in a checkout.

    The one place that knows the location, so packaging can change it (a copy inside the
    package, `profiles_data/`, is used when the checkout copy is absent).
    """
    checkout = Path(__file__).resolve().parents[2] / "profiles"
    if checkout.is_dir():
        return checkout
    return Path(__file__).resolve().parents[1] / "profiles_data"


@dataclass(frozen=True)
class GpuMatch:
    compute_capabilities: tuple[CC, ...]
    name_patterns: tuple[str, ...]
    bf16: bool
    # Which of two profiles that match the same GPU wins (higher first). `profiles check`
    # fails on an overlap without distinct priorities: no silent alphabetical tie-break.
    priority: int | None = None

    def matches_cc(self, cc: CC) -> bool:
        return cc in self.compute_capabilities

    def matches_name(self, name: str) -> bool:
        """Name patterns are whole words of the marketing name ("RTX 40" matches "RTX 4090")."""
        return any(re.search(rf"\b{re.escape(p)}", name, re.IGNORECASE) for p in self.name_patterns)


@dataclass(frozen=True)
class CudaSpec:
    version: Version
    min_driver: Version
    min_driver_text: str = ""  # as written: Version() shows 580.65.06 as 580.65.6

    @property
    def major(self) -> int:
        return self.version.major


@dataclass(frozen=True)
class TorchSpec:
    version: Version
    variant: str  # cu130, cpu, ...
    index_url: str

    @property
    def cuda(self) -> Version | None:
        """`cu130` -> 13.0, `cu128` -> 12.8; None for cpu."""
        m = re.fullmatch(r"cu(\d+)(\d)", self.variant)
        return Version(f"{m.group(1)}.{m.group(2)}") if m else None

    @property
    def local(self) -> str:
        return f"{self.version}+{self.variant}"


@dataclass(frozen=True)
class FlashAttnSpec:
    mode: FlashAttnMode
    version: Version | None = None
    max_jobs: int | None = None
    nvcc_threads: int | None = None
    cuda_archs: str | None = None  # FLASH_ATTN_CUDA_ARCHS, e.g. "100;120"

    def arch_ccs(self) -> tuple[CC, ...]:
        """`"100;120"` -> ((10, 0), (12, 0)); FlashAttention spells archs without a dot."""
        out = []
        for token in (self.cuda_archs or "").split(";"):
            token = token.strip()
            if token.isdigit() and len(token) >= 2:
                out.append((int(token[:-1]), int(token[-1])))
        return tuple(out)


@dataclass(frozen=True)
class ExtraSpec:
    """An optional stack added by `--with NAME` (verl, megatron)."""

    name: str
    packages: dict[str, str]  # dist -> exact version
    pins: dict[str, str] = field(default_factory=dict)  # dist -> specifier ("<2", "==4.11.0.86")
    apex: bool = False
    gradient_accumulation_fusion: bool = False


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    path: Path
    match: GpuMatch
    cuda: CudaSpec | None
    base_image: str
    python: str
    torch: TorchSpec
    vllm: Version | None
    flash_attn: FlashAttnSpec
    attention: str
    attention_fallback: str
    packages: dict[str, SpecifierSet]
    extras: dict[str, ExtraSpec]
    env: dict[str, str]
    env_consumer_multi_gpu: dict[str, str]
    notes: dict[str, str]
    sources: dict[str, str]
    # A family profile (`blackwell`) names the narrower profiles it builds one image for;
    # matching prefers a member (the smaller image), `profiles check` keeps them in step.
    members: tuple[str, ...] = ()
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_family(self) -> bool:
        return bool(self.members)

    @property
    def dtype(self) -> str:
        """Training precision: bf16 where the GPUs have it, fp16 on older GPUs, fp32 on CPU."""
        if self.match.bf16:
            return "bf16"
        return "fp16" if self.cuda is not None else "fp32"

    def where(self, field_path: str) -> str:
        """`profiles/hopper.yaml:12: torch.version` for messages about a field."""
        line = Reader(self.path, self.lines).line(field_path)
        return f"{self.path}:{line}" if line else str(self.path)


# --- parsing --------------------------------------------------------------------------

_REQUIRED = [
    "name",
    "summary",
    "match",
    "cuda",
    "base_image",
    "python",
    "torch",
    "vllm",
    "flash_attn",
    "attention",
    "attention_fallback",
    "packages",
    "notes",
    "sources",
]
_OPTIONAL = ("extras", "env", "env_consumer_multi_gpu", "members")
_TOP_KEYS = {**dict.fromkeys(_REQUIRED, True), **dict.fromkeys(_OPTIONAL, False)}


_HINT = "fix the profile (see docs/profiles.md)"


def parse_profile(data: Any, path: Path, lines: Mapping[str, int] | None = None) -> Profile:
    r = Reader(path, lines, _HINT)
    top = r.mapping(data, "", _TOP_KEYS)
    name = r.text(top, "name", "")
    if name != path.stem:
        raise r.fail("name", f"is {name!r} but the file is {path.name}; make them equal")

    m = r.mapping(
        top["match"],
        "match",
        {"compute_capabilities": True, "name_patterns": True, "bf16": True, "priority": False},
    )
    ccs = []
    for i, item in enumerate(r.get(m, "compute_capabilities", "match", (list, type(None))) or []):
        ccs.append(r.parsed(item, parse_cc, f"match.compute_capabilities[{i}]", "not like '9.0'"))
    patterns = r.str_list(m, "name_patterns", "match") if m["name_patterns"] is not None else []
    priority = r.opt(m, "priority", "match", int)
    match = GpuMatch(tuple(ccs), tuple(patterns), r.flag(m, "bf16", "match", False), priority)

    cuda = None
    if top["cuda"] is not None:
        c = r.mapping(top["cuda"], "cuda", {"version": True, "min_driver": True})
        cuda = CudaSpec(
            r.version(c, "version", "cuda"),
            r.version(c, "min_driver", "cuda"),
            r.text(c, "min_driver", "cuda"),
        )

    t = r.mapping(top["torch"], "torch", {"version": True, "variant": True, "index_url": True})
    torch = TorchSpec(
        r.version(t, "version", "torch"),
        r.text(t, "variant", "torch"),
        r.text(t, "index_url", "torch"),
    )
    if not re.fullmatch(r"cpu|cu\d{3}", torch.variant):
        raise r.fail("torch.variant", f"expected cpu or cuXYZ, got {torch.variant!r}")
    if torch.version.local:
        raise r.fail("torch.version", "write the public version; the build goes in torch.variant")

    vllm = None if top["vllm"] is None else r.version(top, "vllm", "")

    fa_keys = {"mode": True, "version": False, "max_jobs": False, "nvcc_threads": False}
    fa_raw = r.mapping(top["flash_attn"], "flash_attn", {**fa_keys, "cuda_archs": False})
    mode = r.get(fa_raw, "mode", "flash_attn", allowed=FLASH_ATTN_MODES)
    flash_attn = FlashAttnSpec(
        mode=mode,
        version=r.version(fa_raw, "version", "flash_attn") if "version" in fa_raw else None,
        max_jobs=r.positive_int(fa_raw, "max_jobs", "flash_attn"),
        nvcc_threads=r.positive_int(fa_raw, "nvcc_threads", "flash_attn"),
        cuda_archs=str(fa_raw["cuda_archs"]) if fa_raw.get("cuda_archs") is not None else None,
    )
    if mode != "none" and flash_attn.version is None:
        raise r.fail("flash_attn.version", f"missing (required with mode {mode})")

    for key in ("attention", "attention_fallback"):
        r.get(top, key, "", allowed=ATTENTION_IMPLS)

    packages: dict[str, SpecifierSet] = {}
    for dist, spec in r.str_map(top["packages"], "packages").items():
        packages[dist] = r.spec_text(spec, f"packages.{dist}")

    extras = {}
    raw_extras = top.get("extras") or {}
    if not isinstance(raw_extras, dict):
        raise r.fail("extras", "expected a mapping")
    for extra_name, raw in raw_extras.items():
        where = f"extras.{extra_name}"
        if extra_name not in EXTRA_NAMES:
            raise r.fail(where, f"unknown extra; known: {', '.join(EXTRA_NAMES)}")
        e = r.mapping(
            raw,
            where,
            {"packages": True, "pins": False, "apex": False, "gradient_accumulation_fusion": False},
        )
        pins = r.str_map(e.get("pins"), f"{where}.pins")
        for dist, spec in pins.items():
            r.spec_text(spec, f"{where}.pins.{dist}")
        extras[extra_name] = ExtraSpec(
            name=extra_name,
            packages=r.str_map(e["packages"], f"{where}.packages"),
            pins=pins,
            apex=r.flag(e, "apex", where, False),
            gradient_accumulation_fusion=r.flag(e, "gradient_accumulation_fusion", where, False),
        )

    notes = r.str_map(top["notes"], "notes")
    for key in ("wsl2", "windows"):
        if key not in notes:
            raise r.fail(f"notes.{key}", "missing (say what works there and what to use instead)")

    return Profile(
        name=name,
        summary=r.text(top, "summary", ""),
        path=path,
        match=match,
        cuda=cuda,
        base_image=r.text(top, "base_image", ""),
        python=r.text(top, "python", ""),
        torch=torch,
        vllm=vllm,
        flash_attn=flash_attn,
        attention=top["attention"],
        attention_fallback=top["attention_fallback"],
        packages=packages,
        extras=extras,
        env=r.str_map(top.get("env"), "env"),
        env_consumer_multi_gpu=r.str_map(
            top.get("env_consumer_multi_gpu"), "env_consumer_multi_gpu"
        ),
        notes=notes,
        sources=r.str_map(top["sources"], "sources"),
        members=tuple(r.str_list(top, "members", "")) if top.get("members") is not None else (),
        lines=lines or {},
    )


def load_profile_file(path: str | Path) -> Profile:
    p = Path(path)
    r, data = Reader.read(p, "profile")
    return parse_profile(data, p, r.lines)


def load_profiles(directory: str | Path | None = None) -> dict[str, Profile]:
    """Every `*.yaml` profile in `directory` (default: `profiles_dir()`), by name."""
    if directory is None:
        return dict(_shipped_profiles())
    return _load_dir(Path(directory))


@functools.lru_cache(maxsize=1)
def _shipped_profiles() -> tuple[tuple[str, Profile], ...]:
    return tuple(_load_dir(profiles_dir()).items())


def _load_dir(directory: Path) -> dict[str, Profile]:
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise ToolError(f"{directory}: no *.yaml profiles found; reinstall shop-r1")
    return {p.name: p for p in (load_profile_file(f) for f in files)}


def get_profile(name: str, directory: str | Path | None = None) -> Profile:
    profiles = load_profiles(directory)
    if name not in profiles:
        known = ", ".join(sorted(profiles))
        raise ToolError(f"profile {name!r}: no such profile; choose one of: {known}")
    return profiles[name]
