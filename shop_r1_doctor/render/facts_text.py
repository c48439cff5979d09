"""One-line headlines and `-v` fact lines per subject, read from a snapshot's `Facts`.

Snapshots may come from files written by other versions: `Facts` decodes each section
once, an odd or missing field is NOT_PROBED ("unknown"), and nothing here raises.
"""

from __future__ import annotations

from typing import Any

import msgspec

from shop_r1_doctor.facts import NOT_PROBED, Facts, shown
from shop_r1_doctor.sections import DockerFacts, HostFacts, PythonFacts

GIB = 1024**3
KEY_PACKAGES = ("transformers", "trl", "accelerate", "datasets", "peft", "numpy")


def _gib(n: Any) -> str:
    return f"{n / GIB:.1f} GiB" if isinstance(n, (int, float)) and not isinstance(n, bool) else "?"


def _short(value: Any, limit: int = 100) -> str:
    """Long values (NVIDIA_REQUIRE_CUDA runs to 2 kB) are cut in the terminal; --json keeps them."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(*parts: Any) -> str:
    return ", ".join(str(p) for p in parts if p)


def _said(value: Any) -> bool:
    """The snapshot gives a value (None included: "looked, absent")."""
    return value is not NOT_PROBED


def platform_headline(facts: Facts) -> str:
    host = facts.host
    if host == HostFacts():
        return "System: unknown"
    py = host.python or PythonFacts()
    wsl = f"WSL{host.wsl}" if host.wsl else ""
    container = f"in {host.container}" if host.container else ""
    virt = host.virtualization
    vm = ("VM" if virt == "vm" else f"{virt} VM") if virt else ""
    image = f"image built by {host.image_built_by}" if host.image_built_by else ""
    system = host.os_release or host.os or "?"
    return "System: " + _join(
        f"{system} {host.arch or ''}".strip(),
        wsl,
        container,
        vm,
        image,
        f"{host.cpu_count} CPUs" if host.cpu_count else "",
        f"{_gib(host.ram_bytes)} RAM" if host.ram_bytes else "",
        f"Python {py.version}" if py.version else "",
    )


def platform_facts(facts: Facts) -> list[str]:
    host = facts.host
    lines = []
    for key in ("kernel", "libc", "stdout_encoding", "windows_long_paths", "cpu_usable"):
        value = getattr(host, key)
        if _said(value) and value is not None:
            lines.append(f"{key}: {value}")
    if _said(host.shm_bytes):
        lines.append(f"/dev/shm: {_gib(host.shm_bytes) if host.shm_bytes else 'none'}")
    if host.disk_free_bytes:
        lines += [f"disk free at {path}: {_gib(n)}" for path, n in host.disk_free_bytes.items()]
    if host.python:
        for field in msgspec.structs.fields(PythonFacts):
            value = getattr(host.python, field.name)
            if field.name != "version" and _said(value) and value is not None:
                lines.append(f"python {field.name}: {value}")
    env = facts.env or {}
    lines += [f"env {k}={_short(v)}" for k, v in env.items() if k != "PATH"]
    return lines


def gpu_headline(facts: Facts) -> str:
    # The GPUs the checks judge (`Facts.gpus`): NVML's or nvidia-smi's, else the devices
    # torch saw. Read from the raw section, a container without NVML headed "no NVIDIA GPU
    # found" above findings about the GPU torch was using.
    driver = facts.driver
    drv = ""
    if driver.version:
        cuda = f" (CUDA {driver.cuda_version})" if driver.cuda_version else ""
        drv = f"driver {driver.version}{cuda}"
    elif driver.error:
        drv = f"driver error: {driver.error}"
    gpus = facts.gpus
    if not gpus:
        found = "no NVIDIA GPU found" if facts.listed_gpus == [] else "unknown"
        return f"GPUs: {found}" + (f", {drv}" if drv else "")
    names: dict[str, int] = {}
    for g in gpus:
        cc = f"cc {g.compute_capability}, " if isinstance(g.compute_capability, str) else ""
        size = g.memory_total_bytes if isinstance(g.memory_total_bytes, int) else None
        inner = f"{cc}{_gib(size)}" if size is not None else cc.rstrip(", ")
        name = g.name if isinstance(g.name, str) else "?"
        label = name + (f" ({inner})" if inner else "")
        names[label] = names.get(label, 0) + 1
    listed = ", ".join(f"{n}x {label}" for label, n in names.items())
    if not facts.listed_gpus:
        listed += " (seen by torch; no NVML or nvidia-smi list)"
    return f"GPUs: {_join(listed, drv)}"


def gpu_facts(facts: Facts) -> list[str]:
    lines = []
    if facts.driver.source:
        lines.append(f"read via {facts.driver.source}")
    for g in facts.listed_gpus or []:
        used = _gib(g.memory_used_bytes)
        lines.append(f"GPU {shown(g.index)}: {shown(g.name)}, {used} used")
        for p in g.processes or ():
            lines.append(f"  pid {shown(p.pid, 'None')} {p.name or '?'} holds {_gib(p.used_bytes)}")
    for pair in facts.topology:
        p2p = ", P2P ok" if pair.p2p is True else ", no P2P" if pair.p2p is False else ""
        lines.append(f"GPU{shown(pair.gpus, 'None')}: {shown(pair.link)}{p2p}")
    return lines


def toolkit_headline(facts: Facts) -> str:
    tk = facts.cuda_toolkit
    if not facts.known("cuda_toolkit"):
        return "CUDA toolkit: unknown"
    if not tk.nvcc and tk.nvcc_version:
        return f"CUDA toolkit: nvcc {tk.nvcc_version}"  # a dump names the version only
    if not tk.nvcc:
        return "CUDA toolkit: no nvcc (only needed to build CUDA extensions)"
    version = tk.nvcc_version or "?"
    return f"CUDA toolkit: nvcc {version} at {tk.nvcc}"


def toolkit_facts(facts: Facts) -> list[str]:
    tk = facts.cuda_toolkit
    lines = []
    if tk.cuda_home:
        lines.append(f"CUDA_HOME: {tk.cuda_home} (from {shown(tk.cuda_home_source)})")
    if tk.nvcc_versions:
        lines += [f"nvcc {v or '?'}: {p}" for p, v in tk.nvcc_versions.items()]
    return lines


def _probe_note(facts: Facts, name: str) -> str:
    rec = facts.probes.get(name)
    if rec is None or rec.status in (None, NOT_PROBED, "ok"):
        return ""
    status, detail = str(rec.status), str(rec.detail or "")
    if detail.startswith(status):  # "skipped (--fast)" says it already
        return detail
    return f"{status} ({detail})" if detail else status


def torch_headline(facts: Facts) -> str:
    listed = facts.package("torch")
    if not facts.known("torch") and facts.from_dump:
        if listed and listed.version:
            return f"PyTorch {listed.version}: build unknown (only a package list names it)"
        return "PyTorch: unknown"
    if not facts.known("torch"):
        note = _probe_note(facts, "torch")
        return f"PyTorch: not probed{': ' + note if note else ''}"
    t = facts.torch
    if t is None:
        return "PyTorch: not installed"
    if t is NOT_PROBED:
        return "PyTorch: unknown"
    if t.error and not t.version:
        return f"PyTorch: {t.error}"
    count = t.device_count
    return f"PyTorch {shown(t.version)}: " + _join(
        f"CUDA {t.cuda}"
        if t.cuda
        else ("CPU-only build" if _said(t.cuda) else "CUDA build unknown"),
        f"{count} GPU{'s' if count != 1 else ''} visible"
        if isinstance(count, int) and t.cuda
        else "",
        f"NCCL {t.nccl}" if t.nccl else "",
        "bf16" if t.bf16_supported else "",
    )


def torch_facts(facts: Facts) -> list[str]:
    t = facts.torch
    if not t:
        return []
    lines = []
    for k in ("arch_list", "capabilities", "cxx11_abi", "cuda_available", "git_version", "error"):
        value = getattr(t, k)
        if _said(value) and value is not None:
            lines.append(
                f"{k}: {(' '.join(value) or 'none') if isinstance(value, list) else value}"
            )
    return lines


def packages_headline(facts: Facts) -> str:
    if not facts.known("packages"):
        return "Packages: unknown"
    pk = facts.packages
    listed = [f"{n} {shown(rec.version, 'None')}" for n in KEY_PACKAGES if (rec := pk.get(n))]
    if not listed and facts.from_dump:
        return "Packages: none of the training stack listed"  # a listing may be partial
    return "Packages: " + (", ".join(listed) if listed else "none of the training stack installed")


def packages_facts(facts: Facts) -> list[str]:
    lines = [
        f"{n} {shown(rec.version, 'None')}"
        for n, rec in facts.packages.items()
        if rec is not None and n not in KEY_PACKAGES
    ]
    for name in ("deepspeed", "apex", "amp_C", "fused_weight_gradient_mlp_cuda"):
        lines += _import_line(facts, name)
    return lines


def _import_line(facts: Facts, module: str) -> list[str]:
    rec = facts.imports.get(module)
    if rec is None:
        return []
    if rec.ok in (None, NOT_PROBED):
        return [f"import {module}: not checked ({rec.checked or 'skipped'})"]
    return [f"import {module}: " + ("ok" if rec.ok else f"failed: {shown(rec.error, 'None')}")]


def _import_state(facts: Facts, dist: str, module: str, label: str) -> str:
    pkg = facts.package(dist)
    rec = facts.imports.get(module)
    probed = module in facts.imports
    if facts.installed(dist) is False and not probed:
        return f"{label}: not installed"
    version = f" {pkg.version}" if pkg and pkg.version else ""
    if rec is not None:
        if rec.ok in (None, NOT_PROBED):  # an on-demand import the plan did not ask for
            return f"{label}{version}: installed, import not checked (not in the plan)"
        state = "imports fine" if rec.ok else "import fails"
        return f"{label}{version}: {state}"
    if probed:
        return f"{label}: not installed"
    return f"{label}{version}: import not checked" if version else f"{label}: unknown"


def flash_attn_headline(facts: Facts) -> str:
    return _import_state(facts, "flash-attn", "flash_attn", "FlashAttention")


def flash_attn_facts(facts: Facts) -> list[str]:
    lines = []
    for m in ("flash_attn", "flash_attn_2_cuda", "flash_attn_interface"):
        lines += _import_line(facts, m)
    return lines


def vllm_headline(facts: Facts) -> str:
    state = _import_state(facts, "vllm", "vllm", "vLLM")
    if state.endswith("imports fine") and facts.import_ok("vllm._custom_ops") is False:
        return state.replace("imports fine", "imports, but its compiled kernels do not load")
    return state


def vllm_facts(facts: Facts) -> list[str]:
    return _import_line(facts, "vllm") + _import_line(facts, "vllm._custom_ops")


def ray_headline(facts: Facts) -> str:
    if not facts.known("ray"):
        return "Ray: unknown"
    ray = facts.ray
    if not ray:
        return "Ray: not installed"
    cluster, address = ray.cluster, shown(ray.address, "None")
    where = {
        "none": "no cluster running",
        "running": f"cluster at {address}",
        "unhealthy": f"cluster at {address}, GCS unhealthy",
        "unreachable": f"cluster at {address} does not answer",
        "stale": f"stale cluster file names {address} (nothing answers)",
    }.get(str(cluster), "")
    nodes = ray.nodes
    count = (
        f"{nodes} node{'s' if nodes != 1 else ''}"
        if cluster == "running" and isinstance(nodes, int)
        else ""
    )
    health = "GCS healthy" if cluster == "running" and ray.gcs_healthy else ""
    return f"Ray {shown(ray.version)}: {_join(where, count, health)}"


_CLIENT_ACTIONS = {
    "connect": "connects to {address}",
    "connect-client": "connects through Ray Client to {address}",
    "start-local": "starts a new local Ray instance",
    "fail": "fails: {error}",
}


def ray_facts(facts: Facts) -> list[str]:
    ray = facts.ray
    if not ray:
        return []
    lines = []
    if ray.head_version and ray.head_version != ray.version:
        lines.append(f"head runs Ray {ray.head_version}")
    if ray.dashboard:
        lines.append(f"dashboard: {ray.dashboard}")
    if ray.temp_dir:
        lines.append(f"head's temp dir: {ray.temp_dir}")
    if ray.source:
        lines.append(f"found through: {ray.source}")
    client = ray.client
    if client and client.action:
        text = _CLIENT_ACTIONS.get(client.action, client.action).format(
            address=shown(client.address, "None"), error=shown(client.error, "None")
        )
        lines.append(f"ray.init() with RAY_ADDRESS={client.ray_address or '(unset)'}: {text}")
    if ray.error:
        lines.append(f"error: {ray.error}")
    return lines


def docker_headline(facts: Facts) -> str:
    if not facts.known("docker"):
        return "Docker: unknown"
    docker = facts.docker
    if not docker:
        return "Docker: no engine"
    if not docker.reachable:
        return f"Docker: engine at {shown(docker.host, 'None')} does not answer"
    usable = docker.gpus_usable
    gpus = (
        "--gpus usable" if usable is True else "no NVIDIA runtime or CDI" if usable is False else ""
    )
    return "Docker: " + _join(
        f"engine {shown(docker.server_version, 'None')}", docker.storage_driver, gpus
    )


def docker_facts(facts: Facts) -> list[str]:
    docker = facts.docker
    if not docker or docker == DockerFacts():
        return []
    lines = [f"host: {shown(docker.host, 'None')}"]
    if docker.reachable:
        runtimes = ", ".join(docker.runtimes or ()) or "none"
        lines.append(f"runtimes: {runtimes} (default {shown(docker.default_runtime, 'None')})")
        if docker.cdi_spec_dirs:
            lines.append(f"CDI spec dirs: {', '.join(docker.cdi_spec_dirs)}")
        if docker.cdi_nvidia_devices:
            lines.append(f"CDI NVIDIA devices: {', '.join(docker.cdi_nvidia_devices)}")
    if docker.error:
        lines.append(f"error: {docker.error}")
    return lines


def plan_headline(facts: Facts) -> str:
    plan = facts.plan
    vllm = f"vLLM {plan.vllm_mode or ''}".strip() if plan.use_vllm else ""
    procs = plan.num_processes
    return "Plan: " + (
        _join(
            plan.task,
            plan.model,
            vllm,
            f"{procs} process{'es' if procs != 1 else ''}" if isinstance(procs, int) else "",
        )
        or "given"
    )


def plan_facts(facts: Facts) -> list[str]:
    plan = facts.plan
    return [f"{k}: {msgspec.to_builtins(getattr(plan, k))}" for k in facts.plan_fields]


def doctor_headline(facts: Facts) -> str:
    total = facts.probes_seconds
    took = f" in {total:.2f} s" if total is not None else ""
    return f"Doctor: {len(facts.probes)} probes{took}"


def doctor_facts(facts: Facts) -> list[str]:
    created = facts.created
    return [f"created {created} by shop-r1 {facts.tool_version or '?'}"] if created else []


def probe_lines(facts: Facts, names: tuple[str, ...]) -> list[str]:
    """Timing lines of the probes named (or their `name.*` children)."""
    lines = []
    for name, rec in facts.probes.items():
        if not any(name == n or name.startswith(n + ".") for n in names):
            continue
        secs = rec.seconds
        took = f" in {secs:.2f} s" if isinstance(secs, (int, float)) else ""
        detail = f": {rec.detail}" if rec.detail else ""
        lines.append(f"probe {name}: {shown(rec.status, 'None')}{took}{detail}")
    return lines
