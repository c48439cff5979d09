"""The NVIDIA driver against torch's CUDA build, GPU visibility and who holds the GPUs."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.version import Version

from shop_r1_doctor.checks._base import (
    BUSY_FRACTION,
    bytes_gib,
    finding,
    gpu_index,
    gpu_name,
    torch_cuda,
    torch_version,
    visible_gpus,
    vllm_engines,
)
from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, GpuProcess, parse_version, shown
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.knowledge import driver_text, load_compat
from shop_r1_doctor.sections import DriverFacts
from shop_r1_doctor.target_python import pip_command


def _driver(facts: Facts) -> tuple[Version | None, Version | None]:
    """(driver version, the newest CUDA it supports), the latter from NVML or the table."""
    driver = parse_version(facts.driver.version)
    cuda = parse_version(facts.driver.cuda_version)
    if cuda is None and driver is not None:
        cuda = load_compat().max_cuda_for_driver(driver, facts.os or "linux")
    return driver, cuda


def driver_vs_cuda_build(facts: Facts) -> Iterator[Finding]:
    driver, driver_cuda = _driver(facts)
    if driver_cuda is None:
        return  # a driver's CUDA can be known without its version (torch's warning names it)
    compat = load_compat()
    os_name = facts.os or "linux"
    in_container = facts.container is not None
    image_cuda = parse_version(facts.env_value("CUDA_VERSION")) if in_container else None
    tv = torch_version(facts)
    builds = [(f"torch {tv}", torch_cuda(facts))] if tv else []
    if image_cuda is not None:
        builds.append(("the image's CUDA_VERSION", image_cuda))
    for what, cuda in builds:
        if cuda is None or (cuda.major, cuda.minor) <= (driver_cuda.major, driver_cuda.minor):
            continue
        need = compat.driver_min_for(cuda, os_name)
        floor = compat.minor_compat_floor(cuda.major)
        # A driver that supports CUDA N.x is at least that major's first driver, which is
        # the minor-compatibility floor: its version is not needed to decide this.
        within_minor = (
            cuda.major == driver_cuda.major
            and floor is not None
            and os_name == "linux"
            and (driver is None or driver >= floor.linux)
        )
        need_text = ""
        minimum = None if need is None else need.windows if os_name == "windows" else need.linux
        if need is not None and minimum is not None:  # no Windows driver for CUDA 13 listed
            need_text = (
                f"; CUDA {cuda.major}.{cuda.minor} needs driver >= {driver_text(minimum)} "
                f"({need.source})"
            )
        code = "CONTAINER_CUDA_GT_HOST_DRIVER" if in_container else "DRIVER_TOO_OLD_FOR_TORCH_CUDA"
        named = f"driver {driver_text(driver)}" if driver is not None else "the driver"
        title = f"{what} needs CUDA {cuda.major}.{cuda.minor}; {named} supports CUDA {driver_cuda}"
        if within_minor and floor is not None:
            yield finding(
                code,
                title,
                severity="warning",
                detail=(
                    f"It runs through CUDA minor-version compatibility (driver >= "
                    f"{driver_text(floor.linux)} for CUDA {cuda.major}.x), without PTX JIT: kernels "
                    f"missing for your GPU fail at runtime{need_text}."
                ),
                fix="upgrade the driver to >= "
                + (driver_text(need.linux) if need and need.linux else f"the CUDA {cuda} minimum"),
            )
            continue
        yield finding(
            code,
            title,
            detail=(
                f"torch.cuda.is_available() will be False or CUDA init fails with 'driver "
                f"version is insufficient'{need_text}."
            ),
            fix=(
                "upgrade the host NVIDIA driver, or use an image/torch built for "
                f"CUDA <= {driver_cuda} (e.g. {pip_command(facts)} install torch --index-url "
                f"https://download.pytorch.org/whl/cu{driver_cuda.major}{driver_cuda.minor})"
            ),
        )


# nvidia-ml-py is NVML's Python binding (the doctor itself uses it): no sign of CUDA work.
NOT_CUDA_DISTS = ("nvidia-ml-py", "pynvml")
GPU_PLAN_ATTN = ("flash_attention_2", "flash_attention_3", "flash_attention_4")


def gpu_expected(facts: Facts) -> str | None:
    """The first sign that this machine is meant to have a GPU, in words; None if none.

    A CPU-only box with a CPU torch and no GPU setting should not be told to fix Docker.
    """
    cuda = torch_cuda(facts)
    if cuda is not None:
        return f"torch {torch_version(facts)} is a CUDA {cuda} build"
    nvd = facts.env_value("NVIDIA_VISIBLE_DEVICES")
    if nvd is not None and nvd.strip().lower() not in ("", "void", "none"):
        return f"NVIDIA_VISIBLE_DEVICES={nvd} is set"
    cvd = facts.env_value("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() not in ("", "-1"):
        return f"CUDA_VISIBLE_DEVICES={cvd} is set"
    for name, info in facts.packages.items():
        if info is not None and (
            name in ("vllm", "flash-attn")
            or (name.startswith("nvidia-") and name not in NOT_CUDA_DISTS)
        ):
            return f"{name} {shown(info.version, '')} is installed".replace("  ", " ")
    if facts.plan.use_vllm is True:
        return "the plan uses vLLM"
    if facts.plan.attn_implementation in GPU_PLAN_ATTN:
        return f"the plan asks for {facts.plan.attn_implementation}"
    if facts.plan.bf16 is True or facts.plan.fp16 is True:
        return "the plan trains in bf16/fp16"
    return None


def gpu_runtime_in_container(facts: Facts) -> Iterator[Finding]:
    if facts.container is None or facts.listed_gpus is NOT_PROBED or facts.gpus:
        return
    if facts.listed_driver and facts.listed_driver != DriverFacts():
        return  # the driver section says something: the GPUs are elsewhere
    why = gpu_expected(facts)
    if why is None:
        # Nothing asks for a GPU: a note for whoever meant to pass --gpus, not a warning.
        yield finding(
            "DOCKER_GPU_RUNTIME_MISSING",
            f"no NVIDIA GPU in this {facts.container} container: fine for CPU work",
            severity="info",
            detail="Nothing here asks for a GPU (no CUDA build of torch, GPU settings or CUDA packages).",
            fix="for a GPU: `docker run --gpus all ...` (nvidia-container-toolkit on the host)",
        )
        return
    yield finding(
        "DOCKER_GPU_RUNTIME_MISSING",
        f"no NVIDIA GPU or driver visible inside this {facts.container} container, but {why}",
        detail="Without the NVIDIA container runtime the container sees no /dev/nvidia* devices.",
        fix="install nvidia-container-toolkit on the host, then `docker run --gpus all ...`",
    )


def visible_devices(facts: Facts) -> Iterator[Finding]:
    cvd = facts.env_value("CUDA_VISIBLE_DEVICES")
    if cvd is None or not facts.gpus:
        return
    if not all(isinstance(g.index, int) for g in facts.gpus):
        return  # GPUs named without their indices (an env report's `GPU type`): cannot tell
    items = [x.strip() for x in cvd.split(",") if x.strip()]
    numeric = [int(x) for x in items if x.lstrip("-").isdigit()]
    indices = {g.index for g in facts.gpus}
    hides = not items or (len(numeric) == len(items) and not any(i in indices for i in numeric))
    if not hides:
        return
    if facts.wsl:
        return  # WSL_CUDA_INIT_DOUBLE_FREE (platform) covers it with the WSL crash
    yield finding(
        "CUDA_VISIBLE_DEVICES_HIDES_GPUS",
        f"CUDA_VISIBLE_DEVICES={cvd!r} hides all {len(facts.gpus)} GPU(s)",
        detail="torch will report no CUDA device and training falls back to CPU or fails.",
        fix="unset CUDA_VISIBLE_DEVICES (or export CUDA_VISIBLE_DEVICES=0)",
    )


def gpu_processes(facts: Facts) -> Iterator[Finding]:
    # Only the GPUs this shell's CUDA_VISIBLE_DEVICES leaves to the run: a launch script's
    # trainer (GPU 1) must not be told to kill its own vLLM server's engine (GPU 0).
    for gpu in visible_gpus(facts):
        procs = gpu.processes or ()
        if not procs:
            yield from _busy_unseen(gpu)
            continue
        vllm = vllm_engines(gpu)
        total = gpu.memory_total_bytes
        held = sum(p.used_bytes for p in procs if isinstance(p.used_bytes, int))
        pids = " ".join(shown(p.pid, "None") for p in (vllm or procs))
        label = f"{gpu_name(gpu)} (GPU {gpu_index(gpu)})"
        if vllm:
            yield finding(
                "VLLM_ORPHAN_WORKERS_HOLD_GPU",
                f"vLLM engine processes hold {label}: " + ", ".join(_who(p) for p in vllm),
                detail="Left over from an interrupted run, they keep the GPU's memory.",
                fix=f"kill {pids}",
            )
        elif isinstance(total, int) and total > 0 and held > BUSY_FRACTION * total:
            yield finding(
                "GPU_BUSY_OTHER_PROCESSES",
                f"other processes hold {bytes_gib(held)} of {bytes_gib(total)} on {label}",
                detail=", ".join(_who(p) for p in procs),
                fix=f"stop those processes (kill {pids}) or train on another GPU",
            )


def _who(p: GpuProcess) -> str:
    return f"{shown(p.name, 'None')} (pid {shown(p.pid, 'None')})"


def _busy_unseen(gpu: GpuFacts) -> Iterator[Finding]:
    """Memory in use with no process listed: another container or PID namespace holds it
    (NVML shows only this namespace's processes), so memory is the only sign."""
    total, used = gpu.memory_total_bytes, gpu.memory_used_bytes
    if gpu.processes is NOT_PROBED:
        return  # the probe could not list processes: unknown, not "none"
    if not (isinstance(total, int) and isinstance(used, int)) or used <= BUSY_FRACTION * total:
        return
    label = f"{gpu_name(gpu)} (GPU {gpu_index(gpu)})"
    yield finding(
        "GPU_BUSY_OTHER_PROCESSES",
        f"{bytes_gib(used)} of {bytes_gib(total)} on {label} is in use by processes this "
        "machine cannot see",
        detail="No process is listed (a container sees only its own PID namespace): another "
        "container or job holds the memory, and this run gets only the rest.",
        fix="find the job on the host (nvidia-smi there) and stop it, or train on another GPU",
    )


CHECKS = (driver_vs_cuda_build, gpu_runtime_in_container, visible_devices, gpu_processes)
