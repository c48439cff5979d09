"""Compatibility knowledge (`compat.yaml`), loaded and validated in one place.

`load_compat()` parses the YAML once into typed, frozen records and answers lookups
(driver minimum for a CUDA version, torch arch list for a build, vLLM's torch pin, ...).
A malformed entry raises `FILE:LINE: FIELD: message` (shop_r1_doctor.schema). Checks prefer facts
read from the machine (Requires-Dist, torch's arch list) and fall back to these tables.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from shop_r1_doctor.hardware import parse_cc
from shop_r1_doctor.schema import Reader

COMPAT_PATH = Path(__file__).with_name("compat.yaml")
COMPAT_SCHEMA = "shop-r1.compat/1"

CC = tuple[int, int]


def public(version: Version) -> Version:
    """Drop the local tag: `2.7.1+cu128` -> `2.7.1` (specifier ranges ignore builds)."""
    return Version(version.public)


def driver_text(version: Version) -> str:
    """An NVIDIA driver version as NVIDIA writes it: `Version` normalises 580.65.06 to
    580.65.6 and 576.02 to 576.2, which no driver is called; the fields after the branch
    are two digits."""
    major, *rest = version.release
    return ".".join([str(major), *(f"{n:02d}" for n in rest)])


@dataclass(frozen=True)
class DriverMin:
    cuda: Version
    linux: Version | None
    windows: Version | None
    source: str


@dataclass(frozen=True)
class MinorCompat:
    cuda_major: int
    linux: Version
    source: str


@dataclass(frozen=True)
class TorchRelease:
    torch: str  # "2.11"
    python: SpecifierSet
    variants: tuple[str, ...]
    default: str
    source: str


@dataclass(frozen=True)
class TorchArchs:
    variant: str
    torch: SpecifierSet
    archs: tuple[CC, ...]
    ptx: bool
    source: str


@dataclass(frozen=True)
class Ranged:
    """A value that holds for a version range of one package (vLLM pins, NCCL, ...)."""

    spec: SpecifierSet
    value: str
    source: str
    extra: str = ""  # CUDA version of a vLLM range; effect of an expandable_segments rule
    cuda_major: int | None = None


@dataclass(frozen=True)
class FaWheels:
    flash_attn: SpecifierSet
    torch: SpecifierSet
    cuda_majors: tuple[int, ...]
    source: str
    release: str = ""  # newest release with assets in this range; "" = none known
    # torch minor ("2.9") -> the Pythons that have wheels for it; unlisted: every Python
    python_for_torch: tuple[tuple[str, SpecifierSet], ...] = ()

    def covers(self, torch: Version, cuda_major: int, python: Version | None = None) -> bool:
        if public(torch) not in self.torch or cuda_major not in self.cuda_majors:
            return False
        pythons = dict(self.python_for_torch).get(f"{torch.major}.{torch.minor}")
        return pythons is None or python is None or public(python) in pythons


@dataclass(frozen=True)
class Feature:
    name: str
    min_cc: CC
    max_cc: CC | None
    source: str
    dist: str = ""
    module: str = ""


@dataclass(frozen=True)
class Compat:
    driver_min: tuple[DriverMin, ...]
    minor_compat: tuple[MinorCompat, ...]
    torch_releases: tuple[TorchRelease, ...]
    torch_archs: tuple[TorchArchs, ...]
    nccl_bundled: tuple[Ranged, ...]
    vllm_torch: tuple[Ranged, ...]
    vllm_opencv: tuple[Ranged, ...]  # value = vLLM's opencv-python-headless floor
    vllm_min_cc: tuple[Ranged, ...]
    vllm_expandable_segments: tuple[Ranged, ...]
    vllm_attention_env: dict[str, str]
    trl_vllm: tuple[Ranged, ...]
    flash_attn_wheels: tuple[FaWheels, ...]
    flash_attn_wheel_url: str
    flash_attn_cxx11abi: tuple[Ranged, ...]
    flash_attn_archs: tuple[CC, ...]
    flash_attn_sm120_from: Version
    flash_attn_archs_source: str
    features: dict[str, Feature]
    nvcc_min_for_arch: tuple[Ranged, ...]  # value = nvcc version; extra = min cc
    numpy2: dict[str, str]
    hf_xet: dict[str, str]

    # --- lookups (None = the tables do not say) ---
    def driver_min_for(self, cuda: Version, os: str = "linux") -> DriverMin | None:
        """Driver row for this CUDA major.minor (or the next newer row the table has)."""
        key = Version(f"{cuda.major}.{cuda.minor}")
        rows = [r for r in self.driver_min if r.cuda >= key and r.cuda.major == key.major]
        row = min(rows, key=lambda r: r.cuda) if rows else None
        if row is None or (os == "windows" and row.windows is None):
            return None
        return row

    def max_cuda_for_driver(self, driver: Version, os: str = "linux") -> Version | None:
        """Newest CUDA whose full-feature driver minimum this driver meets."""
        ok = [
            r.cuda
            for r in self.driver_min
            if (r.windows if os == "windows" else r.linux) is not None
            and driver >= (r.windows if os == "windows" else r.linux)  # type: ignore[operator]
        ]
        return max(ok) if ok else None

    def minor_compat_floor(self, cuda_major: int) -> MinorCompat | None:
        return next((m for m in self.minor_compat if m.cuda_major == cuda_major), None)

    def torch_release(self, torch: Version) -> TorchRelease | None:
        key = f"{torch.major}.{torch.minor}"
        return next((r for r in self.torch_releases if r.torch == key), None)

    def archs_for(self, torch: Version, variant: str) -> TorchArchs | None:
        base = public(torch)
        return next((a for a in self.torch_archs if a.variant == variant and base in a.torch), None)

    def nccl_for(self, torch: Version, cuda_major: int | None) -> Ranged | None:
        base = public(torch)
        for row in self.nccl_bundled:
            if base in row.spec and (row.cuda_major is None or row.cuda_major == cuda_major):
                return row
        return None

    def _ranged(self, rows: tuple[Ranged, ...], version: Version) -> Ranged | None:
        base = public(version)
        return next((r for r in rows if base in r.spec), None)

    def vllm_torch_pin(self, vllm: Version) -> Ranged | None:
        return self._ranged(self.vllm_torch, vllm)

    def vllm_min_cc_for(self, vllm: Version) -> Ranged | None:
        return self._ranged(self.vllm_min_cc, vllm)

    def vllm_expandable_rule(self, vllm: Version) -> Ranged | None:
        return self._ranged(self.vllm_expandable_segments, vllm)

    def trl_vllm_range(self, trl: Version) -> Ranged | None:
        return self._ranged(self.trl_vllm, trl)

    def flash_attn_abi_for(self, torch: Version) -> Ranged | None:
        return self._ranged(self.flash_attn_cxx11abi, torch)

    def fa_wheel_rows(self, flash_attn: Version) -> list[FaWheels]:
        base = public(flash_attn)
        return [w for w in self.flash_attn_wheels if base in w.flash_attn]

    def newest_fa_covering(
        self, torch: Version, cuda_major: int, python: Version | None = None
    ) -> FaWheels | None:
        """The newest released flash-attn wheel row that covers this torch, CUDA major
        and (when given) Python."""
        rows = [
            w for w in self.flash_attn_wheels if w.release and w.covers(torch, cuda_major, python)
        ]
        return rows[-1] if rows else None

    def feature(self, name: str) -> Feature | None:
        return self.features.get(name)

    def nvcc_min_for_cc(self, cc: CC) -> Ranged | None:
        def min_cc(row: Ranged) -> CC:
            return parse_cc(row.extra) or (0, 0)  # validated when parsed

        rows = [r for r in self.nvcc_min_for_arch if min_cc(r) <= cc]
        return max(rows, key=min_cc) if rows else None


# --- parsing with one-line errors ------------------------------------------------------


_HINT = "fix the entry or reinstall shop-r1"


def _reader(file: str, lines: Mapping[str, int] | None) -> Reader:
    return Reader(file, lines, _HINT)


def _rows(r: Reader, data: Any, key: str) -> list[tuple[str, dict[str, Any]]]:
    """A list of mappings, each with a `source`."""
    rows = r.rows(data, key)
    for where, item in rows:
        r.get(item, "source", where)
    return rows


def _cc(r: Reader, value: Any, path: str) -> CC:
    cc: CC = r.parsed(value, parse_cc, path, "not a compute capability like '8.0'")
    return cc


# Top-level sections of compat.yaml (name -> required); another name is a typo.
_COMPAT_KEYS = {
    **dict.fromkeys(
        [
            "schema",
            "driver_min",
            "minor_compat",
            "torch_releases",
            "torch_archs",
            "nccl_bundled",
            "vllm_torch",
            "vllm_opencv",
            "vllm_min_cc",
            "vllm_expandable_segments",
            "vllm_attention_env",
            "trl_vllm",
            "flash_attn_wheels",
            "flash_attn_wheel_url",
            "flash_attn_cxx11abi",
            "flash_attn_archs",
            "features",
            "nvcc_min_for_arch",
            "numpy2",
            "hf_xet",
        ],
        True,
    ),
    "as_of": False,
}


def parse_compat(data: Any, file: str, lines: Mapping[str, int] | None = None) -> Compat:
    r = _reader(file, lines)
    if not isinstance(data, dict):
        raise r.fail("compat", "expected a mapping at the top level")
    if data.get("schema") != COMPAT_SCHEMA:
        raise r.fail("schema", f"expected {COMPAT_SCHEMA!r}, got {data.get('schema')!r}")
    r.mapping(data, "", _COMPAT_KEYS)

    def ranged(key: str, spec_key: str, value_key: str, extra_key: str = "") -> tuple[Ranged, ...]:
        return tuple(
            Ranged(
                spec=r.spec(item, spec_key, w),
                value=str(r.get(item, value_key, w, (str, bool))),
                source=item["source"],
                extra=str(r.get(item, extra_key, w)) if extra_key and extra_key in item else "",
                cuda_major=r.opt(item, "cuda_major", w, int),
            )
            for w, item in _rows(r, data, key)
        )

    drivers = tuple(
        DriverMin(
            cuda=r.version(item, "cuda", w),
            linux=r.version(item, "linux", w) if "linux" in item else None,
            windows=r.version(item, "windows", w) if "windows" in item else None,
            source=item["source"],
        )
        for w, item in _rows(r, data, "driver_min")
    )
    minor = tuple(
        MinorCompat(r.get(item, "cuda_major", w, int), r.version(item, "linux", w), item["source"])
        for w, item in _rows(r, data, "minor_compat")
    )
    releases = tuple(
        TorchRelease(
            torch=r.get(item, "torch", w),
            python=r.spec(item, "python", w),
            variants=tuple(str(v) for v in r.get(item, "variants", w, list)),
            default=r.get(item, "default", w),
            source=item["source"],
        )
        for w, item in _rows(r, data, "torch_releases")
    )
    archs = tuple(
        TorchArchs(
            variant=r.get(item, "variant", w),
            torch=r.spec(item, "torch", w),
            archs=tuple(
                _cc(r, a, f"{w}.archs[{i}]") for i, a in enumerate(r.get(item, "archs", w, list))
            ),
            ptx=r.get(item, "ptx", w, bool),
            source=item["source"],
        )
        for w, item in _rows(r, data, "torch_archs")
    )
    fa = tuple(
        FaWheels(
            flash_attn=r.spec(item, "flash_attn", w),
            torch=r.spec(item, "torch", w),
            cuda_majors=tuple(int(c) for c in r.get(item, "cuda_majors", w, list)),
            source=item["source"],
            release=str(r.version(item, "release", w)) if "release" in item else "",
            python_for_torch=tuple(
                (str(minor), r.spec(pys, str(minor), f"{w}.python_for_torch"))
                for pys in [r.opt(item, "python_for_torch", w, dict) or {}]
                for minor in pys
            ),
        )
        for w, item in _rows(r, data, "flash_attn_wheels")
    )
    fa_archs = r.get(data, "flash_attn_archs", "", dict)
    features = {}
    for name, item in r.get(data, "features", "", dict).items():
        w = f"features.{name}"
        r.get(item, "source", w)
        features[name] = Feature(
            name=name,
            min_cc=_cc(r, r.get(item, "min_cc", w), f"{w}.min_cc"),
            max_cc=_cc(r, item["max_cc"], f"{w}.max_cc") if "max_cc" in item else None,
            source=item["source"],
            dist=r.opt(item, "dist", w) or "",
            module=r.opt(item, "module", w) or "",
        )
    nvcc_rows = tuple(
        Ranged(
            spec=SpecifierSet(),
            value=str(r.version(item, "nvcc", w)),
            source=item["source"],
            extra=_cc_text(_cc(r, r.get(item, "min_cc", w), f"{w}.min_cc")),
        )
        for w, item in _rows(r, data, "nvcc_min_for_arch")
    )
    for mapping in ("vllm_attention_env", "numpy2", "hf_xet"):
        section = r.get(data, mapping, "", dict)
        r.get(section, "source", mapping)
        for key, value in section.items():
            if key != "source":
                r.version(section, key, mapping)
            elif not isinstance(value, str):
                raise r.fail(f"{mapping}.{key}", "expected a string")
    return Compat(
        driver_min=drivers,
        minor_compat=minor,
        torch_releases=releases,
        torch_archs=archs,
        nccl_bundled=ranged("nccl_bundled", "torch", "nccl"),
        vllm_torch=ranged("vllm_torch", "vllm", "torch", "cuda"),
        vllm_opencv=ranged("vllm_opencv", "vllm", "opencv_python_headless"),
        vllm_min_cc=ranged("vllm_min_cc", "vllm", "min_cc"),
        vllm_expandable_segments=ranged("vllm_expandable_segments", "vllm", "effect"),
        vllm_attention_env=dict(data["vllm_attention_env"]),
        trl_vllm=ranged("trl_vllm", "trl", "vllm"),
        flash_attn_wheels=fa,
        flash_attn_wheel_url=r.get(data, "flash_attn_wheel_url", ""),
        flash_attn_cxx11abi=ranged("flash_attn_cxx11abi", "torch", "abi"),
        flash_attn_archs=tuple(
            _cc(r, a, f"flash_attn_archs.archs[{i}]")
            for i, a in enumerate(r.get(fa_archs, "archs", "flash_attn_archs", list))
        ),
        flash_attn_sm120_from=r.version(fa_archs, "sm120_native_from", "flash_attn_archs"),
        flash_attn_archs_source=r.get(fa_archs, "source", "flash_attn_archs"),
        features=features,
        nvcc_min_for_arch=nvcc_rows,
        numpy2=dict(data["numpy2"]),
        hf_xet=dict(data["hf_xet"]),
    )


def _cc_text(cc: CC) -> str:
    return f"{cc[0]}.{cc[1]}"


def load_compat_file(path: str | Path) -> Compat:
    """Parse one compat file (tests point this at broken copies)."""
    r, data = Reader.read(path, "compatibility data")
    return parse_compat(data, str(path), r.lines)


@functools.lru_cache(maxsize=1)
def load_compat() -> Compat:
    """The packaged compatibility knowledge, parsed and validated once per process."""
    return load_compat_file(COMPAT_PATH)


# --- finding codes (codes.yaml) --------------------------------------------------------

CODES_PATH = Path(__file__).with_name("codes.yaml")
CODES_SCHEMA = "shop-r1.codes/1"
_SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class CodeInfo:
    """What a finding code means: default severity, trigger, fix and catalog sources."""

    code: str
    severity: str
    subject: str
    trigger: str
    fix: str
    urls: tuple[str, ...]
    log_only: bool = False
    # codes this one is the root cause of: when both fire, the symptom leaves the summary
    explains: tuple[str, ...] = ()


_CODE_KEYS = {
    **dict.fromkeys(("severity", "subject", "trigger", "fix", "urls"), True),
    **dict.fromkeys(("log_only", "explains"), False),
}


def parse_codes(
    data: Any, file: str, lines: Mapping[str, int] | None = None
) -> dict[str, CodeInfo]:
    r = _reader(file, lines)
    if not isinstance(data, dict) or data.get("schema") != CODES_SCHEMA:
        raise r.fail("schema", f"expected {CODES_SCHEMA!r}")
    out: dict[str, CodeInfo] = {}
    for code, item in r.get(data, "codes", "", dict).items():
        w = f"codes.{code}"
        r.mapping(item, w, _CODE_KEYS)
        severity = r.get(item, "severity", w, allowed=_SEVERITIES)
        urls = r.https_list(item, "urls", w)
        out[code] = CodeInfo(
            code=code,
            severity=severity,
            subject=r.get(item, "subject", w),
            trigger=r.get(item, "trigger", w),
            fix=r.get(item, "fix", w),
            urls=tuple(urls),
            log_only=bool(r.opt(item, "log_only", w, bool)),
            explains=tuple(
                r.str_list(item, "explains", w, "finding codes") if "explains" in item else ()
            ),
        )
    for code, info in out.items():
        unknown = [c for c in info.explains if c not in out or c == code]
        if unknown:
            raise r.fail(f"codes.{code}.explains", f"unknown code(s): {', '.join(unknown)}")
    return out


def load_codes_file(path: str | Path) -> dict[str, CodeInfo]:
    r, data = Reader.read(path, "finding codes")
    return parse_codes(data, str(path), r.lines)


@functools.lru_cache(maxsize=1)
def load_codes() -> dict[str, CodeInfo]:
    """Every finding code with its default severity, trigger, fix and sources."""
    return load_codes_file(CODES_PATH)


# --- measured figures (measured.yaml) --------------------------------------------------

MEASURED_PATH = Path(__file__).with_name("measured.yaml")


@functools.lru_cache(maxsize=1)
def load_measured() -> dict[str, Any]:
    r, data = Reader.read(MEASURED_PATH, "measured figures")
    if not isinstance(data, dict):
        raise r.fail("", "expected a mapping of measured figures")
    return data


def grpo_vllm_speedup() -> str:
    """The measured GRPO speed-up of colocated vLLM over transformers generate(), in words."""
    m = load_measured().get("grpo_vllm_colocate") or {}
    try:
        step, rollout = float(m["step_speedup"]), float(m["rollout_speedup"])
    except (KeyError, TypeError, ValueError):
        return "vLLM rollouts are faster (no measured figure recorded)"
    return f"{step:g}x per GRPO step, {rollout:g}x per rollout, measured ({m.get('setting', '')})"
