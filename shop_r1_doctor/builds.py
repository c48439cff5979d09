"""Which builds a machine can run: torch for its GPUs *and* driver, vLLM's wheels on that
torch, and how many flash-attn compile jobs its RAM allows. One owner for these facts:
`shop-r1 setup`, the doctor's plan of fixes, its per-finding fixes and the profile match
all ask here.

`uv pip install --torch-backend=auto` picks an index from the driver alone, and a fix
picked from the GPU alone can ask for cu130 on a driver that runs CUDA <= 12.8. Here both
decide, from the knowledge tables only (compat.yaml: the driver -> CUDA minimums, each
torch release's CUDA variants, each variant's arch list): the profile's own variant when
this machine can run it, else the newest variant of the same torch release that it can.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import Version

from shop_r1_doctor.hardware import CC, archs_with_ptx
from shop_r1_doctor.knowledge import driver_text, load_compat

INDEX_BASE = "https://download.pytorch.org/whl"
GIB = 1 << 30
# flash-attn's own MAX_JOBS heuristic (its setup.py): one nvcc job per ~9 GB of RAM
BUILD_GB_PER_JOB = 9


@dataclass(frozen=True)
class TorchBuild:
    version: Version  # public release, e.g. 2.11.0
    variant: str  # cu128, cu130, cpu
    index_url: str
    reason: str  # printed with the plan: why this build
    # the profile's variant was not runnable here (the driver or the GPUs ruled it out)
    downgraded_from: str = ""

    @property
    def local(self) -> str:
        return f"{self.version}+{self.variant}"

    @property
    def cuda(self) -> Version | None:
        return variant_cuda(self.variant)


def variant_cuda(variant: str) -> Version | None:
    """`cu130` -> 13.0, `cu128` -> 12.8; None for cpu."""
    m = re.fullmatch(r"cu(\d+)(\d)", variant)
    return Version(f"{m.group(1)}.{m.group(2)}") if m else None


def index_for(variant: str, profile_index: str = "", profile_variant: str = "") -> str:
    """The index URL of `variant`; a profile's mirror is kept, with the variant swapped."""
    if profile_index and profile_variant and profile_index.rstrip("/").endswith(profile_variant):
        return profile_index.rstrip("/")[: -len(profile_variant)] + variant
    return f"{INDEX_BASE}/{variant}"


def driver_max_cuda(driver: Version | None, os_name: str = "linux") -> Version | None:
    """The newest CUDA this driver runs with full features (None: driver unknown)."""
    return load_compat().max_cuda_for_driver(driver, os_name) if driver is not None else None


def choose_torch_build(
    version: Version,
    preferred_variant: str,
    ccs: Sequence[CC],
    driver: Version | None,
    *,
    os_name: str = "linux",
    profile_index: str = "",
) -> TorchBuild | None:
    """The build of torch `version` for these GPUs and this driver; None if none runs.

    A CPU variant is returned as asked. An unknown driver does not restrict (a plan made
    on a machine without one, for another). An unknown torch release offers only the
    preferred variant.
    """
    idx = profile_index or index_for(preferred_variant)
    if variant_cuda(preferred_variant) is None:
        return TorchBuild(
            version, preferred_variant, idx, f"the profile's {preferred_variant} build"
        )
    compat = load_compat()
    release = compat.torch_release(version)
    variants = list(release.variants) if release else [preferred_variant]
    max_cuda = driver_max_cuda(driver, os_name)

    def why_not(variant: str) -> str:
        cuda = variant_cuda(variant)
        if cuda is None:
            return "not a CUDA build"
        if max_cuda is not None and cuda > max_cuda:
            need = compat.driver_min_for(cuda, os_name)
            need_text = f" >= {driver_text(need.linux)}" if need and need.linux else ""
            return (
                f"{variant} needs driver{need_text or ' newer'}; "
                f"driver {driver_text(driver) if driver else '?'} runs CUDA <= {max_cuda}"
            )
        row = compat.archs_for(version, variant)
        if row is not None and ccs:
            archs = archs_with_ptx(row.archs, row.ptx)
            missing = [cc for cc in ccs if not archs.runs_on(cc)]
            if missing:
                return "no kernels for " + ", ".join(f"sm_{a}{b}" for a, b in sorted(set(missing)))
        return ""

    gpus = ", ".join(f"sm_{a}{b}" for a, b in sorted(set(ccs))) or "the GPUs"
    driver_part = (
        f"driver {driver_text(driver)} (CUDA <= {max_cuda})"
        if driver is not None and max_cuda
        else "driver unknown"
    )
    if preferred_variant in variants and not why_not(preferred_variant):
        return TorchBuild(
            version,
            preferred_variant,
            idx,
            f"the profile's {preferred_variant}: runs on {gpus}, {driver_part}",
        )
    runnable = [v for v in variants if not why_not(v)]
    if not runnable:
        return None
    best = max(runnable, key=lambda v: variant_cuda(v) or Version("0"))
    because = why_not(preferred_variant) if preferred_variant in variants else "not built"
    return TorchBuild(
        version,
        best,
        index_for(best, idx, preferred_variant),
        f"{best}, not the profile's {preferred_variant} ({because}); runs on {gpus}",
        downgraded_from=preferred_variant,
    )


def unrunnable_reason(version: Version, ccs: Sequence[CC], driver: Version | None) -> str:
    """Why no build of torch `version` runs here (for the one-line refusal)."""
    max_cuda = driver_max_cuda(driver)
    gpus = ", ".join(f"sm_{a}{b}" for a, b in sorted(set(ccs))) or "these GPUs"
    drv = (
        f"driver {driver_text(driver)} runs CUDA <= {max_cuda}"
        if driver and max_cuda
        else "the driver is too old for any CUDA build"
    )
    return f"no CUDA build of torch {version} runs on {gpus} with this driver ({drv})"


def vllm_wheel_blocker(vllm: Version, torch_variant: str) -> str:
    """Why vLLM `vllm`'s wheels cannot run on a torch of `torch_variant` ("" when they can):
    vLLM's compiled ops are built for one CUDA major."""
    row = load_compat().vllm_torch_pin(vllm)
    wheel_cuda = Version(row.extra) if row and row.extra else None
    torch_cuda = variant_cuda(torch_variant)
    if wheel_cuda is None or torch_cuda is None or wheel_cuda.major == torch_cuda.major:
        return ""
    return (
        f"vLLM {vllm} wheels are built for CUDA {wheel_cuda} and torch here is "
        f"{torch_variant} (vllm._C would not load)"
    )


def build_jobs(default: int, ram_bytes: int | None, cpus: int | None) -> tuple[int, str]:
    """MAX_JOBS for a flash-attn source build, and why: RAM / 9 GB, at most the CPUs."""
    if ram_bytes is None:
        return default, f"MAX_JOBS={default}: the profile's (RAM unknown)"
    by_ram = max(1, ram_bytes // (BUILD_GB_PER_JOB * GIB))
    jobs = min(by_ram, cpus) if cpus else by_ram
    cpu_text = f", {cpus} CPUs" if cpus else ""
    return (
        jobs,
        f"MAX_JOBS={jobs}: {ram_bytes // GIB} GiB RAM / {BUILD_GB_PER_JOB} GB per nvcc job{cpu_text}",
    )
