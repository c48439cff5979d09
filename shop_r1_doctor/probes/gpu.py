"""GPUs and the driver: NVML first, `nvidia-smi` when NVML cannot be loaded.

NVML (module `pynvml` of nvidia-ml-py) is one shared library call per fact and never
changes output format; `nvidia-smi` is slower and not backward compatible (470-era
builds reject `compute_cap`). Indices are NVML's (PCI order), which is what
`nvidia-smi` shows; CUDA_VISIBLE_DEVICES is recorded by the env probe.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Any

from shop_r1_doctor.probes.deps import ProbeDeps

MIB = 1024 * 1024
SMI_QUERY_FIELDS = "index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,driver_version"
SMI_APPS_QUERY = "pid,process_name,used_memory,gpu_uuid"
# nvmlDeviceGetTopologyCommonAncestor levels, named as `nvidia-smi topo -m` names them.
TOPOLOGY_NAMES = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# Only for nvidia-smi builds without `compute_cap` (driver < 510): GPUs of that era.
# Source: https://developer.nvidia.com/cuda-gpus
# Also used by `doctor --from` for GPUs a pasted dump names (collect_env, trl env): the
# more specific names come first (`Quadro RTX 4000` is Turing, `RTX 4000 Ada` is Ada).
CC_BY_NAME = (
    ("GB200", "10.0"),
    ("B200", "10.0"),
    ("B100", "10.0"),
    ("RTX PRO 6000 Blackwell", "12.0"),
    ("GeForce RTX 50", "12.0"),
    ("Ada Generation", "8.9"),
    ("Quadro RTX", "7.5"),
    ("H100", "9.0"),
    ("H800", "9.0"),
    ("H20", "9.0"),
    ("H200", "9.0"),
    ("GH200", "9.0"),
    ("L40", "8.9"),
    ("L4", "8.9"),
    ("RTX 40", "8.9"),
    ("A100", "8.0"),
    ("A800", "8.0"),
    ("L20", "8.9"),
    ("A30", "8.0"),
    ("A10", "8.6"),
    ("A40", "8.6"),
    ("RTX 30", "8.6"),
    ("RTX A", "8.6"),
    ("T4", "7.5"),
    ("RTX 20", "7.5"),
    ("TITAN RTX", "7.5"),
    ("GTX 16", "7.5"),
    ("V100", "7.0"),
    ("TITAN V", "7.0"),
    ("P100", "6.0"),
    ("P40", "6.1"),
    ("P4", "6.1"),
    ("GTX 10", "6.1"),
    ("TITAN Xp", "6.1"),
    ("K80", "3.7"),
    ("M60", "5.2"),
    ("M40", "5.2"),
)


def cc_from_name(name: str) -> str | None:
    for needle, cc in CC_BY_NAME:
        if needle in name:
            return cc
    return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _const(value: Any) -> Any:
    # nvidia-ml-py 13.x defines some enum constants as 1-tuples, e.g. `(0,)`.
    return value[0] if isinstance(value, tuple) and len(value) == 1 else value


def _try(fn: Callable[..., Any], *args: Any) -> Any:
    # NVML raises per field (NotSupported on MIG/vGPU, NoPermission in containers):
    # a field it refuses stays out of the snapshot, i.e. "unknown".
    try:
        return fn(*args)
    except Exception:
        return None


def cuda_version_from_int(value: int) -> str:
    """NVML's 13000 -> "13.0", 12080 -> "12.8"."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _processes(
    deps: ProbeDeps, items: list[tuple[int, int | None, str | None]]
) -> list[dict[str, Any]]:
    out = []
    for pid, used, smi_name in items:
        name = deps.proc_name(pid) or smi_name
        out.append({"pid": pid, "name": name, "used_bytes": used})
    return out


