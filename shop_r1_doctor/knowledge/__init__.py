"""Compatibility knowledge (`compat.yaml`), loaded and validated in one place.

`load_compat()` decodes the YAML once into typed, frozen records (msgspec Structs) and answers lookups
(driver minimum for a CUDA version, torch arch list for a build, vLLM's torch pin, ...).
A malformed entry raises `FILE:LINE: FIELD: message` (shop_r1_doctor.schema). Checks prefer facts
read from the machine (Requires-Dist, torch's arch list) and fall back to these tables.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from shop_r1_doctor.hardware import Cc
from shop_r1_doctor.schema import (
    Contract,
    FieldError,
    decode,
    decode_file,
    is_version,
    listing,
)

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


class DriverMin(Contract, frozen=True):
    cuda: Version
    source: str
    linux: Version | None = None
    windows: Version | None = None


class MinorCompat(Contract, frozen=True):
    cuda_major: int
    linux: Version
    source: str


class TorchRelease(Contract, frozen=True):
    torch: str  # "2.11"
    python: SpecifierSet
    variants: tuple[str, ...]
    default: str
    source: str


class TorchArchs(Contract, frozen=True):
    variant: str
    torch: SpecifierSet
    archs: tuple[Cc, ...]
    ptx: bool
    source: str


class Ranged(Contract, frozen=True):
    """A value that holds for a version range of one package (vLLM pins, NCCL, ...).
    Each table names `spec` and `value` for what they hold (subclasses below)."""

    spec: SpecifierSet
    value: str
    source: str
    extra: str = ""  # CUDA version of a vLLM range
    cuda_major: int | None = None


class _NcclRow(Ranged, frozen=True):
    spec: SpecifierSet = msgspec.field(name="torch")
    value: str = msgspec.field(name="nccl")


class _VllmTorchRow(Ranged, frozen=True):
    spec: SpecifierSet = msgspec.field(name="vllm")
    value: str = msgspec.field(name="torch")
    extra: str = msgspec.field(default="", name="cuda")


class _VllmOpencvRow(Ranged, frozen=True):
    spec: SpecifierSet = msgspec.field(name="vllm")
    value: str = msgspec.field(name="opencv_python_headless")


class _VllmMinCcRow(Ranged, frozen=True):
    spec: SpecifierSet = msgspec.field(name="vllm")
    value: str = msgspec.field(name="min_cc")


class _VllmSegmentsRow(Ranged, frozen=True):
    spec: SpecifierSet = msgspec.field(name="vllm")
    value: Literal["assert", "handled"] = msgspec.field(name="effect")


class _TrlVllmRow(Ranged, frozen=True):
    spec: SpecifierSet = msgspec.field(name="trl")
    value: str = msgspec.field(name="vllm")


class AbiRow(Contract, frozen=True):
    """Whether flash-attn's wheels for a torch range are built with the C++11 ABI."""

    spec: SpecifierSet = msgspec.field(name="torch")
    abi: bool
    source: str


class NvccRow(Contract, frozen=True):
    """The first nvcc that compiles for GPUs from `min_cc` on."""

    min_cc: Cc
    nvcc: Version
    source: str


class FaWheels(Contract, frozen=True):
    flash_attn: SpecifierSet
    torch: SpecifierSet
    cuda_majors: tuple[int, ...]
    source: str
    release: str = ""  # newest release with assets in this range; "" = none known
    # torch minor ("2.9") -> the Pythons that have wheels for it; unlisted: every Python
    python_for_torch: dict[str, SpecifierSet] = {}

    def covers(self, torch: Version, cuda_major: int, python: Version | None = None) -> bool:
        if public(torch) not in self.torch or cuda_major not in self.cuda_majors:
            return False
        pythons = self.python_for_torch.get(f"{torch.major}.{torch.minor}")
        return pythons is None or python is None or public(python) in pythons

    def __post_init__(self) -> None:
        if self.release and not is_version(self.release):
            raise FieldError("release", f"not a version: {self.release!r}")


