"""NCCL: the library torch loads, shared memory in containers, P2P, IB, WSL/Windows."""

from __future__ import annotations

from collections.abc import Iterator

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from shop_r1_doctor.checks._base import (
    GIB,
    env_set,
    finding,
    gpu_names,
    torch_cuda,
    torch_version,
    uses_vllm,
    visible_gpus,
)
from shop_r1_doctor.facts import Facts, PackageFacts, parse_version, shown
from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.hardware import gpu_info
from shop_r1_doctor.knowledge import load_compat
from shop_r1_doctor.target_python import pip_command

SMALL_SHM = GIB
CUMEM_FIXED = Version("2.22.3")


def world_size(facts: Facts) -> int:
    """Processes the plan runs (1 when unknown), counting vLLM tensor parallel ranks."""
    return max(facts.plan.num_processes or 1, facts.plan.vllm_tensor_parallel_size or 1)


def multi_gpu(facts: Facts) -> bool:
    """Several GPUs in play: the plan says so, or (no plan) several are visible."""
    if facts.has_plan:
        return world_size(facts) > 1
    return len(visible_gpus(facts)) > 1


def nccl_dists(facts: Facts) -> Iterator[Finding]:
    # a record with nothing known in it (a hand-trimmed dump) is no installed wheel
    dists = {
        n: p
        for n, p in facts.packages.items()
        if n.startswith("nvidia-nccl-") and p is not None and p != PackageFacts()
    }
    if len(dists) > 1:
        listed = ", ".join(f"{n} {shown(p.version, 'None')}" for n, p in sorted(dists.items()))
        yield finding(
            "NCCL_LIB_SYMBOL_MISMATCH",
            f"{len(dists)} NCCL wheels installed side by side: {listed}",
            detail="Only one libnccl.so.2 gets loaded; torch may get the other one and fail with "
            "'undefined symbol: ncclCommRegister' (or similar).",
            fix=f"{pip_command(facts)} uninstall -y "
            + " ".join(sorted(dists))
            + f" && {pip_command(facts)} install --force-reinstall torch "
            "(reinstalls torch's own NCCL pin)",
        )
    # with several wheels, which one torch loads is unknown: their finding says it all
    for text in facts.requires("torch") if len(dists) == 1 else []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = req.name.lower().replace("_", "-")
        if not name.startswith("nvidia-nccl-") or name not in dists:
            continue
        installed = parse_version(dists[name].version)
        if installed is not None and installed not in req.specifier:
            yield finding(
                "NCCL_LIB_SYMBOL_MISMATCH",
                f"torch {torch_version(facts)} pins {req}; {name} {installed} is installed",
                detail="Another install (vLLM, deepspeed, a requirements.txt frozen elsewhere) "
                "replaced torch's NCCL: 'libtorch_cuda.so: undefined symbol: nccl...'.",
                fix=f'{pip_command(facts)} install "{req}"',
            )
    ld = facts.env_value("LD_LIBRARY_PATH") or ""
    hits = [d for d in ld.split(":") if "nccl" in d.lower()]
    if hits:
        yield finding(
            "NCCL_LD_LIBRARY_PATH_OVERRIDE",
            f"LD_LIBRARY_PATH puts {hits[0]} ahead of torch's NCCL",
            detail="A system libnccl loaded instead of the one torch was built with gives "
            "undefined-symbol errors or hangs.",
            fix=f"remove {hits[0]} from LD_LIBRARY_PATH",
        )


def nccl_windows(facts: Facts) -> Iterator[Finding]:
    if facts.os != "windows" or not multi_gpu(facts):
        return
    yield finding(
        "NCCL_MISSING_ON_WINDOWS",
        "multi-GPU training on Windows: torch for Windows has no NCCL",
        severity="error" if world_size(facts) > 1 else "warning",
        detail="'Distributed package doesn't have NCCL built in'.",
        fix="one process (num_processes: 1), gloo backend, or WSL2/Linux for several GPUs",
    )


