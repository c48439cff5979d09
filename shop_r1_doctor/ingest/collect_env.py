"""`python -m torch.utils.collect_env` and `vllm collect-env` (old and sectioned layouts).

Both print `Key: value` lines (vLLM >= 0.9 pads the key: `PyTorch version   : 2.7.1`),
then `[pip3] name==version` / `[conda] name version build channel` package lines; vLLM
adds its version and an `Environment Variables` block. `CUDA runtime version` is what
`nvcc --version` says (collect_env runs nvcc), so it is the toolkit, not the driver.
"""

from __future__ import annotations

import re

from shop_r1_doctor.ingest._common import (
    Line,
    Partial,
    is_unknown,
    short_cuda,
    version_or_error,
)
from shop_r1_doctor.ingest.platform_text import host_from_os, host_from_platform

_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 _()/?.-]*?)\s*:\s?(?P<value>.*)$")
_GPU_LINE = re.compile(r"^\s*GPU (?P<index>\d+): (?P<name>.+?)(?: \(UUID: [^)]*\))?\s*$")
_PIP = re.compile(r"^\[(?:pip3?|uv)\] (?P<name>[A-Za-z0-9._-]+)\s*==\s*(?P<version>\S+)")
_CONDA = re.compile(r"^\[conda\] (?P<name>[A-Za-z0-9._-]+)\s+(?P<version>\S+)(?:\s+(?P<rest>.*))?$")
_ENV = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")
# A conda package name that is another pip distribution's name.
_CONDA_NAMES = {"pytorch": "torch"}
# Keys that prove the text is collect_env's (the first one alone is enough).
_SIGNATURE = ("PyTorch version", "Is debug build", "CUDA used to build PyTorch")
# vLLM's `Environment Variables` block lists only names with these prefixes, so a
# name missing from it is unknown, not unset (the snapshot marks the env as partial).
ENV_SECTION_HEADERS = ("Environment Variables",)


def parse(lines: list[Line], where: str) -> Partial | None:
    keys = {m.group("key").strip() for m in (_KEY_VALUE.match(ln.text) for ln in lines) if m}
    if not keys.intersection(_SIGNATURE[1:]) and "vLLM Version" not in keys:
        return None
    out = Partial("collect_env")
    in_gpus = in_env = False
    for line in lines:
        text = line.text
        if not text.strip():
            in_gpus = False
            continue
        gpu = _GPU_LINE.match(text)
        if gpu and (in_gpus or text.startswith("GPU")):
            _gpu(out, gpu.group("index"), gpu.group("name"), line)
            continue
        in_gpus = False
        pip = _PIP.match(text)
        if pip:
            out.package(pip.group("name"), pip.group("version"), line.number)
            continue
        conda = _CONDA.match(text)
        if conda:
            if not is_unknown(conda.group("version")) and conda.group("name") != "Could":
                name = _CONDA_NAMES.get(conda.group("name"), conda.group("name"))
                if name not in out.facts.get("packages", {}):  # [pip3] is exact, conda second
                    # A version that is not PEP 440 (`1.1.1w`) stays text: checks parse it.
                    out.package(name, conda.group("version"), line.number)
            continue
        if in_env:
            env = _ENV.match(text.strip())
            if env:
                out.section("env")[env.group("name")] = env.group("value")
                out.lines.append(line.number)
                continue
            in_env = False
        if (
            text.strip().strip("=").strip() in ENV_SECTION_HEADERS
            or text.strip() == "Environment Variables:"
        ):
            in_env = True
            continue
        kv = _KEY_VALUE.match(text)
        if kv:
            in_gpus = _key(out, kv.group("key").strip(), kv.group("value").strip(), line, where)
    return out if out.lines else None


def _gpu(out: Partial, index: str, name: str, line: Line) -> None:
    gpus = out.facts.setdefault("gpus", [])
    if all(g.get("index") != int(index) for g in gpus):
        gpus.append({"index": int(index), "name": name.strip()})
    out.lines.append(line.number)


def _key(out: Partial, key: str, value: str, line: Line, where: str) -> bool:
    """Read one `Key: value` line; True when GPU lines may follow on the next lines."""
    if key == "GPU models and configuration":
        out.lines.append(line.number)
        gpu = _GPU_LINE.match(value)
        if gpu:
            _gpu(out, gpu.group("index"), gpu.group("name"), line)
        return True
    if is_unknown(value):
        return False
    if key == "PyTorch version":
        version = version_or_error(value, "PyTorch version", where, line)
        out.facts.setdefault("torch", {})["version"] = version
        out.package("torch", version, line.number)
    elif key == "CUDA used to build PyTorch":
        cuda = None if value == "None" else version_or_error(value, key, where, line)
        out.facts.setdefault("torch", {})["cuda"] = cuda
    elif key == "Is CUDA available":
        if value in ("True", "Yes", "False", "No"):
            out.facts.setdefault("torch", {})["cuda_available"] = value in ("True", "Yes")
    elif key == "CUDA runtime version":
        nvcc = version_or_error(value, key, where, line)
        out.section("cuda_toolkit")["nvcc_version"] = short_cuda(nvcc)
    elif key == "Nvidia driver version":
        out.section("driver")["version"] = version_or_error(value, key, where, line)
    elif key == "OS":
        out.section("host").update(host_from_os(value))
    elif key == "Python platform":
        out.section("host").update(host_from_platform(value))
    elif key == "Python version":
        m = re.match(r"(\d+\.\d+(?:\.\d+)?)", value)
        if m:
            out.section("host").setdefault("python", {})["version"] = m.group(1)
    elif key == "vLLM Version":
        out.package("vllm", version_or_error(value, key, where, line), line.number)
    else:
        return False
    out.lines.append(line.number)
    return False
