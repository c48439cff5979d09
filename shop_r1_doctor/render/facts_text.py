"""One-line headlines and `-v` fact lines per subject, read from a snapshot.

Snapshots may come from files written by other versions: every reader here tolerates
missing or oddly typed fields ("unknown") and never raises.
"""

from __future__ import annotations

from typing import Any

from shop_r1_doctor.facts import Facts

GIB = 1024**3
KEY_PACKAGES = ("transformers", "trl", "accelerate", "datasets", "peft", "numpy")


def _d(snap: dict[str, Any], key: str) -> dict[str, Any]:
    value = snap.get(key)
    return value if isinstance(value, dict) else {}


def _gib(n: Any) -> str:
    return f"{n / GIB:.1f} GiB" if isinstance(n, (int, float)) and not isinstance(n, bool) else "?"


def _short(value: Any, limit: int = 100) -> str:
    """Long values (NVIDIA_REQUIRE_CUDA runs to 2 kB) are cut in the terminal; --json keeps them."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(*parts: Any) -> str:
    return ", ".join(str(p) for p in parts if p)


def platform_headline(snap: dict[str, Any]) -> str:
    host = _d(snap, "host")
    if not host:
        return "System: unknown"
    py = _d(host, "python")
    wsl = f"WSL{host['wsl']}" if host.get("wsl") else ""
    container = f"in {host['container']}" if host.get("container") else ""
    virt = host.get("virtualization")
    vm = ("VM" if virt == "vm" else f"{virt} VM") if virt else ""
    image = f"image built by {host['image_built_by']}" if host.get("image_built_by") else ""
    system = host.get("os_release") or host.get("os") or "?"
    return "System: " + _join(
        f"{system} {host.get('arch') or ''}".strip(),
        wsl,
        container,
        vm,
        image,
        f"{host['cpu_count']} CPUs" if host.get("cpu_count") else "",
        f"{_gib(host.get('ram_bytes'))} RAM" if host.get("ram_bytes") else "",
        f"Python {py.get('version')}" if py.get("version") else "",
    )


def platform_facts(snap: dict[str, Any]) -> list[str]:
    host = _d(snap, "host")
    lines = []
    for key in ("kernel", "libc", "stdout_encoding", "windows_long_paths", "cpu_usable"):
        if host.get(key) is not None:
            lines.append(f"{key}: {host[key]}")
    if "shm_bytes" in host:
        lines.append(f"/dev/shm: {_gib(host['shm_bytes']) if host['shm_bytes'] else 'none'}")
    free = host.get("disk_free_bytes")
    if isinstance(free, dict):
        lines += [f"disk free at {path}: {_gib(n)}" for path, n in free.items()]
    py = host.get("python")
    if isinstance(py, dict):
        lines += [f"python {k}: {v}" for k, v in py.items() if k != "version" and v is not None]
    env = _d(snap, "env")
    lines += [f"env {k}={_short(v)}" for k, v in env.items() if k != "PATH"]
    return lines


def gpu_headline(snap: dict[str, Any]) -> str:
    # The GPUs the checks judge (`Facts.gpus`): NVML's or nvidia-smi's, else the devices
    # torch saw. Read from the raw section, a container without NVML headed "no NVIDIA GPU
    # found" above findings about the GPU torch was using.
    facts = Facts(snap)
    driver = _d(snap, "driver")
    drv = ""
    if driver.get("version"):
        cuda = f" (CUDA {driver['cuda_version']})" if driver.get("cuda_version") else ""
        drv = f"driver {driver['version']}{cuda}"
    elif driver.get("error"):
        drv = f"driver error: {driver['error']}"
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


def gpu_facts(snap: dict[str, Any]) -> list[str]:
    lines = []
    driver = _d(snap, "driver")
    if driver.get("source"):
        lines.append(f"read via {driver['source']}")
    gpus = snap.get("gpus")
    for g in gpus if isinstance(gpus, list) else []:
        if not isinstance(g, dict):
            continue
        used = _gib(g.get("memory_used_bytes"))
        lines.append(f"GPU {g.get('index', '?')}: {g.get('name', '?')}, {used} used")
        for p in g.get("processes") or []:
            if isinstance(p, dict):
                lines.append(
                    f"  pid {p.get('pid')} {p.get('name') or '?'} holds {_gib(p.get('used_bytes'))}"
                )
    topo = _d(snap, "topology")
    for pair in topo.get("pairs") or []:
        if isinstance(pair, dict):
            p2p = {True: ", P2P ok", False: ", no P2P"}.get(pair.get("p2p"), "")  # type: ignore[arg-type]
            lines.append(f"GPU{pair.get('gpus')}: {pair.get('link', '?')}{p2p}")
    return lines


def toolkit_headline(snap: dict[str, Any]) -> str:
    tk = _d(snap, "cuda_toolkit")
    if "cuda_toolkit" not in snap:
        return "CUDA toolkit: unknown"
    if not tk.get("nvcc") and tk.get("nvcc_version"):
        return f"CUDA toolkit: nvcc {tk['nvcc_version']}"  # a dump names the version only
    if not tk.get("nvcc"):
        return "CUDA toolkit: no nvcc (only needed to build CUDA extensions)"
    version = tk.get("nvcc_version") or "?"
    return f"CUDA toolkit: nvcc {version} at {tk['nvcc']}"


def toolkit_facts(snap: dict[str, Any]) -> list[str]:
    tk = _d(snap, "cuda_toolkit")
    lines = []
    if tk.get("cuda_home"):
        lines.append(f"CUDA_HOME: {tk['cuda_home']} (from {tk.get('cuda_home_source', '?')})")
    versions = tk.get("nvcc_versions")
    if isinstance(versions, dict):
        lines += [f"nvcc {v or '?'}: {p}" for p, v in versions.items()]
    return lines


def _probe_note(snap: dict[str, Any], name: str) -> str:
    rec = _d(snap, "probes").get(name)
    if not isinstance(rec, dict) or rec.get("status") in (None, "ok"):
        return ""
    status, detail = str(rec["status"]), str(rec.get("detail") or "")
    if detail.startswith(status):  # "skipped (--fast)" says it already
        return detail
    return f"{status} ({detail})" if detail else status


def torch_headline(snap: dict[str, Any]) -> str:
    listed = _installed(snap).get("torch")
    if "torch" not in snap and _from_dump(snap):
        if listed and listed.get("version"):
            return f"PyTorch {listed['version']}: build unknown (only a package list names it)"
        return "PyTorch: unknown"
    if "torch" not in snap:
        note = _probe_note(snap, "torch")
        return f"PyTorch: not probed{': ' + note if note else ''}"
    t = snap.get("torch")
    if t is None:
        return "PyTorch: not installed"
    if not isinstance(t, dict):
        return "PyTorch: unknown"
    if t.get("error") and not t.get("version"):
        return f"PyTorch: {t['error']}"
    count = t.get("device_count")
    return f"PyTorch {t.get('version', '?')}: " + _join(
        f"CUDA {t['cuda']}"
        if t.get("cuda")
        else ("CPU-only build" if "cuda" in t else "CUDA build unknown"),
        f"{count} GPU{'s' if count != 1 else ''} visible"
        if isinstance(count, int) and t.get("cuda")
        else "",
        f"NCCL {t['nccl']}" if t.get("nccl") else "",
        "bf16" if t.get("bf16_supported") else "",
    )


def torch_facts(snap: dict[str, Any]) -> list[str]:
    t = _d(snap, "torch")
    keys = ("arch_list", "capabilities", "cxx11_abi", "cuda_available", "git_version", "error")
    return [
        f"{k}: {(' '.join(t[k]) or 'none') if isinstance(t[k], list) else t[k]}"
        for k in keys
        if t.get(k) is not None
    ]


def _installed(snap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in _d(snap, "packages").items() if isinstance(v, dict)}


def packages_headline(snap: dict[str, Any]) -> str:
    if "packages" not in snap:
        return "Packages: unknown"
    pk = _installed(snap)
    listed = [f"{n} {pk[n].get('version')}" for n in KEY_PACKAGES if n in pk]
    if not listed and _from_dump(snap):
        return "Packages: none of the training stack listed"  # a listing may be partial
    return "Packages: " + (", ".join(listed) if listed else "none of the training stack installed")


def _from_dump(snap: dict[str, Any]) -> bool:
    return _d(snap, "source").get("kind") == "dump"


def packages_facts(snap: dict[str, Any]) -> list[str]:
    lines = [
        f"{n} {v.get('version')}" for n, v in _installed(snap).items() if n not in KEY_PACKAGES
    ]
    for name in ("deepspeed", "apex", "amp_C", "fused_weight_gradient_mlp_cuda"):
        lines += _import_line(snap, name)
    return lines


def _import_line(snap: dict[str, Any], module: str) -> list[str]:
    rec = _d(snap, "imports").get(module)
    if not isinstance(rec, dict):
        return []
    if rec.get("ok") is None:
        return [f"import {module}: not checked ({rec.get('checked') or 'skipped'})"]
    return [f"import {module}: " + ("ok" if rec.get("ok") else f"failed: {rec.get('error')}")]


def _import_state(snap: dict[str, Any], dist: str, module: str, label: str) -> str:
    pkg = _d(snap, "packages").get(dist)
    imports = _d(snap, "imports")
    rec = imports.get(module)
    if pkg is None and dist in _d(snap, "packages") and rec is None:
        return f"{label}: not installed"
    version = f" {pkg['version']}" if isinstance(pkg, dict) and pkg.get("version") else ""
    if isinstance(rec, dict):
        if rec.get("ok") is None:  # an on-demand import the plan did not ask for
            return f"{label}{version}: installed, import not checked (not in the plan)"
        state = "imports fine" if rec.get("ok") else "import fails"
        return f"{label}{version}: {state}"
    if module in imports and rec is None:
        return f"{label}: not installed"
    return f"{label}{version}: import not checked" if version else f"{label}: unknown"


def flash_attn_headline(snap: dict[str, Any]) -> str:
    return _import_state(snap, "flash-attn", "flash_attn", "FlashAttention")


def flash_attn_facts(snap: dict[str, Any]) -> list[str]:
    lines = []
    for m in ("flash_attn", "flash_attn_2_cuda", "flash_attn_interface"):
        lines += _import_line(snap, m)
    return lines


def vllm_headline(snap: dict[str, Any]) -> str:
    state = _import_state(snap, "vllm", "vllm", "vLLM")
    kernels = _d(snap, "imports").get("vllm._custom_ops")
    if state.endswith("imports fine") and isinstance(kernels, dict) and kernels.get("ok") is False:
        return state.replace("imports fine", "imports, but its compiled kernels do not load")
    return state


def vllm_facts(snap: dict[str, Any]) -> list[str]:
    return _import_line(snap, "vllm") + _import_line(snap, "vllm._custom_ops")


def ray_headline(snap: dict[str, Any]) -> str:
    if "ray" not in snap:
        return "Ray: unknown"
    ray = snap.get("ray")
    if not isinstance(ray, dict):
        return "Ray: not installed"
    cluster = ray.get("cluster")
    where = {
        "none": "no cluster running",
        "running": f"cluster at {ray.get('address')}",
        "unhealthy": f"cluster at {ray.get('address')}, GCS unhealthy",
        "unreachable": f"cluster at {ray.get('address')} does not answer",
        "stale": f"stale cluster file names {ray.get('address')} (nothing answers)",
    }.get(str(cluster), "")
    nodes = ray.get("nodes")
    count = (
        f"{nodes} node{'s' if nodes != 1 else ''}"
        if cluster == "running" and isinstance(nodes, int)
        else ""
    )
    health = "GCS healthy" if cluster == "running" and ray.get("gcs_healthy") else ""
    return f"Ray {ray.get('version', '?')}: {_join(where, count, health)}"


_CLIENT_ACTIONS = {
    "connect": "connects to {address}",
    "connect-client": "connects through Ray Client to {address}",
    "start-local": "starts a new local Ray instance",
    "fail": "fails: {error}",
}


def ray_facts(snap: dict[str, Any]) -> list[str]:
    ray = _d(snap, "ray")
    lines = []
    if ray.get("head_version") and ray.get("head_version") != ray.get("version"):
        lines.append(f"head runs Ray {ray['head_version']}")
    if ray.get("dashboard"):
        lines.append(f"dashboard: {ray['dashboard']}")
    if ray.get("temp_dir"):
        lines.append(f"head's temp dir: {ray['temp_dir']}")
    if ray.get("source"):
        lines.append(f"found through: {ray['source']}")
    client = ray.get("client")
    if isinstance(client, dict) and client.get("action"):
        env = client.get("ray_address")
        text = _CLIENT_ACTIONS.get(str(client["action"]), str(client["action"])).format(**client)
        lines.append(f"ray.init() with RAY_ADDRESS={env or '(unset)'}: {text}")
    if ray.get("error"):
        lines.append(f"error: {ray['error']}")
    return lines


def docker_headline(snap: dict[str, Any]) -> str:
    if "docker" not in snap:
        return "Docker: unknown"
    docker = snap.get("docker")
    if not isinstance(docker, dict):
        return "Docker: no engine"
    if not docker.get("reachable"):
        return f"Docker: engine at {docker.get('host')} does not answer"
    usable = docker.get("gpus_usable")
    gpus = (
        "--gpus usable" if usable is True else "no NVIDIA runtime or CDI" if usable is False else ""
    )
    return "Docker: " + _join(
        f"engine {docker.get('server_version')}", docker.get("storage_driver"), gpus
    )


def docker_facts(snap: dict[str, Any]) -> list[str]:
    docker = _d(snap, "docker")
    if not docker:
        return []
    lines = [f"host: {docker.get('host')}"]
    if docker.get("reachable"):
        runtimes = ", ".join(docker.get("runtimes") or []) or "none"
        lines.append(f"runtimes: {runtimes} (default {docker.get('default_runtime')})")
        cdi = docker.get("cdi_spec_dirs")
        if cdi:
            lines.append(f"CDI spec dirs: {', '.join(cdi)}")
        if docker.get("cdi_nvidia_devices"):
            lines.append(f"CDI NVIDIA devices: {', '.join(docker['cdi_nvidia_devices'])}")
    if docker.get("error"):
        lines.append(f"error: {docker['error']}")
    return lines


def plan_headline(snap: dict[str, Any]) -> str:
    plan = _d(snap, "plan")
    vllm = f"vLLM {plan.get('vllm_mode', '')}".strip() if plan.get("use_vllm") else ""
    procs = plan.get("num_processes")
    return "Plan: " + (
        _join(
            plan.get("task"),
            plan.get("model"),
            vllm,
            f"{procs} process{'es' if procs != 1 else ''}" if isinstance(procs, int) else "",
        )
        or "given"
    )


def plan_facts(snap: dict[str, Any]) -> list[str]:
    return [f"{k}: {v}" for k, v in _d(snap, "plan").items()]


def doctor_headline(snap: dict[str, Any]) -> str:
    probes = _d(snap, "probes")
    total = snap.get("probes_seconds")
    took = f" in {total:.2f} s" if isinstance(total, (int, float)) else ""
    return f"Doctor: {len(probes)} probes{took}"


def doctor_facts(snap: dict[str, Any]) -> list[str]:
    return (
        [f"created {snap['created']} by shop-r1 {snap.get('tool_version', '?')}"]
        if snap.get("created")
        else []
    )


def probe_lines(snap: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """Timing lines of the probes named (or their `name.*` children)."""
    lines = []
    for name, rec in _d(snap, "probes").items():
        if not isinstance(rec, dict):
            continue
        if not any(name == n or name.startswith(n + ".") for n in names):
            continue
        secs = rec.get("seconds")
        took = f" in {secs:.2f} s" if isinstance(secs, (int, float)) else ""
        detail = f": {rec['detail']}" if rec.get("detail") else ""
        lines.append(f"probe {name}: {rec.get('status')}{took}{detail}")
    return lines
