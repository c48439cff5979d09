"""flash-attn: requested but missing, built for another torch or ABI, GPU support, wheels."""

from __future__ import annotations

import re
from collections.abc import Iterator

from packaging.version import Version

from shop_r1_doctor.checks._base import (
    GIB,
    cc_text,
    finding,
    gpu_cc,
    gpu_name,
    torch_cuda,
    torch_version,
)
from shop_r1_doctor.facts import Facts, parse_version
from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.knowledge import load_compat
from shop_r1_doctor.target_python import pip_command

FA_IMPLS = ("flash_attention_2", "flash_attention_3", "flash_attention_4")
# flash-attn wheels carry their build in the file name (`+cu12torch2.7cxx11abiFALSE`);
# some installers keep it in the version's local tag.
WHEEL_TAG = re.compile(r"cu(\d+)torch(\d+)\.?(\d+)cxx11abi(true|false)", re.IGNORECASE)
BUILD_GB_PER_JOB = 9  # flash-attn's own MAX_JOBS heuristic: free GB / 9


def _torch_abi(facts: Facts) -> bool | None:
    t = facts.torch
    if t and isinstance(t.cxx11_abi, bool):
        return t.cxx11_abi
    tv = torch_version(facts)
    row = load_compat().flash_attn_abi_for(tv) if tv else None
    return row.abi if row else None


def wheel_url(facts: Facts) -> str | None:
    """The prebuilt flash-attn wheel for this torch/CUDA/ABI/python, if one is known."""
    tv, cuda = torch_version(facts), torch_cuda(facts)
    python = facts.host.python
    py = parse_version(python.version) if python else None
    arch = facts.host.arch
    abi = _torch_abi(facts)
    if tv is None or cuda is None or facts.os != "linux" or abi is None:
        return None
    if py is None or len(py.release) < 2:  # the wheel names cpXY
        return None
    major, minor = py.release[:2]
    row = load_compat().newest_fa_covering(tv, cuda.major, Version(f"{major}.{minor}"))
    if row is None:
        return None
    platform = {"x86_64": "linux_x86_64", "aarch64": "linux_aarch64"}.get(str(arch))
    if platform is None:
        return None
    return load_compat().flash_attn_wheel_url.format(
        version=row.release,
        cuda_major=cuda.major,
        torch_minor=f"{tv.major}.{tv.minor}",
        abi="TRUE" if abi else "FALSE",
        py=f"{major}{minor}",
        platform=platform,
    )


def requested(facts: Facts) -> Iterator[Finding]:
    impl = facts.plan.attn_implementation
    if impl not in FA_IMPLS:
        return
    feature = load_compat().feature(impl)
    if feature is None:
        return
    for gpu in facts.gpus:
        cc = gpu_cc(gpu)
        if cc is None:
            continue
        if cc < feature.min_cc:
            code = "FA_PRE_AMPERE_GPU" if impl == "flash_attention_2" else "FA3_UNSUPPORTED_GPU"
            yield finding(
                code,
                f"{impl} needs cc >= {cc_text(feature.min_cc)}; {gpu_name(gpu)} is cc {cc_text(cc)}",
                detail=f"'FlashAttention only supports Ampere GPUs or newer.' ({feature.source})",
                fix='attn_implementation="sdpa"',
            )
            return
        if feature.max_cc is not None and cc > feature.max_cc:
            yield finding(
                "FA3_UNSUPPORTED_GPU",
                f"{impl} runs on cc {cc_text(feature.min_cc)}-{cc_text(feature.max_cc)} only; {gpu_name(gpu)} is cc {cc_text(cc)}",
                detail=feature.source,
                fix='attn_implementation="sdpa" (or "flash_attention_2")',
            )
            return
    installed = facts.installed(feature.dist)
    if installed is not False:
        modules = (feature.module.split(".")[0], "flash_attn_2_cuda")
        err = import_failure(facts, modules if impl == "flash_attention_2" else modules[:1])
        # an `undefined symbol` failure is broken_build's finding
        if installed and err is not None and "undefined symbol" not in err:
            yield finding(
                "FA_REQUESTED_NOT_INSTALLED",
                f"{impl} requested but {feature.dist} {facts.version(feature.dist)} does not import",
                detail=err,
                fix=f'{pip_command(facts)} install --no-build-isolation --force-reinstall {feature.dist}, or attn_implementation="sdpa"',
            )
        return
    url = wheel_url(facts) if impl == "flash_attention_2" else None
    install = (
        f"{pip_command(facts)} install {url}"
        if url
        else f"{pip_command(facts)} install {feature.dist} --no-build-isolation"
    )
    yield finding(
        "FA_REQUESTED_NOT_INSTALLED",
        f"attn_implementation={impl} but {feature.dist} is not installed",
        detail="transformers raises 'FlashAttention2 has been toggled on, but it cannot be used "
        "... the package flash_attn seems to be not installed.' at model load.",
        fix=f'{install}   # or attn_implementation="sdpa"',
    )
    if impl == "flash_attention_2" and url is None:
        yield from _source_build(facts)