class Feature(Contract, frozen=True):
    min_cc: Cc
    source: str
    max_cc: Cc | None = None
    dist: str = ""
    module: str = ""


class FaArchs(Contract, frozen=True):
    archs: tuple[Cc, ...]
    sm120_native_from: Version
    source: str


class AttentionEnv(Contract, frozen=True):
    """vLLM's VLLM_ATTENTION_BACKEND over its versions."""

    deprecated_from: Version
    ignored_from: Version
    xformers_removed_after: Version
    source: str


class Numpy2(Contract, frozen=True):
    """Which versions of torch, Megatron and OpenCV need or refuse numpy 2."""

    torch_numpy2_from: Version
    megatron_numpy1_until: Version
    opencv_numpy2_from: Version
    opencv_last_numpy1: Version
    source: str


class HfXet(Contract, frozen=True):
    stall_fixed_in: Version
    source: str


class NcclShm(Contract, frozen=True):
    """From which NCCL versions its buffers leave /dev/shm for cuMem memory, and the vLLM
    versions that turn cuMem off for every process that imports vLLM."""

    cumem_default_from: Version
    cumem_host_default_from: Version
    cumem_host_min_driver_cuda: Version
    vllm_cumem_off: SpecifierSet
    measured: str
    source: str


class LigerDsl(Contract, frozen=True):
    """Liger versions whose kernel dispatcher prefers CuTe DSL kernels over Triton as soon
    as `dsl_package` imports, the ops to pin back, and what that costs where measured."""

    liger: SpecifierSet
    dsl_package: str
    ops: tuple[str, ...]
    impl: str
    measured: str
    source: str

    def env(self) -> dict[str, str]:
        """The per-op variables that pin `ops` to `impl` (Liger's dispatcher reads them)."""
        return {f"LIGER_KERNEL_IMPL_{op.upper()}": self.impl for op in self.ops}


class AllocKey(Contract, frozen=True):
    """One key PYTORCH_CUDA_ALLOC_CONF accepts, the kind of value its parser takes, and
    the first torch that knows it where a versioned document says so."""

    key: str
    value: Literal["int", "float", "bool", "backend", "any"]
    source: str
    since: Version | None = None


class AllocConf(Contract, frozen=True):
    variables: tuple[str, ...]
    keys: tuple[AllocKey, ...]

    def key(self, name: str) -> AllocKey | None:
        return next((k for k in self.keys if k.key == name), None)


class Compat(Contract, frozen=True):
    schema: Literal["shop-r1.compat/1"]
    driver_min: tuple[DriverMin, ...]
    minor_compat: tuple[MinorCompat, ...]
    torch_releases: tuple[TorchRelease, ...]
    torch_archs: tuple[TorchArchs, ...]
    nccl_bundled: tuple[_NcclRow, ...]
    vllm_torch: tuple[_VllmTorchRow, ...]
    vllm_opencv: tuple[_VllmOpencvRow, ...]  # value = vLLM's opencv-python-headless floor
    vllm_min_cc: tuple[_VllmMinCcRow, ...]
    vllm_expandable_segments: tuple[_VllmSegmentsRow, ...]
    vllm_attention_env: AttentionEnv
    trl_vllm: tuple[_TrlVllmRow, ...]
    flash_attn_wheels: tuple[FaWheels, ...]
    flash_attn_wheel_url: str
    flash_attn_cxx11abi: tuple[AbiRow, ...]
    flash_attn_archs: FaArchs
    features: dict[str, Feature]
    nvcc_min_for_arch: tuple[NvccRow, ...]
    numpy2: Numpy2
    hf_xet: HfXet
    nccl_shm: NcclShm
    liger_cutedsl: LigerDsl
    cuda_alloc_conf: AllocConf
    as_of: str = ""

    @property
    def flash_attn_sm120_from(self) -> Version:
        return self.flash_attn_archs.sm120_native_from

    @property
    def flash_attn_archs_source(self) -> str:
        return self.flash_attn_archs.source

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

    def flash_attn_abi_for(self, torch: Version) -> AbiRow | None:
        base = public(torch)
        return next((r for r in self.flash_attn_cxx11abi if base in r.spec), None)

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

    def nvcc_min_for_cc(self, cc: CC) -> NvccRow | None:
        rows = [r for r in self.nvcc_min_for_arch if r.min_cc <= cc]
        return max(rows, key=lambda r: r.min_cc) if rows else None


