"""Small shared readers for checks: torch's build, GPUs (packages: Facts.package and co.).

All of them follow the snapshot contract: a missing fact gives None ("unknown"), and
none of them raises on odd input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from packaging.version import Version

from shop_r1_doctor.catalog import finding as finding  # re-exported: checks build findings here
from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, GpuProcess, parse_version
from shop_r1_doctor.hardware import Archs, parse_cc, parse_torch_archs
from shop_r1_doctor.hardware import cc_text as cc_text  # re-exported for the checks

CC = tuple[int, int]
GIB = 1024**3
BUSY_FRACTION = 0.10  # other processes holding more than this share of a GPU


def gpu_cc(gpu: GpuFacts) -> CC | None:
    return parse_cc(gpu.compute_capability)


def gpu_index(gpu: GpuFacts) -> int | str:
    """The GPU's index for messages; `?` when the probe did not record it."""
    return gpu.index if isinstance(gpu.index, int) else "?"


def gpu_name(gpu: GpuFacts) -> str:
    if gpu.name:
        return gpu.name
    if gpu.source == "torch":  # say where the fact came from: NVML/nvidia-smi failed
        cc = gpu.compute_capability if isinstance(gpu.compute_capability, str) else None
        return f"GPU {gpu_index(gpu)} (cc {cc}, seen by torch only)"
    return f"GPU {gpu_index(gpu)}"


def gpu_free_bytes(gpu: GpuFacts) -> int | None:
    """Memory a new process can still take: in a container NVML lists no other processes,
    so the memory already in use is the only sign of them."""
    total = gpu.memory_total_bytes
    if not isinstance(total, int):
        return None
    used = gpu.memory_used_bytes
    return total - used if isinstance(used, int) and 0 <= used <= total else total


def gpu_names(gpus: Iterable[GpuFacts]) -> str:
    """`NVIDIA H100 80GB HBM3` or `2x NVIDIA GeForce RTX 4090`, for titles."""
    names = [gpu_name(g) for g in gpus]
    groups = {n: names.count(n) for n in dict.fromkeys(names)}
    return ", ".join(n if k == 1 else f"{k}x {n}" for n, k in groups.items())


def visible_gpus(facts: Facts) -> list[GpuFacts]:
    """GPUs left visible by a numeric CUDA_VISIBLE_DEVICES (UUID lists keep them all)."""
    gpus = facts.gpus
    cvd = facts.env_value("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return gpus
    items = [x.strip() for x in cvd.split(",") if x.strip()]
    if not items or not all(x.lstrip("-").isdigit() for x in items):
        return gpus if items else []
    wanted = []
    for x in items:
        if int(x) < 0:
            break  # CUDA stops at the first invalid index
        wanted.append(int(x))
    return [g for g in gpus if g.index in wanted]


# --- torch ------------------------------------------------------------------------------


def torch_version(facts: Facts) -> Version | None:
    t = facts.torch
    return (parse_version(t.version) if t else None) or facts.version("torch")


def torch_cuda(facts: Facts) -> Version | None:
    """torch.version.cuda; else read from the wheel's local tag (`+cu128` -> 12.8)."""
    t = facts.torch
    if t and isinstance(t.cuda, str):
        return parse_version(t.cuda)
    v = torch_version(facts)
    m = re.fullmatch(r"cu(\d+)(\d)", (v.local or "") if v else "")
    return Version(f"{m.group(1)}.{m.group(2)}") if m else None


def torch_is_cpu_build(facts: Facts) -> bool | None:
    t = facts.torch
    v = torch_version(facts)
    if v is None:
        return None
    if v.local and v.local.startswith("cpu"):
        return True
    if t and isinstance(t.hip, str) and t.hip:
        return False  # a ROCm build, also one whose version has no +rocm tag (2.4.0a0+git...)
    if t and t.cuda is not NOT_PROBED:
        return t.cuda is None and not (v.local or "").startswith(("rocm", "xpu"))
    return None


def torch_variant(facts: Facts) -> str | None:
    """`cu130` for torch.version.cuda 13.0."""
    cuda = torch_cuda(facts)
    return f"cu{cuda.major}{cuda.minor}" if cuda else None


def torch_arch_list(facts: Facts) -> Archs | None:
    """What torch.cuda.get_arch_list() says this torch carries; None when unknown."""
    t = facts.torch
    archs = t.arch_list if t else None
    if not archs:
        return None
    return parse_torch_archs(archs)


# NVML's names of vLLM's engine processes (set with setproctitle) and of older releases.
VLLM_PROCESS_PREFIXES = ("VLLM::", "vllm")


def vllm_engines(gpu: GpuFacts) -> list[GpuProcess]:
    """The vLLM engine processes the probe listed on one GPU."""
    return [
        p
        for p in gpu.processes or ()
        if isinstance(p.name, str) and p.name.startswith(VLLM_PROCESS_PREFIXES)
    ]


def uses_vllm(facts: Facts) -> bool:
    return facts.plan.use_vllm is True


def bytes_gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def env_set(facts: Facts, name: str) -> bool | None:
    """True/False when the env section was collected (allowlisted names), else None."""
    if facts.env is NOT_PROBED:
        return None
    if facts.env_value(name) is None and facts.from_dump:
        return None  # a dump lists some variables (vLLM's by prefix): the others are unknown
    return facts.env_value(name) is not None