def _nvml_topology(n: Any, handles: list[Any]) -> dict[str, Any]:
    bus_ids = [_text(_try(lambda h: n.nvmlDeviceGetPciInfo(h).busId, h) or "") for h in handles]
    # NVLinks of each GPU by the PCI bus id at their far end: one pass per GPU.
    max_links = int(_const(getattr(n, "NVML_NVLINK_MAX_LINKS", 0)))
    remote: list[dict[str, int]] = []
    for handle in handles:
        counts: dict[str, int] = {}
        for link in range(max_links):
            info = _try(n.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
            if info is not None:
                counts[_text(info.busId)] = counts.get(_text(info.busId), 0) + 1
        remote.append(counts)
    ok = _const(n.NVML_P2P_STATUS_OK)
    pairs = []
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            pair: dict[str, Any] = {"gpus": [i, j]}
            nvlinks = remote[i].get(bus_ids[j], 0) if bus_ids[j] else 0
            level = _try(n.nvmlDeviceGetTopologyCommonAncestor, handles[i], handles[j])
            if nvlinks:
                pair["link"] = f"NV{nvlinks}"
            elif level is not None:
                pair["link"] = TOPOLOGY_NAMES.get(int(_const(level)), str(level))
            for key, cap in (("p2p", "READ"), ("p2p_nvlink", "NVLINK")):
                index = _const(getattr(n, f"NVML_P2P_CAPS_INDEX_{cap}", None))
                status = _try(n.nvmlDeviceGetP2PStatus, handles[i], handles[j], index)
                if index is not None and status is not None:
                    pair[key] = int(status) == ok
            pairs.append(pair)
    return {"source": "nvml", "pairs": pairs}


def probe_nvml(deps: ProbeDeps, n: Any) -> dict[str, Any]:
    n.nvmlInit()
    try:
        cuda = _try(n.nvmlSystemGetCudaDriverVersion_v2) or _try(n.nvmlSystemGetCudaDriverVersion)
        driver = {
            "version": _text(n.nvmlSystemGetDriverVersion()),
            "cuda_version": cuda_version_from_int(int(cuda)) if cuda else None,
            "source": "nvml",
        }
        handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(n.nvmlDeviceGetCount())]
        gpus = []
        for index, handle in enumerate(handles):
            gpu: dict[str, Any] = {"index": index, "name": _text(n.nvmlDeviceGetName(handle))}
            cc = _try(n.nvmlDeviceGetCudaComputeCapability, handle)
            if cc is not None:
                gpu["compute_capability"] = f"{cc[0]}.{cc[1]}"
            mem = _try(n.nvmlDeviceGetMemoryInfo, handle)
            if mem is not None:
                gpu["memory_total_bytes"] = int(mem.total)
                gpu["memory_used_bytes"] = int(mem.used)
            procs = _try(n.nvmlDeviceGetComputeRunningProcesses, handle)
            if procs is not None:
                gpu["processes"] = _processes(
                    deps, [(int(p.pid), _used(p.usedGpuMemory), None) for p in procs]
                )
            gpus.append(gpu)
        result: dict[str, Any] = {"driver": driver, "gpus": gpus}
        if len(handles) > 1:
            result["topology"] = _nvml_topology(n, handles)
        return result
    finally:
        _try(n.nvmlShutdown)


def _used(value: Any) -> int | None:
    # NVML reports None (or NVML_VALUE_NOT_AVAILABLE) where per-process memory is hidden.
    if value is None or int(value) >= 2**63 - 1 or int(value) < 0:
        return None
    return int(value)


def _csv_rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in row]
        for row in csv.reader(io.StringIO(text), skipinitialspace=True)
        if row
    ]


def _mib(cell: str) -> int | None:
    match = re.match(r"^(\d+)", cell.strip())
    return int(match.group(1)) * MIB if match else None


def parse_query_gpu(text: str) -> list[dict[str, str]]:
    """`--format=csv` output (header row, units) -> one dict per GPU keyed by field name."""
    rows = _csv_rows(text)
    if not rows:
        return []
    header = [re.sub(r"\s*\[.*\]$", "", h) for h in rows[0]]
    return [dict(zip(header, row, strict=True)) for row in rows[1:] if len(row) == len(header)]


def parse_cuda_version(header: str) -> str | None:
    match = re.search(r"CUDA Version:\s*([\d.]+)", header)
    return match.group(1) if match else None


