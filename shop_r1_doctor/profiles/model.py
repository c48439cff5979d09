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
from pathlib import Path
from typing import Any, Literal

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.hardware import Cc
from shop_r1_doctor.schema import (
    Contract,
    FieldError,
    Reader,
    decode,
    is_version,
    nonempty,
)

CC = tuple[int, int]
FlashAttnMode = Literal["wheel", "source", "none"]
AttentionImpl = Literal["flash_attention_2", "flash_attention_3", "sdpa", "eager"]
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


def _specs(pins: Mapping[str, str], where: str) -> None:
    for dist, spec in pins.items():
        try:
            SpecifierSet(spec)
        except ValueError:
            raise FieldError(f"{where}.{dist}", f"not a version range: {spec!r}") from None


class GpuMatch(Contract, frozen=True):
    compute_capabilities: tuple[Cc, ...]  # [] matches no GPU (the CPU profile)
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


class CudaSpec(Contract, frozen=True):
    version: Version
    # as written: Version() shows 580.65.06 as 580.65.6
    min_driver_text: str = msgspec.field(name="min_driver")

    def __post_init__(self) -> None:
        if not is_version(self.min_driver_text):
            raise FieldError("min_driver", f"not a version: {self.min_driver_text!r}")

    @property
    def min_driver(self) -> Version:
        return Version(self.min_driver_text)

    @property
    def major(self) -> int:
        return self.version.major


class TorchSpec(Contract, frozen=True):
    version: Version
    variant: str  # cu130, cpu, ...
    index_url: str

    def __post_init__(self) -> None:
        nonempty(self, "variant", "index_url")
        if not re.fullmatch(r"cpu|cu\d{3}", self.variant):
            raise FieldError("variant", f"expected cpu or cuXYZ, got {self.variant!r}")
        if self.version.local:
            raise FieldError("version", "write the public version; the build goes in torch.variant")

    @property
    def cuda(self) -> Version | None:
        """`cu130` -> 13.0, `cu128` -> 12.8; None for cpu."""
        m = re.fullmatch(r"cu(\d+)(\d)", self.variant)
        return Version(f"{m.group(1)}.{m.group(2)}") if m else None

    @property
    def local(self) -> str:
        return f"{self.version}+{self.variant}"


class FlashAttnSpec(Contract, frozen=True):
    mode: FlashAttnMode
    version: Version | None = None
    max_jobs: int | None = None
    nvcc_threads: int | None = None
    cuda_archs: str | None = None  # FLASH_ATTN_CUDA_ARCHS, e.g. "100;120"

    def __post_init__(self) -> None:
        for name in ("max_jobs", "nvcc_threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise FieldError(name, f"expected a positive integer, got {value!r}")
        if self.mode != "none" and self.version is None:
            raise FieldError("version", f"missing (required with mode {self.mode})")

    def arch_ccs(self) -> tuple[CC, ...]:
        """`"100;120"` -> ((10, 0), (12, 0)); FlashAttention spells archs without a dot."""
        out = []
        for token in (self.cuda_archs or "").split(";"):
            token = token.strip()
            if token.isdigit() and len(token) >= 2:
                out.append((int(token[:-1]), int(token[-1])))
        return tuple(out)


class ExtraSpec(Contract, frozen=True):
    """An optional stack added by `--with NAME` (verl, megatron)."""

    name: str = ""  # the key it is filed under (set when the profile is decoded)
    packages: dict[str, str] = {}  # dist -> exact version
    pins: dict[str, str] = {}  # dist -> specifier ("<2", "==4.11.0.86")
    apex: bool = False
    gradient_accumulation_fusion: bool = False

    def __post_init__(self) -> None:
        _specs(self.pins, "pins")


class Profile(Contract, frozen=True):
    name: str
    summary: str
    match: GpuMatch
    cuda: CudaSpec | None
    base_image: str
    python: str
    torch: TorchSpec
    vllm: Version | None
    flash_attn: FlashAttnSpec
    attention: AttentionImpl
    attention_fallback: AttentionImpl
    packages: dict[str, SpecifierSet]
    notes: dict[str, str]
    sources: dict[str, str]
    extras: dict[str, ExtraSpec] = {}
    env: dict[str, str] = {}
    env_consumer_multi_gpu: dict[str, str] = {}
    # A family profile (`blackwell`) names the narrower profiles it builds one image for;
    # matching prefers a member (the smaller image), `profiles check` keeps them in step.
    members: tuple[str, ...] = ()
    # Not in the file: where it was read from (set by the loader; a key of that name fails)
    path: Path = Path()
    lines: Mapping[str, int] = {}

    def __post_init__(self) -> None:
        nonempty(self, "name", "summary", "base_image", "python")
        for name, extra in self.extras.items():
            if name not in EXTRA_NAMES:
                raise FieldError(
                    f"extras.{name}", f"unknown extra; known: {', '.join(EXTRA_NAMES)}"
                )
            msgspec.structs.force_setattr(extra, "name", name)
        for key in ("wsl2", "windows"):
            if key not in self.notes:
                raise FieldError(
                    f"notes.{key}", "missing (say what works there and what to use instead)"
                )

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


# --- decoding -------------------------------------------------------------------------

_HINT = "fix the profile (see docs/profiles.md)"
_NOT_IN_FILE = ("path", "lines")


def _checked(data: Any, path: Path) -> Any:
    if isinstance(data, dict):
        for key in _NOT_IN_FILE:
            if key in data:
                raise Reader(path, None, _HINT).fail(key, "unknown field")
    return data


def _named_for(path: Path) -> Any:
    def check(profile: Profile) -> None:
        if profile.name != path.stem:
            raise FieldError(
                "name", f"is {profile.name!r} but the file is {path.name}; make them equal"
            )

    return check


def parse_profile(data: Any, path: Path, lines: Mapping[str, int] | None = None) -> Profile:
    profile = decode(_checked(data, path), Profile, path, lines, _HINT, _named_for(path))
    return msgspec.structs.replace(profile, path=path, lines=lines or {})


def load_profile_file(path: str | Path) -> Profile:
    p = Path(path)
    reader, data = Reader.read(p, "profile")
    return parse_profile(data, p, reader.lines)


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
