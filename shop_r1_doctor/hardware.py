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
from typing import Any

from shop_r1_doctor.schema import Reader, is_kind

CC = tuple[int, int]
GPUS_PATH = Path(__file__).parent / "knowledge" / "gpus.yaml"
GPUS_SCHEMA = "shop-r1.gpus/1"
KINDS = ("datacenter", "workstation", "consumer")


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


@dataclass(frozen=True)
class GpuInfo:
    patterns: tuple[str, ...]
    cc: CC
    bf16_tflops: float | None
    fp16_tflops: float | None
    memory_gb: float
    kind: str  # datacenter | workstation | consumer
    p2p: bool | None  # False: NCCL's PCIe P2P path hangs on these cards

    @property
    def consumer(self) -> bool:
        return self.kind == "consumer"

    def peak_flops(self, dtype: str = "bf16") -> float | None:
        """Dense tensor-core peak in FLOP/s for `dtype` (bf16 falls back to fp16 on
        GPUs without bf16 tensor cores, the MFU convention of the callbacks)."""
        tflops = self.fp16_tflops if dtype == "fp16" else self.bf16_tflops or self.fp16_tflops
        return tflops * 1e12 if tflops else None


_GPU_KEYS = {
    **dict.fromkeys(("patterns", "cc", "kind", "memory_gb"), True),
    **dict.fromkeys(("bf16_tflops", "fp16_tflops", "p2p"), False),
}


def _num(r: Reader, entry: dict[str, Any], key: str, where: str, optional: bool) -> float | None:
    value: Any = entry.get(key)
    if value is None and optional:
        return None
    if not is_kind(value, (int, float)) or value <= 0:
        raise r.fail(f"{where}.{key}", f"expected a positive number, got {value!r}")
    return float(value)


def parse_gpus(data: Any, file: str, lines: Mapping[str, int] | None = None) -> tuple[GpuInfo, ...]:
    r = Reader(file, lines, "fix the entry in gpus.yaml")
    if not isinstance(data, dict) or data.get("schema") != GPUS_SCHEMA:
        raise r.fail("schema", f"expected {GPUS_SCHEMA!r}")
    r.mapping(data, "", {"schema": True, "gpus": True})
    if not isinstance(data["gpus"], list) or not data["gpus"]:
        raise r.fail("gpus", "expected a non-empty list")
    out = []
    for where, entry in r.rows(data, "gpus"):
        r.mapping(entry, where, _GPU_KEYS)
        p2p = entry.get("p2p")
        if p2p is not None and not isinstance(p2p, bool):
            raise r.fail(f"{where}.p2p", f"expected true, false or null, got {p2p!r}")
        out.append(
            GpuInfo(
                patterns=tuple(r.str_list(entry, "patterns", where, "name substrings", True)),
                cc=r.parsed(
                    entry["cc"], parse_cc, f"{where}.cc", "not a compute capability like '8.0'"
                ),
                bf16_tflops=_num(r, entry, "bf16_tflops", where, True),
                fp16_tflops=_num(r, entry, "fp16_tflops", where, True),
                memory_gb=_num(r, entry, "memory_gb", where, False) or 0.0,
                kind=r.get(entry, "kind", where, allowed=KINDS),
                p2p=p2p,
            )
        )
    return tuple(out)


@functools.lru_cache(maxsize=1)
def load_gpus() -> tuple[GpuInfo, ...]:
    r, data = Reader.read(GPUS_PATH, "GPU knowledge")
    return parse_gpus(data, str(GPUS_PATH), r.lines)


def gpu_info(name: Any) -> GpuInfo | None:
    """The first gpus.yaml entry with a pattern in `name` (file order = priority)."""
    if not isinstance(name, str) or not name:
        return None
    return next((g for g in load_gpus() if any(p in name for p in g.patterns)), None)