def torch_nccl(facts: Facts) -> Version | None:
    """The NCCL torch loads: the torch probe's word, else the one bundled with this torch."""
    t = facts.torch
    nccl = parse_version(t.nccl) if t else None
    if nccl is None:
        tv = torch_version(facts)
        cuda = torch_cuda(facts)
        row = load_compat().nccl_for(tv, cuda.major if cuda else None) if tv else None
        nccl = parse_version(row.value) if row else None
    return nccl


def p2p_off(facts: Facts) -> bool:
    """NCCL cannot use P2P between the GPUs, so its SHM transport carries the traffic."""
    off = facts.env_value("NCCL_P2P_DISABLE")
    if off is not None and off != "0":
        return True
    return sum(no_p2p(g.name) for g in visible_gpus(facts)) >= 2


def host_buffers_in_shm(facts: Facts, nccl: Version) -> str | None:
    """Why NCCL's SHM-transport buffers stay in /dev/shm though cuMem is on (None: they don't)."""
    know = load_compat().nccl_shm
    cuda = facts.driver.cuda_version
    driver = parse_version(cuda) if isinstance(cuda, str) else None
    if nccl < know.cumem_host_default_from:
        return (
            f"NCCL {nccl} keeps SHM-transport buffers in /dev/shm "
            f"(cuMem host memory from {know.cumem_host_default_from})"
        )
    if facts.env_value("NCCL_CUMEM_HOST_ENABLE") == "0":
        return f"NCCL_CUMEM_HOST_ENABLE=0 keeps NCCL {nccl}'s SHM-transport buffers in /dev/shm"
    if driver is not None and driver < know.cumem_host_min_driver_cuda:
        return (
            f"NCCL {nccl} uses cuMem host memory only with a CUDA "
            f"{know.cumem_host_min_driver_cuda}+ driver (this one runs CUDA {driver}), so "
            "SHM-transport buffers stay in /dev/shm"
        )
    return None


def shm_cause(facts: Facts, nccl: Version) -> tuple[Severity, str]:
    """(severity, why) for a small /dev/shm under this NCCL and its settings."""
    know = load_compat().nccl_shm
    cumem = facts.env_value("NCCL_CUMEM_ENABLE")
    vllm = facts.package("vllm")
    vllm_v = parse_version(vllm.version) if vllm else None
    if nccl < know.cumem_default_from:
        return "error", (
            f"NCCL {nccl} keeps its buffers in /dev/shm "
            f"(cuMem is on by default from {know.cumem_default_from})"
        )
    if cumem == "0":
        return "error", f"NCCL_CUMEM_ENABLE=0 puts NCCL {nccl}'s buffers back in /dev/shm"
    # vLLM's env_override sets it on import, leaving a value the user set alone
    if uses_vllm(facts) and vllm_v is not None and vllm_v in know.vllm_cumem_off and not cumem:
        return "error", (
            f"vLLM {vllm_v} sets NCCL_CUMEM_ENABLE=0 on import, which puts "
            f"NCCL {nccl}'s buffers back in /dev/shm"
        )
    host = host_buffers_in_shm(facts, nccl)
    if host and p2p_off(facts):
        return "error", f"{host}, and P2P is off, so the SHM transport carries the traffic"
    if host:
        return (
            "warning",
            f"{host}; GPUs without a P2P path between them (PCIe across sockets) use it",
        )
    # measured: NCCL 2.28.9 with cuMem on passes under a 1 MiB /dev/shm, P2P on and off
    return "info", (
        f"NCCL {nccl} with cuMem on keeps one node's buffers out of /dev/shm; what stays there: "
        "the proxy's 34 MB ops pool for network transports (several nodes), and host buffers "
        "where the container blocks NUMA calls (Docker without --cap-add SYS_NICE)"
    )