def _source_build(facts: Facts) -> Iterator[Finding]:
    """flash-attn would be compiled here: say what that costs and what breaks it."""
    tv, cuda = torch_version(facts), torch_cuda(facts)
    what = f"torch {tv}" + (f" (CUDA {cuda})" if cuda else "") if tv else "this torch"
    yield finding(
        "FA_NO_PREBUILT_WHEEL",
        f"no prebuilt flash-attn wheel for {what} on {facts.os or 'this OS'}",
        detail="pip prints 'Precompiled wheel not found. Building from source...' and compiles "
        "for an hour or more (needs nvcc matching torch's CUDA major).",
        fix='attn_implementation="sdpa", or a torch covered by flash-attn wheels (2.4-2.8 on CUDA 12)',
    )
    if facts.os == "windows" and facts.host.windows_long_paths is not True:
        yield finding(
            "FA_WINDOWS_LONG_PATH",
            "building flash-attn on Windows with long paths disabled fails ('Filename too long')",
            detail="The source tree (composable_kernel) has paths over 260 characters.",
        )
    ram, cpus = facts.host.ram_bytes, facts.host.cpu_count
    if facts.env_value("MAX_JOBS") is None and isinstance(ram, int) and isinstance(cpus, int):
        safe_jobs = max(1, ram // (BUILD_GB_PER_JOB * GIB))
        if safe_jobs < cpus:
            yield finding(
                "FA_BUILD_OOM_NO_MAX_JOBS",
                f"building flash-attn with {cpus} parallel jobs needs ~{cpus * BUILD_GB_PER_JOB} GB; this machine has {ram // GIB} GiB",
                detail="ninja starts one nvcc per core, several GB each: the build is Killed or the machine freezes.",
                fix=f"MAX_JOBS={safe_jobs} {pip_command(facts)} install flash-attn --no-build-isolation",
            )


def import_failure(facts: Facts, modules: tuple[str, ...]) -> str | None:
    """The first import error among `modules` (a package, then its extension), or None."""
    for module in modules:
        if facts.import_ok(module) is False:
            return facts.import_error(module) or f"import {module} failed"
    return None


def broken_build(facts: Facts) -> Iterator[Finding]:
    record = facts.package("flash-attn")
    fv = parse_version(record.version) if record else None
    if record is None or fv is None:
        return
    raw = str(record.version)  # as installed: Version() would lower-case the wheel's tag
    tv = torch_version(facts)
    wanted = facts.plan.attn_implementation == "flash_attention_2"
    severity: Severity = "error" if wanted else "warning"
    err = import_failure(facts, ("flash_attn", "flash_attn_2_cuda")) or ""
    tag = WHEEL_TAG.search(raw)
    torch_abi = _torch_abi(facts)
    if (
        tag
        and torch_abi is not None
        and (tag.group(4).lower() == "true") != torch_abi
        and (tv is None or (int(tag.group(2)), int(tag.group(3))) == (tv.major, tv.minor))
    ):
        yield finding(
            "FA_CXX11_ABI_WHEEL_MISMATCH",
            f"flash-attn {raw} is a cxx11abi{tag.group(4).upper()} build; torch {tv} uses cxx11abi{str(torch_abi).upper()}",
            severity=severity,
            detail=err or "Its extension fails to load with an undefined C++ symbol.",
            fix=f"{pip_command(facts)} install the flash-attn wheel named cxx11abi{str(torch_abi).upper()} ({wheel_url(facts) or 'see the release page'})",
        )
        return
    if "undefined symbol" in err:
        built_for = f" (built for torch {tag.group(2)}.{tag.group(3)})" if tag else ""
        yield finding(
            "FA_TORCH_ABI_UNDEFINED_SYMBOL",
            f"flash-attn {fv}{built_for} does not load with torch {tv}: undefined symbol",
            severity=severity,
            detail=err,
            fix=f"{pip_command(facts)} install --no-build-isolation --force-reinstall --no-deps flash-attn=={fv.public}"
            + (
                f"  # or: {pip_command(facts)} install {wheel_url(facts)}"
                if wheel_url(facts)
                else ""
            ),
        )


def blackwell_kernels(facts: Facts) -> Iterator[Finding]:
    fv = facts.version("flash-attn")
    if fv is None:
        return
    first = load_compat().flash_attn_sm120_from
    for gpu in facts.gpus:
        cc = gpu_cc(gpu)
        if cc is None or cc[0] != 12 or fv >= first:
            continue
        yield finding(
            "FA_BLACKWELL_SM120_KERNELS",
            f"flash-attn {fv} has no sm_120 kernels for {gpu_name(gpu)}",
            severity="error"
            if facts.plan.attn_implementation == "flash_attention_2"
            else "warning",
            detail=f"flash_fwd fails with 'no kernel image is available' ({load_compat().flash_attn_archs_source}).",
            fix=f'attn_implementation="sdpa", or {pip_command(facts)} install "flash-attn>={first}" on a cu128+ torch',
        )
        return


CHECKS = (requested, broken_build, blackwell_kernels)
