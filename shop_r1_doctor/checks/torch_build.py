"""torch's build against the GPUs (arch list, CPU-only wheels) and the CUDA toolkit."""

from __future__ import annotations

import os
from collections.abc import Iterator

from shop_r1_doctor.builds import choose_torch_build
from shop_r1_doctor.checks._base import (
    cc_text,
    finding,
    gpu_cc,
    gpu_name,
    torch_arch_list,
    torch_cuda,
    torch_is_cpu_build,
    torch_variant,
    torch_version,
    uses_vllm,
)
from shop_r1_doctor.facts import NOT_PROBED, Facts, parse_version
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.hardware import archs_with_ptx, parse_arch_list
from shop_r1_doctor.knowledge import load_compat
from shop_r1_doctor.target_python import pip_command


def _index_for(cc: tuple[int, int], facts: Facts | None = None) -> str:
    """The PyTorch wheel index that covers this arch today, on this machine's driver
    (`builds`: never a CUDA build the driver cannot run)."""
    best = "cu126" if cc < (7, 5) else "cu130"
    compat = load_compat()
    releases = [v for v in (parse_version(r.torch + ".0") for r in compat.torch_releases) if v]
    if facts is None or not releases:
        return best
    newest, driver = max(releases), parse_version(facts.driver.version)
    if driver is None:
        return best
    build = choose_torch_build(newest, best, [cc], driver, os_name=facts.os or "linux")
    return build.variant if build is not None else best


def torch_cpu_only(facts: Facts) -> Iterator[Finding]:
    if not facts.gpus or torch_is_cpu_build(facts) is not True:
        return
    tv = torch_version(facts)
    cc = min((c for c in (gpu_cc(g) for g in facts.gpus) if c), default=(8, 0))
    index = _index_for(cc, facts)
    # Keep the user's version only where the index has it (an old or unknown release,
    # e.g. torch 1.3.1 from a pasted dump, is on no current index: drop the pin).
    release = load_compat().torch_release(tv) if tv else None
    if release is not None and index not in release.variants:
        index = release.default
    pin = f"=={tv.public}" if tv and release is not None else ""
    yield finding(
        "TORCH_CPU_ONLY_BUILD",
        f"torch {tv} is a CPU-only build but {gpu_name(facts.gpus[0])} is present",
        detail="Training would run on the CPU (or fail with 'Torch not compiled with CUDA "
        "enabled'). A `pip install` of another package may have swapped the CUDA wheel.",
        fix=f"{pip_command(facts)} install --force-reinstall torch{pin} "
        f"--index-url https://download.pytorch.org/whl/{index}",
    )


def torch_arch_covers_gpus(facts: Facts) -> Iterator[Finding]:
    tv = torch_version(facts)
    if tv is None or torch_is_cpu_build(facts) is True:
        return
    archs = torch_arch_list(facts)
    source = "torch.cuda.get_arch_list()"
    if archs is None:
        variant = torch_variant(facts)
        row = load_compat().archs_for(tv, variant) if variant else None
        if row is None:
            return
        archs = archs_with_ptx(row.archs, row.ptx)
        source = f"the official {variant} wheel's arch list ({row.source})"
    vllm_installed = facts.installed("vllm") is True
    seen = set()
    for gpu in facts.gpus:
        cc = gpu_cc(gpu)
        if cc is None or cc in seen or archs.runs_on(cc):
            continue
        seen.add(cc)
        sm = f"sm_{cc[0]}{cc[1]}"
        listed = " ".join(f"sm_{a}{b}" for a, b in archs.sass) or "none"
        title = f"torch {tv} has no kernels for {sm} ({gpu_name(gpu)})"
        detail = (
            f"Arch list from {source}: {listed}. CUDA ops fail with 'no kernel image is available'."
        )
        index = _index_for(cc, facts)
        fix = f"{pip_command(facts)} install --force-reinstall torch --index-url https://download.pytorch.org/whl/{index}"
        if cc[0] == 12 and vllm_installed:
            yield finding(
                "VLLM_WHEEL_NO_SM120",
                f"vLLM {facts.version('vllm')} runs on torch {tv}, which has no {sm} kernels ({gpu_name(gpu)})",
                detail=detail,
                fix=f'a vLLM release on torch >= 2.7.1 cu128 ({pip_command(facts)} install -U vllm), or build vLLM with TORCH_CUDA_ARCH_LIST="12.0"',
            )
        elif cc >= (10, 0):
            yield finding("TORCH_NO_BLACKWELL_ARCH", title, detail=detail, fix=fix)
        else:
            yield finding("TORCH_ARCH_UNSUPPORTED_GPU", title, detail=detail, fix=fix)


def gpu_too_old(facts: Facts) -> Iterator[Finding]:
    compat = load_compat()
    vv = facts.version("vllm")
    cuda = torch_cuda(facts)
    cu13 = compat.feature("torch_cu13")
    for gpu in facts.gpus:
        cc = gpu_cc(gpu)
        if cc is None:
            continue
        if vv is not None or uses_vllm(facts):
            row = compat.vllm_min_cc_for(vv) if vv else None
            min_cc = parse_version(row.value) if row else parse_version("7.0")
            if min_cc is not None and cc < (min_cc.major, min_cc.minor):
                vllm_name = f"vLLM {vv}" if vv else "vLLM"
                yield finding(
                    "GPU_TOO_OLD_FOR_STACK",
                    f"{gpu_name(gpu)} (cc {cc_text(cc)}) is below {vllm_name}'s minimum cc {min_cc}",
                    detail=f"'GPUs with compute capability below {min_cc} are not supported.' ({row.source if row else 'vLLM docs'})",
                    fix="use_vllm=false (HF generation), a vLLM on CUDA 12.x for cc 7.0, or a newer GPU",
                )
                continue
        if cu13 and cuda is not None and cuda.major >= 13 and cc < cu13.min_cc:
            yield finding(
                "GPU_TOO_OLD_FOR_STACK",
                f"torch {torch_version(facts)} (CUDA {cuda}) does not support {gpu_name(gpu)} (cc {cc_text(cc)})",
                detail=f"CUDA 13 builds need cc >= {cc_text(cu13.min_cc)} ({cu13.source}).",
                fix=f"{pip_command(facts)} install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126",
            )