def docker_shm(facts: Facts) -> Iterator[Finding]:
    shm = facts.host.shm_bytes
    if facts.container is None or not isinstance(shm, int) or shm >= SMALL_SHM:
        return
    if not multi_gpu(facts):
        return
    title = f"/dev/shm is {shm // 2**20} MiB in this {facts.container} container"
    failure = "'Error while creating shared memory segment /dev/shm/nccl-...' / 'No space left on device'."
    nccl = torch_nccl(facts)
    if nccl is None:
        yield finding(
            "NCCL_DOCKER_SHM_TOO_SMALL",
            f"{title}; NCCL needs more for several GPUs",
            detail=f"NCCL version unknown. {failure}",
        )
        return
    severity, why = shm_cause(facts, nccl)
    if severity == "info":
        yield finding(
            "NCCL_DOCKER_SHM_TOO_SMALL",
            f"{title}; NCCL {nccl} keeps one node's buffers out of it",
            severity=severity,
            detail=f"{why}.",
        )
        return
    yield finding(
        "NCCL_DOCKER_SHM_TOO_SMALL",
        f"{title}; NCCL {nccl} needs more for several GPUs",
        severity=severity,
        detail=f"{why}. {failure}",
    )


def no_p2p(name: object) -> bool:
    info = gpu_info(name)
    return info is not None and info.p2p is False


def consumer_p2p(facts: Facts) -> Iterator[Finding]:
    # knowledge/gpus.yaml: `p2p: false` marks the cards whose PCIe P2P path hangs NCCL
    gpus = [g for g in visible_gpus(facts) if no_p2p(g.name)]
    # Unset must be known: a dump that lists no environment says nothing about it.
    # NCCL reads the variable as a number: 0 leaves P2P on.
    disabled = env_set(facts, "NCCL_P2P_DISABLE")
    if disabled and facts.env_value("NCCL_P2P_DISABLE") == "0":
        disabled = False
    if len(gpus) < 2 or disabled is not False:
        return
    if facts.has_plan and world_size(facts) < 2:
        return
    yield finding(
        "NCCL_P2P_HANG_CONSUMER_GPUS",
        f"{gpu_names(gpus)} with NCCL P2P enabled",
        detail="all_reduce hangs over the broken P2P paths of GeForce cards.",
    )


def infiniband(facts: Facts) -> Iterator[Finding]:
    ib = facts.host.infiniband
    if not ib or not ib.sys_devices or not multi_gpu(facts):
        return
    if facts.env_value("NCCL_IB_DISABLE") == "1":
        return
    memlock = ib.memlock_bytes
    limited = isinstance(memlock, int) and 0 <= memlock < 2**30
    if ib.dev_present is False or limited:
        why = (
            "no /dev/infiniband in this container"
            if ib.dev_present is False
            else f"memlock limited to {memlock} bytes"
        )
        yield finding(
            "NCCL_IB_UNUSABLE",
            f"InfiniBand devices are listed but unusable ({why})",
            detail="'NCCL WARN Call to ibv_create_qp failed'.",
        )


def cumem_weight_sync(facts: Facts) -> Iterator[Finding]:
    if not uses_vllm(facts) or facts.plan.vllm_mode != "server":
        return
    nccl = torch_nccl(facts)
    cumem = facts.env_value("NCCL_CUMEM_ENABLE")
    if nccl is None or nccl >= CUMEM_FIXED or cumem == "0":
        return
    setting = f"NCCL_CUMEM_ENABLE={cumem}" if cumem is not None else "NCCL_CUMEM_ENABLE unset"
    yield finding(
        "NCCL_CUMEM_WEIGHT_SYNC_MISMATCH",
        f"NCCL {nccl} (< {CUMEM_FIXED}) for trainer -> vLLM weight sync with {setting}",
        detail="vLLM workers run with NCCL_CUMEM_ENABLE=0; both sides must agree.",
    )


def wsl_multi_gpu(facts: Facts) -> Iterator[Finding]:
    if not facts.wsl or not facts.has_plan or world_size(facts) < 2:
        return
    yield finding(
        "WSL_MULTI_GPU_NCCL",
        f"{world_size(facts)} processes with NCCL inside WSL{facts.wsl}",
        detail="Multi-GPU NCCL in WSL2 is limited: 'ncclUnhandledCudaError'.",
    )


CHECKS = (
    nccl_dists,
    nccl_windows,
    docker_shm,
    consumer_p2p,
    infiniband,
    cumem_weight_sync,
    wsl_multi_gpu,
)
