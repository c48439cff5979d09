"""Hardware profiles (`profiles/*.yaml`) as typed, frozen records, with one loader.

A profile names one software stack that is known to work on a family of GPUs. Every
other part of shop-r1 (the doctor's profile match, `build-image`, `launch`) reads
profiles through `load_profiles()`; a malformed file fails here with one line naming
the file, the line and the field.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.hardware import parse_cc
from shop_r1_doctor.yamlio import read_yaml

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
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def dtype(self) -> str:
        """Training precision: bf16 where the GPUs have it, fp16 on older GPUs, fp32 on CPU."""
        if self.match.bf16:
            return "bf16"
        return "fp16" if self.cuda is not None else "fp32"

    def where(self, field_path: str) -> str:
        """`profiles/hopper.yaml:12: torch.version` for messages about a field."""
        line = self.lines.get(field_path)
        while line is None and "." in field_path:
            field_path = field_path.rsplit(".", 1)[0]
            line = self.lines.get(field_path)
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
_OPTIONAL = ("extras", "env", "env_consumer_multi_gpu")
_TOP_KEYS = {**dict.fromkeys(_REQUIRED, True), **dict.fromkeys(_OPTIONAL, False)}


class _Reader:
    """Typed field access; every error names file, line and field, and what to do."""

    def __init__(self, path: Path, lines: dict[str, int]) -> None:
        self.path = path
        self.lines = lines

    def fail(self, where: str, what: str) -> ToolError:
        line = self.lines.get(where)
        probe = where
        while line is None and "." in probe:
            probe = probe.rsplit(".", 1)[0]
            line = self.lines.get(probe)
        loc = f"{self.path}:{line}" if line else str(self.path)
        return ToolError(f"{loc}: {where}: {what}; fix the profile (see docs/profiles.md)")

    def mapping(self, obj: Any, where: str, keys: dict[str, bool]) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise self.fail(where, f"expected a mapping, got {type(obj).__name__}")
        for key in obj:
            if key not in keys:
                raise self.fail(f"{where}.{key}" if where else str(key), "unknown field")
        for key, required in keys.items():
            if required and key not in obj:
                raise self.fail(f"{where}.{key}" if where else key, "missing")
        return obj

    def text(self, obj: dict[str, Any], key: str, where: str) -> str:
        value = obj.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(_join(where, key), f"expected a non-empty string, got {value!r}")
        return value

    def version(self, obj: dict[str, Any], key: str, where: str) -> Version:
        text = self.text(obj, key, where)
        try:
            return Version(text)
        except InvalidVersion:
            raise self.fail(_join(where, key), f"not a version: {text!r}") from None

    def integer(self, obj: dict[str, Any], key: str, where: str) -> int | None:
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(_join(where, key), f"expected a positive integer, got {value!r}")
        return value

    def flag(self, obj: dict[str, Any], key: str, where: str, default: bool) -> bool:
        value = obj.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(_join(where, key), f"expected true/false, got {value!r}")
        return value

    def str_map(self, obj: Any, where: str) -> dict[str, str]:
        if obj is None:
            return {}
        if not isinstance(obj, dict):
            raise self.fail(where, "expected a mapping of names to strings")
        for key, value in obj.items():
            if not isinstance(value, str):
                raise self.fail(_join(where, str(key)), f"expected a string, got {value!r}")
        return {str(k): v for k, v in obj.items()}


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _cc(text: Any) -> CC | None:
    return parse_cc(text)


def _line_index(text: str) -> dict[str, int]:
    """Field path -> 1-based line, from the YAML node tree (so errors can name a line)."""
    out: dict[str, int] = {}

    def walk(node: yaml.Node, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = _join(path, str(key.value))
                out[sub] = key.start_mark.line + 1
                walk(value, sub)

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return out
    if root is not None:
        walk(root, "")
    return out


def parse_profile(data: Any, path: Path, lines: dict[str, int] | None = None) -> Profile:
    r = _Reader(path, lines or {})
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
    for i, item in enumerate(m["compute_capabilities"] or []):
        cc = _cc(item)
        if cc is None:
            raise r.fail(f"match.compute_capabilities[{i}]", f"not like '9.0': {item!r}")
        ccs.append(cc)
    patterns = m["name_patterns"] or []
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise r.fail("match.name_patterns", "expected a list of strings")
    priority = m.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise r.fail("match.priority", f"expected an integer, got {priority!r}")
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
    mode = fa_raw["mode"]
    if mode not in FLASH_ATTN_MODES:
        raise r.fail("flash_attn.mode", f"expected one of {', '.join(FLASH_ATTN_MODES)}")
    flash_attn = FlashAttnSpec(
        mode=mode,
        version=r.version(fa_raw, "version", "flash_attn") if "version" in fa_raw else None,
        max_jobs=r.integer(fa_raw, "max_jobs", "flash_attn"),
        nvcc_threads=r.integer(fa_raw, "nvcc_threads", "flash_attn"),
        cuda_archs=str(fa_raw["cuda_archs"]) if fa_raw.get("cuda_archs") is not None else None,
    )
    if mode != "none" and flash_attn.version is None:
        raise r.fail("flash_attn.version", f"missing (required with mode {mode})")

    for key in ("attention", "attention_fallback"):
        if top[key] not in ATTENTION_IMPLS:
            raise r.fail(key, f"expected one of {', '.join(ATTENTION_IMPLS)}, got {top[key]!r}")

    packages: dict[str, SpecifierSet] = {}
    for dist, spec in r.str_map(top["packages"], "packages").items():
        try:
            packages[dist] = SpecifierSet(spec)
        except InvalidSpecifier:
            raise r.fail(f"packages.{dist}", f"not a version range: {spec!r}") from None

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
            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                raise r.fail(f"{where}.pins.{dist}", f"not a version range: {spec!r}") from None
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
        lines=lines or {},
    )


def load_profile_file(path: str | Path) -> Profile:
    p = Path(path)
    text, data = read_yaml(p, "profile")
    return parse_profile(data, p, _line_index(text))


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