def torch_cuda_unavailable(facts: Facts) -> Iterator[Finding]:
    t = facts.torch
    if not t or t.cuda_available is not False or not facts.gpus or not t.cuda:
        return
    if facts.env_value("CUDA_VISIBLE_DEVICES") is not None:
        return  # visible_devices / WSL checks explain it
    err = t.error or ""
    yield finding(
        "TORCH_CUDA_UNAVAILABLE",
        f"torch {torch_version(facts)} sees no CUDA device although {gpu_name(facts.gpus[0])} is present",
        detail=err or "torch.cuda.is_available() returned False.",
    )


def _builds_extensions(facts: Facts) -> bool:
    """Will something compile CUDA code here (a build of flash-attn, deepspeed's JIT ops)?"""
    fa_wanted = (
        facts.plan.attn_implementation == "flash_attention_2"
        and facts.installed("flash-attn") is False
    )
    return fa_wanted or any(facts.installed(d) is True for d in ("deepspeed", "apex"))


def cuda_toolkit(facts: Facts) -> Iterator[Finding]:
    tk = facts.cuda_toolkit
    nvcc_v = parse_version(tk.nvcc_version)
    cuda = torch_cuda(facts)
    building = _builds_extensions(facts)
    if nvcc_v is not None and cuda is not None and nvcc_v.major != cuda.major:
        yield finding(
            "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD",
            f"nvcc {nvcc_v} ({tk.nvcc or 'on PATH'}) vs torch {torch_version(facts)} built with CUDA {cuda}",
            severity="warning" if building else "info",
            detail="CUDA extension builds (flash-attn, deepspeed ops, apex) refuse a toolkit of "
            "another major than torch's.",
            fix=f"install CUDA toolkit {cuda.major}.x and export CUDA_HOME=/usr/local/cuda-{cuda.major}.{cuda.minor}",
        )
    ccs = [c for c in (gpu_cc(g) for g in facts.gpus) if c]
    row = load_compat().nvcc_min_for_cc(max(ccs)) if ccs else None
    need = row.nvcc if row else None
    if nvcc_v is not None and need is not None and nvcc_v < need and building:
        yield finding(
            "NVCC_TOO_OLD_FOR_ARCH",
            f"nvcc {nvcc_v} cannot compile for cc {cc_text(max(ccs))} (needs CUDA >= {need})",
            detail=f"'nvcc fatal : Unsupported gpu architecture' ({row.source if row else ''}).",
            fix=f"install CUDA >= {need} and put its bin first on PATH (export CUDA_HOME=...)",
        )
    on_path = list(tk.nvcc_on_path or ())
    if len({os.path.dirname(p) for p in on_path}) > 1:
        yield finding(
            "NVCC_MULTIPLE_ON_PATH",
            f"{len(on_path)} nvcc on PATH; builds use {on_path[0]}",
            detail="\n".join(on_path),
        )
    # Absent only when the probe looked for both (a dump naming nvcc's version alone is
    # no evidence that CUDA_HOME is unset).
    no_toolkit = (
        tk.cuda_home is not NOT_PROBED
        and tk.nvcc is not NOT_PROBED
        and not tk.cuda_home
        and not tk.nvcc
        and not on_path
        and nvcc_v is None
    )
    if facts.installed("deepspeed") is True and no_toolkit:
        yield finding(
            "CUDA_HOME_MISSING_DEEPSPEED",
            f"deepspeed {facts.version('deepspeed')} is installed but there is no CUDA toolkit (CUDA_HOME unset, no nvcc)",
            detail="DeepSpeed's op builders raise MissingCUDAException: even `import trl` or "
            "accelerate's DeepSpeed integration can fail.",
            fix="export CUDA_HOME=/usr/local/cuda (install the toolkit), or "
            f"{pip_command(facts)} uninstall -y deepspeed",
        )


def ext_arch_list(facts: Facts) -> Iterator[Finding]:
    value = facts.env_value("TORCH_CUDA_ARCH_LIST")
    if not value or not facts.gpus:
        return
    archs = parse_arch_list(value)
    for cc in sorted({c for c in (gpu_cc(g) for g in facts.gpus) if c}):
        if not archs.runs_on(cc):
            yield finding(
                "EXT_BUILD_ARCH_LIST_MISSES_GPU",
                f"TORCH_CUDA_ARCH_LIST={value!r} does not cover cc {cc_text(cc)}",
                detail="Extensions built now (flash-attn, apex, megatron) will have no kernel for this GPU.",
                fix=f'export TORCH_CUDA_ARCH_LIST="{cc_text(cc)}+PTX"',
            )


CHECKS = (
    torch_cpu_only,
    torch_arch_covers_gpus,
    gpu_too_old,
    torch_cuda_unavailable,
    cuda_toolkit,
    ext_arch_list,
)
