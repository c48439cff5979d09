"""GPU hardware in one place: compute capabilities, CUDA arch lists, GPU facts by name.

One parser for each spelling and one rule for what runs where:

- a compute capability `"8.9"` -> (8, 9) (`parse_cc`);
- an arch list: `TORCH_CUDA_ARCH_LIST` syntax `"8.0;9.0+PTX"` (`parse_arch_list`),
  `torch.cuda.get_arch_list()` names `["sm_80", "compute_90"]` (`parse_torch_archs`), or
  a knowledge row's archs with `ptx: true` (`archs_with_ptx`), all into one `Archs`;
- the rule (`Archs.runs_on`): SASS built for sm_XY runs on sm_XZ with Z >= Y (same
  major); PTX for compute_XY is JIT-compiled for any GPU with cc >= X.Y. `+PTX` adds PTX
  for the arch it is attached to (TORCH_CUDA_ARCH_LIST's meaning); a knowledge row's
  `ptx: true` means PTX of its highest arch (what torch wheels ship);
- GPU facts (capability, peak dense TFLOP/s, memory, consumer or data-center, P2P) from
  `knowledge/gpus.yaml` by name (`gpu_info`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from shop_r1_doctor.schema import Contract, FieldError, decode, decode_file, listing

CC = tuple[int, int]
GPUS_PATH = Path(__file__).parent / "knowledge" / "gpus.yaml"
GPUS_SCHEMA = "shop-r1.gpus/1"


def parse_cc(text: Any) -> CC | None:
    """`"9.0"` -> (9, 0); `"10.0a"`/`"9.0f"` (arch-specific variants) -> their base; junk -> None."""
    if not isinstance(text, str) or "." not in text:
        return None
    major, _, minor = text.strip().partition(".")
    minor = minor.rstrip("af")
    if not (major.isdigit() and minor.isdigit()):
        return None
    return int(major), int(minor)


def cc_text(cc: CC) -> str:
    return f"{cc[0]}.{cc[1]}"


class Cc(tuple[int, int]):
    """A compute capability in a contract: written `"8.0"` in YAML, a CC tuple in code."""

    __slots__ = ()

    @classmethod
    def from_yaml(cls, obj: Any) -> Cc:
        cc = parse_cc(obj)
        if cc is None:
            raise ValueError(f"not a compute capability like '8.0': {obj!r}")
        return cls(cc)


@dataclass(frozen=True)
class Archs:
    """Code a build carries: real SASS per arch, and PTX per arch."""

    sass: tuple[CC, ...]
    ptx: tuple[CC, ...] = ()

    def runs_on(self, cc: CC) -> bool:
        return any(a[0] == cc[0] and a[1] <= cc[1] for a in self.sass) or any(
            p <= cc for p in self.ptx
        )

    def text(self) -> str:
        """Back in TORCH_CUDA_ARCH_LIST syntax: `8.0;9.0+PTX`."""
        every = sorted(set(self.sass) | set(self.ptx))
        return ";".join(cc_text(a) + ("+PTX" if a in self.ptx else "") for a in every)

    def __bool__(self) -> bool:
        return bool(self.sass or self.ptx)


def parse_arch_list(text: str) -> Archs:
    """TORCH_CUDA_ARCH_LIST: `"8.0;8.6 9.0+PTX"` (commas too); `X.Y+PTX` is SASS and PTX for X.Y."""
    sass: list[CC] = []
    ptx: list[CC] = []
    for token in re.split(r"[;,\s]+", text.strip()):
        with_ptx = token.endswith("+PTX")
        cc = parse_cc(token.removesuffix("+PTX"))
        if cc is None:
            continue
        sass.append(cc)
        if with_ptx:
            ptx.append(cc)
    return Archs(tuple(sass), tuple(ptx))


def parse_torch_archs(names: Iterable[Any]) -> Archs:
    """`torch.cuda.get_arch_list()`: `sm_90` is SASS, `compute_90` is PTX (`sm_90a` too)."""
    sass: list[CC] = []
    ptx: list[CC] = []
    for name in names:
        m = re.fullmatch(r"(sm|compute)_(\d+)(\d)[af]?", name) if isinstance(name, str) else None
        if m:
            (sass if m.group(1) == "sm" else ptx).append((int(m.group(2)), int(m.group(3))))
    return Archs(tuple(sass), tuple(ptx))


def archs_with_ptx(archs: Iterable[CC], ptx: bool) -> Archs:
    """A knowledge row (`archs: [...]`, `ptx: true`): PTX of the highest arch only."""
    sass = tuple(archs)
    return Archs(sass, (max(sass),) if ptx and sass else ())


# --- GPU facts by name (knowledge/gpus.yaml) -------------------------------------------


Kind = Literal["datacenter", "workstation", "consumer"]


def _positive(value: float | None, field: str) -> None:
    if value is not None and value <= 0:
        raise FieldError(field, f"expected a positive number, got {value!r}")


class GpuInfo(Contract, frozen=True):
    patterns: Annotated[tuple[str, ...], listing("name substrings")]
    cc: Cc
    memory_gb: float
    kind: Kind
    bf16_tflops: float | None = None
    fp16_tflops: float | None = None
    p2p: bool | None = None  # False: NCCL's PCIe P2P path hangs on these cards

    def __post_init__(self) -> None:
        if not self.patterns:
            raise FieldError("patterns", "expected a list of name substrings, got []")
        for name in ("memory_gb", "bf16_tflops", "fp16_tflops"):
            _positive(getattr(self, name), name)

    @property
    def consumer(self) -> bool:
        return self.kind == "consumer"

    def peak_flops(self, dtype: str = "bf16") -> float | None:
        """Dense tensor-core peak in FLOP/s for `dtype` (bf16 falls back to fp16 on
        GPUs without bf16 tensor cores, the MFU convention of the callbacks)."""
        tflops = self.fp16_tflops if dtype == "fp16" else self.bf16_tflops or self.fp16_tflops
        return tflops * 1e12 if tflops else None


class GpusFile(Contract, frozen=True):
    schema: Literal["shop-r1.gpus/1"]
    gpus: tuple[GpuInfo, ...]

    def __post_init__(self) -> None:
        if not self.gpus:
            raise FieldError("gpus", "expected a non-empty list")


_HINT = "fix the entry in gpus.yaml"


def parse_gpus(data: Any, file: str, lines: Mapping[str, int] | None = None) -> tuple[GpuInfo, ...]:
    return decode(data, GpusFile, file, lines, _HINT).gpus


@functools.lru_cache(maxsize=1)
def load_gpus() -> tuple[GpuInfo, ...]:
    return decode_file(GPUS_PATH, GpusFile, "GPU knowledge", _HINT)[0].gpus


def gpu_info(name: Any) -> GpuInfo | None:
    """The first gpus.yaml entry with a pattern in `name` (file order = priority)."""
    if not isinstance(name, str) or not name:
        return None
    return next((g for g in load_gpus() if any(p in name for p in g.patterns)), None)