def parse_matrix(text: str) -> dict[tuple[int, int], str]:
    """A `nvidia-smi topo` GPU matrix -> {(i, j): cell} for i != j."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # recent builds underline the header row
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    columns = [c.strip() for c in lines[0].split("\t")]
    gpu_cols = {i: int(c[3:]) for i, c in enumerate(columns) if re.fullmatch(r"GPU\d+", c)}
    cells: dict[tuple[int, int], str] = {}
    for line in lines[1:]:
        row = [c.strip() for c in line.split("\t")]
        match = re.fullmatch(r"GPU(\d+)", row[0]) if row else None
        if not match:
            continue
        i = int(match.group(1))
        for col, j in gpu_cols.items():
            if j != i and col < len(row):
                cells[(i, j)] = row[col]
    return cells


def parse_topo(text: str, p2p_text: str | None = None) -> list[dict[str, Any]]:
    """`topo -m` (and `topo -p2p r`) -> [{"gpus": [0, 1], "link": "NV18", "p2p": True}]."""
    links = parse_matrix(text)
    p2p = parse_matrix(p2p_text) if p2p_text else {}
    pairs = []
    for (i, j), link in sorted(links.items()):
        if j > i:
            pair: dict[str, Any] = {"gpus": [i, j], "link": link}
            if (i, j) in p2p:
                pair["p2p"] = p2p[(i, j)] == "OK"
            pairs.append(pair)
    return pairs


def probe_nvidia_smi(deps: ProbeDeps, timeout: float) -> dict[str, Any]:
    fields = SMI_QUERY_FIELDS
    query = deps.runner(["nvidia-smi", f"--query-gpu={fields}", "--format=csv"], timeout)
    if query is None:
        return {"driver": None, "gpus": [], "_detail": "nvidia-smi: not found"}
    cc_from_table = False
    if "not a valid field" in query.stdout + query.stderr and "compute_cap" in query.stdout:
        fields = fields.replace(",compute_cap", "")
        query = deps.runner(["nvidia-smi", f"--query-gpu={fields}", "--format=csv"], timeout)
        cc_from_table = True
        assert query is not None  # it answered a moment ago
    if query.returncode != 0:
        message = (query.stdout + query.stderr).strip().splitlines()
        return {
            "driver": {
                "version": None,
                "error": message[0] if message else "",
                "source": "nvidia-smi",
            },
            "gpus": [],
        }
    rows = parse_query_gpu(query.stdout)
    header = deps.runner(["nvidia-smi"], timeout)
    driver = {
        "version": rows[0].get("driver_version") if rows else None,
        "cuda_version": parse_cuda_version(header.stdout) if header else None,
        "source": "nvidia-smi",
    }
    by_uuid: dict[str, list[tuple[int, int | None, str | None]]] = {}
    apps = deps.runner(
        ["nvidia-smi", f"--query-compute-apps={SMI_APPS_QUERY}", "--format=csv,noheader,nounits"],
        timeout,
    )
    if apps is not None and apps.returncode == 0:
        for app in _csv_rows(apps.stdout):
            if len(app) >= 4 and app[0].isdigit():
                used = int(app[2]) * MIB if app[2].isdigit() else None
                by_uuid.setdefault(app[3], []).append((int(app[0]), used, app[1] or None))
    gpus = []
    for row in rows:
        gpu: dict[str, Any] = {"index": int(row["index"]), "name": row.get("name")}
        cc = cc_from_name(row.get("name", "")) if cc_from_table else row.get("compute_cap")
        if cc and re.fullmatch(r"\d+\.\d+", cc):
            gpu["compute_capability"] = cc
            if cc_from_table:
                gpu["compute_capability_source"] = "name-table"
        for key, field in (
            ("memory_total_bytes", "memory.total"),
            ("memory_used_bytes", "memory.used"),
        ):
            value = _mib(row.get(field, ""))
            if value is not None:
                gpu[key] = value
        if apps is not None and apps.returncode == 0:
            gpu["processes"] = _processes(deps, by_uuid.get(row.get("uuid", ""), []))
        gpus.append(gpu)
    result: dict[str, Any] = {"driver": driver, "gpus": gpus}
    if len(gpus) > 1:
        topo = deps.runner(["nvidia-smi", "topo", "-m"], timeout)
        p2p = deps.runner(["nvidia-smi", "topo", "-p2p", "r"], timeout)
        if topo is not None and topo.returncode == 0:
            p2p_text = p2p.stdout if p2p is not None and p2p.returncode == 0 else None
            result["topology"] = {
                "source": "nvidia-smi",
                "pairs": parse_topo(topo.stdout, p2p_text),
            }
    return result


def proc_driver_version(deps: ProbeDeps) -> str | None:
    """`NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ...` -> "580.159.04"."""
    try:
        text = (deps.root / "proc" / "driver" / "nvidia" / "version").read_text()
    except OSError:
        return None
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", text)
    return match.group(1) if match else None


def surely_no_driver(deps: ProbeDeps) -> bool:
    """Native Linux with no NVIDIA kernel module loaded (WSL2 GPUs live behind /dev/dxg)."""
    root = deps.root
    return (
        deps.platform.system == "linux"
        and not (root / "proc" / "driver" / "nvidia").exists()
        and not (root / "dev" / "dxg").exists()
    )


def probe_gpu(deps: ProbeDeps, timeout: float = 10.0) -> dict[str, Any]:
    nvml = deps.load_nvml()
    nvml_error = "pynvml not importable"
    if nvml is not None:
        try:
            return probe_nvml(deps, nvml)
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            nvml_error = f"{type(exc).__name__}: {exc}"
    result = probe_nvidia_smi(deps, timeout)
    note = f"NVML unavailable ({nvml_error}); used nvidia-smi"
    if "_detail" in result:
        note = f"NVML unavailable ({nvml_error}); {result['_detail']}"
    result["_detail"] = note
    return result
