"""The `- Key: value` reports of `trl env`, `transformers env` (`transformers-cli env`),
`accelerate env`, `llamafactory-cli env` and `peft`/`datasets` alike.

Which key names which distribution is data (`_PACKAGE_KEYS`). These tools print
"not installed" for a distribution they looked for and did not find: that is recorded
as absent. `PyTorch version (GPU?): 2.5.0+cu124 (True)` carries torch.cuda.is_available().
"""

from __future__ import annotations

import re
from typing import Any

from shop_r1_doctor.ingest._common import (
    NOT_INSTALLED,
    Line,
    Partial,
    is_unknown,
    version_or_error,
)
from shop_r1_doctor.ingest.platform_text import host_from_platform

# `- Key: value`; the bullets are sometimes lost on copy, so they are optional, and a
# report is recognised by its package keys (below), not by its bullets.
_LINE = re.compile(r"^\s*(?:[-*]\s+)?(?P<key>[^:]{2,60}?)\s*:\s*(?P<value>.*)$")
# Key (lower-case, backticks removed) -> distribution name.
_PACKAGE_KEYS = {
    "transformers version": "transformers",
    "accelerate version": "accelerate",
    "llamafactory version": "llamafactory",
    "trl version": "trl",
    "datasets version": "datasets",
    "hf hub version": "huggingface-hub",
    "huggingface_hub version": "huggingface-hub",
    "huggingface hub version": "huggingface-hub",
    "safetensors version": "safetensors",
    "tokenizers version": "tokenizers",
    "peft version": "peft",
    "deepspeed version": "deepspeed",
    "bitsandbytes version": "bitsandbytes",
    "liger-kernel version": "liger-kernel",
    "llm-blender version": "llm-blender",
    "openai version": "openai",
    "diffusers version": "diffusers",
    "vllm version": "vllm",
    "numpy version": "numpy",
    "flash-attn version": "flash-attn",
    "flash attention version": "flash-attn",
    "tensorflow version (gpu?)": "tensorflow",
    "flax version (cpu?/gpu?/tpu?)": "flax",
    "jax version": "jax",
    "jaxlib version": "jaxlib",
    "mergekit version": "mergekit",
    "wandb version": "wandb",
    "sglang version": "sglang",
    "kernels version": "kernels",
    "lerobot version": "lerobot",
}
_TORCH_KEYS = (
    "pytorch version (gpu?)",
    "pytorch version (accelerator?)",
    "pytorch version",
    "torch version",
)
_GPU_KEYS = ("gpu type", "gpu model", "cuda device", "cuda device(s)", "gpu", "gpus")
# vLLM's collect-env also prints `vLLM Version:`; that alone is collect_env's, not a report.
_REPORT_KEYS = frozenset(_PACKAGE_KEYS) - {"vllm version"}


def parse(lines: list[Line], where: str) -> Partial | None:
    out = Partial("hf_env")
    for line in lines:
        m = _LINE.match(line.text)
        if not m:
            continue
        key = m.group("key").replace("`", "").strip().lower()
        value = m.group("value").strip()
        if key in _PACKAGE_KEYS:
            _package(out, _PACKAGE_KEYS[key], value, line, where)
        elif key in _TORCH_KEYS:
            _torch(out, value, line, where)
        elif key in _GPU_KEYS:
            _gpus(out, value, line)
        elif key == "is pytorch built with cuda support?" and value in ("True", "False"):
            if value == "False":  # lerobot-info: torch.version.cuda is None
                out.facts.setdefault("torch", {})["cuda"] = None
            out.lines.append(line.number)
        elif key == "gpu number" and value.isdigit():
            out.facts["_gpu_count"] = int(value)
            out.lines.append(line.number)
        elif key == "platform" and not is_unknown(value):
            host = host_from_platform(value)
            if host:
                out.section("host").update(host)
                out.lines.append(line.number)
        elif key == "python version" and (py := re.match(r"\d+\.\d+(?:\.\d+)?", value)):
            out.section("host").setdefault("python", {})["version"] = py.group(0)
            out.lines.append(line.number)
    # A report names its tool's packages: `Platform:` and `Python version:` lines alone
    # (collect_env has them too) or one stray line in prose are not one.
    if not _report_keys(lines) & _REPORT_KEYS or len(set(out.lines)) < 2:
        return None
    _finish_gpus(out)
    return out


def _report_keys(lines: list[Line]) -> set[str]:
    out = set()
    for line in lines:
        m = _LINE.match(line.text)
        if m:
            out.add(m.group("key").replace("`", "").strip().lower())
    return out


def _first_word(value: str) -> str:
    return value.split()[0] if value.split() else ""


def _package(out: Partial, name: str, value: str, line: Line, where: str) -> None:
    lowered = value.lower()
    if any(lowered.startswith(n) for n in NOT_INSTALLED):
        out.absent(name, line.number)
    elif not is_unknown(value):
        out.package(
            name, version_or_error(_first_word(value), f"{name} version", where, line), line.number
        )


def _torch(out: Partial, value: str, line: Line, where: str) -> None:
    if any(value.lower().startswith(n) for n in NOT_INSTALLED):
        out.absent("torch", line.number)
        out.facts["torch"] = None
        return
    m = re.match(r"^(?P<version>\S+)(?:\s*\((?P<gpu>[^)]*)\))?", value)
    if not m or is_unknown(m.group("version")):
        return
    version = version_or_error(m.group("version"), "PyTorch version", where, line)
    torch: dict[str, Any] = out.facts.setdefault("torch", {})
    torch["version"] = version
    out.package("torch", version, line.number)
    gpu = (m.group("gpu") or "").strip().lower()
    if gpu in ("true", "cuda", "gpu"):
        torch["cuda_available"] = True
    elif gpu == "false":
        torch["cuda_available"] = False


def _gpus(out: Partial, value: str, line: Line) -> None:
    if is_unknown(value):
        return
    if value.lower() in ("not available", "none"):
        torch = out.facts.setdefault("torch", {})
        if isinstance(torch, dict):
            torch["cuda_available"] = False
        out.lines.append(line.number)
        return
    # `trl env` joins every visible device's name with ", "; the others give one type.
    names = [n.strip() for n in value.split(",") if n.strip()]
    out.facts["_gpu_names"] = names
    out.lines.append(line.number)


def _finish_gpus(out: Partial) -> None:
    """GPUs named without indices: torch's ordinals are not nvidia-smi's indices."""
    names = out.facts.pop("_gpu_names", None)
    count = out.facts.pop("_gpu_count", None)
    if not names:
        return
    if len(names) == 1 and isinstance(count, int) and count > 1:
        names = names * count
    out.facts["gpus"] = [{"name": n} for n in names]
