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
# Some pastes carry a full-width colon (`GPU 0： Tesla P100`): the user's input method.
_GPU_LINE = re.compile(r"^\s*GPU (?P<index>\d+)\s*[:：] ?(?P<name>.+?)(?: \(UUID: [^)]*\))?\s*$")
# Old collect_env printed `PyTorch version 1.5.0` without a colon on some setups.
_BARE_TORCH = re.compile(r"^PyTorch version (?P<value>\d\S*)$")
_PIP = re.compile(r"^\[(?:pip3?|uv)\] (?P<name>[A-Za-z0-9._-]+)\s*==\s*(?P<version>\S+)")
_CONDA = re.compile(r"^\[conda\] (?P<name>[A-Za-z0-9._-]+)\s+(?P<version>\S+)(?:\s+(?P<rest>.*))?$")
_ENV = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")
# torch's CUDA-init warning, often the first line of a collect_env paste, names the newest
# CUDA the driver supports as an integer (11040 = 11.4): a driver fact even when the
# `Nvidia driver version` line is cut off.
_DRIVER_TOO_OLD = re.compile(
    r"NVIDIA driver on your system is too old \(found version (?P<cuda>\d{4,6})\)"
)
# A conda package name that is another pip distribution's name.
_CONDA_NAMES = {"pytorch": "torch"}
# Keys only collect_env prints (`PyTorch version:` alone is also the `- Key: value` reports').
_SIGNATURE = frozenset({"Is debug build", "CUDA used to build PyTorch", "vLLM Version"})
# vLLM's `Environment Variables` block (`Environment Variables:` or a `===` banner). It
# lists only names with some prefixes: a name missing from it is unknown, not unset, which
# the checks know from the snapshot's `source` (see `checks._base.env_set`).
_ENV_HEADER = re.compile(r"^=*\s*Environment Variables:?\s*=*$")


def parse(lines: list[Line], where: str) -> Partial | None:
    texts = [ln.text.strip() for ln in lines]
    keys = {m.group("key").strip() for m in map(_KEY_VALUE.match, texts) if m}
    listed = any(_PIP.match(t) for t in texts)  # only the `[pip3]` tail was pasted
    if not keys & _SIGNATURE and not listed:
        return None
    out = Partial("collect_env")
    in_gpus = in_env = False
    for line in lines:
        text = line.text.strip()  # some pastes indent the whole dump
        too_old = _DRIVER_TOO_OLD.search(text)
        if too_old:
            _driver_cuda(out, int(too_old.group("cuda")), line)
            continue
        if not text:
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
            # `[conda] Could not collect` is no package called "Could".
            if not is_unknown(conda.group("version")) and conda.group("name") != "Could":
                name = _CONDA_NAMES.get(conda.group("name"), conda.group("name"))
                if name not in out.facts.get("packages", {}):  # [pip3] is exact, conda second
                    # A version that is not PEP 440 (`1.1.1w`) stays text: checks parse it.
                    out.package(name, conda.group("version"), line.number)
            continue
        if in_env:
            env = _ENV.match(text)
            if env:
                out.section("env")[env.group("name")] = env.group("value")
                out.lines.append(line.number)
                continue
            in_env = False
        if _ENV_HEADER.match(text):
            in_env = True
            continue
        bare = _BARE_TORCH.match(text)
        kv = _KEY_VALUE.match(text) if not bare else None
        if bare:
            _key(out, "PyTorch version", bare.group("value"), line, where)
        elif kv:
            in_gpus = _key(out, kv.group("key").strip(), kv.group("value").strip(), line, where)
    _cpu_build(out)
    return out if out.lines else None


def _driver_cuda(out: Partial, value: int, line: Line) -> None:
    out.section("driver").setdefault("cuda_version", f"{value // 1000}.{value % 1000 // 10}")
    out.lines.append(line.number)


def _cpu_build(out: Partial) -> None:
    """collect_env prints torch.version.cuda None as `Could not collect` (old ones: `None`).

    With torch installed and no ROCm build, that is a CPU-only wheel; the raw value is kept
    under `_cuda_text` while lines are read and decided here, once ROCm's line is known.
    A ROCm build records its HIP version (torch.version.hip, as the probe does) and leaves
    `cuda` unknown: a ROCm torch whose version has no `+rocm` tag (`2.4.0a0+git...`, built
    from source) would otherwise read as a CPU-only build.
    """
    torch = out.facts.get("torch")
    if not isinstance(torch, dict):
        return
    text = torch.pop("_cuda_text", None)
    rocm = torch.pop("_rocm", None)
    if rocm:
        torch["hip"] = rocm
    elif text is not None and "cuda" not in torch and torch.get("version"):
        torch["cuda"] = None


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
    key = "OS" if key == "Os" else key  # collect_env of 2019 wrote `Os:`
    if key == "CUDA used to build PyTorch" and (is_unknown(value) or value == "None"):
        out.facts.setdefault("torch", {})["_cuda_text"] = value
        out.lines.append(line.number)
        return False
    if key == "ROCM used to build PyTorch" and not (is_unknown(value) or value == "None"):
        out.facts.setdefault("torch", {})["_rocm"] = value
        out.lines.append(line.number)
        return False
    if is_unknown(value):
        return False
    if key == "PyTorch version":
        version = version_or_error(value, "PyTorch version", where, line)
        out.facts.setdefault("torch", {})["version"] = version
        out.package("torch", version, line.number)
    elif key == "CUDA used to build PyTorch":
        out.facts.setdefault("torch", {})["cuda"] = version_or_error(value, key, where, line)
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
