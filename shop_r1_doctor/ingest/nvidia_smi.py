"""`nvidia-smi` as pasted: the default table, `nvidia-smi -q`, `nvidia-smi -L`, and its
failure lines (`NVIDIA-SMI has failed ...`, `Failed to initialize NVML: ...`).

The table's process list gives compute processes (`C`, `C+G`); graphics-only ones (`G`,
a desktop's Xorg) are not training's competition. A table whose process block was not
pasted leaves `processes` unknown.
"""

from __future__ import annotations

import re
from typing import Any

from shop_r1_doctor.ingest._common import Line, Partial, version_or_error

MIB = 1024 * 1024
_HEADER = re.compile(
    r"Driver Version:\s*(?P<driver>\S+)(?:\s+CUDA Version:\s*(?P<cuda>[\w./]+))?", re.I
)
# `|   0  NVIDIA H100 80GB HBM3          On  |   00000000:00:06.0 Off |   0 |`
_ROW1 = re.compile(
    r"^\|\s*(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off|WDDM|TCC|MCDM|N/A)\s*\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
)
# `| N/A   36C    P0   93W /  700W |   0MiB /  81559MiB |   0%   Default |`
_ROW2 = re.compile(r"^\|.*?\|\s*(?P<used>\d+)\s*MiB\s*/\s*(?P<total>\d+)\s*MiB\s*\|")
# `|    0   N/A  N/A    12345      C   python                     4000MiB |`
_PROC = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:\S+\s+\S+\s+)?(?P<pid>\d+)\s+(?P<type>C\+G|C|G)\s+(?P<name>.+?)\s+(?P<mem>\d+MiB|N/A)\s*\|"
)
_NO_PROCS = re.compile(r"No running processes found", re.I)
_LIST = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: GPU-[0-9a-fA-F-]+\)")
_FAILED = re.compile(
    r"(NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.*"
    r"|Failed to initialize NVML: .+"
    r"|nvidia-smi: command not found)"
)
_Q_KEY = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z .()/-]*?)\s*:\s*(?P<value>.*)$")


def parse(lines: list[Line], where: str) -> Partial | None:
    out = Partial("nvidia_smi")
    _table(lines, out, where)
    if "gpus" not in out.facts:
        _query(lines, out, where)
    _listing(lines, out)
    _failure(lines, out)
    return out if out.lines else None


def _driver(out: Partial, driver: str, cuda: str | None, line: Line, where: str) -> None:
    section = out.section("driver")
    section["version"] = version_or_error(driver, "driver version", where, line)
    if cuda and cuda.upper() != "N/A":
        section["cuda_version"] = version_or_error(cuda, "CUDA version", where, line)
    section["source"] = "nvidia-smi"
    out.lines.append(line.number)


def _table(lines: list[Line], out: Partial, where: str) -> None:
    gpus: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None
    procs: list[tuple[int, dict[str, Any]]] | None = None
    for line in lines:
        text = line.text.strip()
        header = _HEADER.search(text) if text.startswith("|") and "NVIDIA-SMI" in text else None
        if header:
            _driver(out, header.group("driver"), header.group("cuda"), line, where)
            continue
        row1 = _ROW1.match(text)
        if row1:
            pending = {"index": int(row1.group("index")), "name": _name(row1.group("name"))}
            gpus.append(pending)
            out.lines.append(line.number)
            continue
        row2 = _ROW2.match(text)
        if row2 and pending is not None:
            pending["memory_used_bytes"] = int(row2.group("used")) * MIB
            pending["memory_total_bytes"] = int(row2.group("total")) * MIB
            pending = None
            out.lines.append(line.number)
            continue
        if text.startswith("| Processes:") or text.startswith("|  Processes:"):
            procs = []
            out.lines.append(line.number)
            continue
        if procs is not None:
            proc = _PROC.match(text)
            if proc and proc.group("type") != "G":
                mem = proc.group("mem")
                procs.append(
                    (
                        int(proc.group("gpu")),
                        {
                            "pid": int(proc.group("pid")),
                            "name": proc.group("name").strip(),
                            "used_bytes": int(mem[:-3]) * MIB if mem != "N/A" else None,
                        },
                    )
                )
                out.lines.append(line.number)
            elif _NO_PROCS.search(text):
                out.lines.append(line.number)
    if gpus:
        if procs is not None:  # the process block was pasted: it is complete
            for gpu in gpus:
                gpu["processes"] = [p for i, p in procs if i == gpu["index"]]
        out.facts["gpus"] = gpus


def _name(name: str) -> str:
    """Drop the table's truncation mark: `NVIDIA GeForce RTX 4090 ...` -> without `...`."""
    return name.strip().removesuffix("...").strip()


def _query(lines: list[Line], out: Partial, where: str) -> None:
    """`nvidia-smi -q`: `Key : value` lines; `Product Name` starts each GPU."""
    gpus: list[dict[str, Any]] = []
    attached: int | None = None
    block = ""  # the last header line without a colon: `FB Memory Usage`, `BAR1 ...`
    for line in lines:
        kv = _Q_KEY.match(line.text)
        if not kv:
            block = line.text.strip()
            continue
        key, value = kv.group("key"), kv.group("value").strip()
        if key == "Driver Version" and line.text.startswith("Driver Version"):
            _driver(out, value, None, line, where)
        elif (
            key == "CUDA Version" and line.text.startswith("CUDA Version") and "driver" in out.facts
        ):
            if value.upper() != "N/A":
                out.section("driver")["cuda_version"] = version_or_error(value, key, where, line)
            out.lines.append(line.number)
        elif key == "Attached GPUs" and value.isdigit():
            attached = int(value)
        elif key == "Product Name":
            gpus.append({"index": len(gpus), "name": value})
            out.lines.append(line.number)
        elif block == "FB Memory Usage" and gpus and key in ("Total", "Used"):
            m = re.match(r"(\d+)\s*MiB", value)
            if m:
                field = "memory_total_bytes" if key == "Total" else "memory_used_bytes"
                gpus[-1][field] = int(m.group(1)) * MIB
                out.lines.append(line.number)
    if attached is not None and attached != len(gpus):
        for gpu in gpus:  # `-q -i N` shows one GPU of several: its index is not its order
            del gpu["index"]
    if gpus and "driver" in out.facts:  # `Product Name` alone is not enough to be nvidia-smi
        out.facts["gpus"] = gpus


def _listing(lines: list[Line], out: Partial) -> None:
    """`nvidia-smi -L` lines, when no table or `-q` named the GPUs."""
    if "gpus" in out.facts:
        return
    gpus = []
    for line in lines:
        m = _LIST.match(line.text.strip())
        if m:
            gpus.append({"index": int(m.group("index")), "name": m.group("name")})
            out.lines.append(line.number)
    if gpus:
        out.facts["gpus"] = gpus


def _failure(lines: list[Line], out: Partial) -> None:
    """nvidia-smi could not reach the driver: what the GPU probe records for the same."""
    if "driver" in out.facts:
        return
    for line in lines:
        m = _FAILED.search(line.text)
        if m:
            out.facts["driver"] = {"version": None, "error": m.group(1), "source": "nvidia-smi"}
            out.lines.append(line.number)
            return