_HINT = "fix the entry or reinstall shop-r1"


def parse_compat(data: Any, file: str, lines: Mapping[str, int] | None = None) -> Compat:
    return decode(data, Compat, file, lines, _HINT)


def load_compat_file(path: str | Path) -> Compat:
    """Parse one compat file (tests point this at broken copies)."""
    return decode_file(path, Compat, "compatibility data", _HINT)[0]


@functools.lru_cache(maxsize=1)
def load_compat() -> Compat:
    """The packaged compatibility knowledge, parsed and validated once per process."""
    return load_compat_file(COMPAT_PATH)


# --- finding codes (codes.yaml) --------------------------------------------------------

CODES_PATH = Path(__file__).with_name("codes.yaml")
CODES_SCHEMA = "shop-r1.codes/1"


class CodeInfo(Contract, frozen=True):
    """What a finding code means: default severity, trigger, fix and catalog sources."""

    severity: Literal["error", "warning", "info"]
    subject: str
    trigger: str
    fix: str
    urls: tuple[str, ...]
    log_only: bool = False
    # codes this one is the root cause of: when both fire, the symptom leaves the summary
    explains: Annotated[tuple[str, ...], listing("finding codes")] = ()
    code: str = ""  # the key it is filed under (set when the file is decoded)

    def __post_init__(self) -> None:
        if not all(u.startswith("https://") for u in self.urls):
            raise FieldError("urls", "expected a list of https:// URLs")


class CodesFile(Contract, frozen=True):
    schema: Literal["shop-r1.codes/1"]
    codes: dict[str, CodeInfo]

    def __post_init__(self) -> None:
        for code, info in self.codes.items():
            msgspec.structs.force_setattr(info, "code", code)
            unknown = [c for c in info.explains if c not in self.codes or c == code]
            if unknown:
                raise FieldError(f"codes.{code}.explains", f"unknown code(s): {', '.join(unknown)}")


def parse_codes(
    data: Any, file: str, lines: Mapping[str, int] | None = None
) -> dict[str, CodeInfo]:
    return decode(data, CodesFile, file, lines, _HINT).codes


def load_codes_file(path: str | Path) -> dict[str, CodeInfo]:
    return decode_file(path, CodesFile, "finding codes", _HINT)[0].codes


@functools.lru_cache(maxsize=1)
def load_codes() -> dict[str, CodeInfo]:
    """Every finding code with its default severity, trigger, fix and sources."""
    return load_codes_file(CODES_PATH)


# --- measured figures (measured.yaml) --------------------------------------------------

MEASURED_PATH = Path(__file__).with_name("measured.yaml")


class Speedup(Contract, frozen=True):
    """A measured speed-up of one way of running over another, with its setting."""

    step_speedup: float
    rollout_speedup: float
    setting: str
    source: str


class Measured(Contract, frozen=True):
    grpo_vllm_colocate: Speedup | None = None


@functools.lru_cache(maxsize=1)
def load_measured() -> Measured:
    return decode_file(MEASURED_PATH, Measured, "measured figures", _HINT)[0]


def grpo_vllm_speedup() -> str:
    """The measured GRPO speed-up of colocated vLLM over transformers generate(), in words."""
    m = load_measured().grpo_vllm_colocate
    if m is None:
        return "vLLM rollouts are faster (no measured figure recorded)"
    return f"{m.step_speedup:g}x per GRPO step, {m.rollout_speedup:g}x per rollout, measured ({m.setting})"
