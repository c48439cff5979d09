"""`shop-r1 doctor --from FILE`: a pasted environment dump -> a partial snapshot.

Each module reads one kind of dump and is a pure function of text (`parse(lines, where)`
-> `Partial | None`). They all read the whole paste, so dumps may come several together,
in markdown fences, between prose. Their facts are merged, the more exact source first:
nvidia-smi for the driver and GPUs, collect_env for torch, the `- Key: value` reports,
`nvcc --version` for the toolkit, then package listings, then what the reporter wrote by
hand (issue-template answers, `Torch: 2.0.1+cu117`, `my GPU is a 5070ti`). What no dump says is left out of the snapshot ("unknown" in the
snapshot contract), so a check whose facts are unknown does not fire.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from shop_r1_doctor import __version__
from shop_r1_doctor.hardware import gpu_info
from shop_r1_doctor.ingest import collect_env, hf_env, nvcc, nvidia_smi, pip_list, prose
from shop_r1_doctor.ingest._common import DumpError, Line, Partial, better_package, clean_lines
from shop_r1_doctor.redact import redact_env, redact_home
from shop_r1_doctor.snapshot import SNAPSHOT_SCHEMA

__all__ = ["PARSERS", "DumpError", "parse_dump", "read_dump", "snapshot_from_dump"]

Parser = Callable[[list[Line], str], Partial | None]
# Merge order: the first source that states a fact wins it.
PARSERS: tuple[tuple[str, Parser], ...] = (
    ("nvidia_smi", nvidia_smi.parse),
    ("collect_env", collect_env.parse),
    ("hf_env", hf_env.parse),
    ("nvcc", nvcc.parse),
    ("pip_list", pip_list.parse),
)
SOURCES = (
    "python -m torch.utils.collect_env, vllm collect-env, trl env, transformers env, "
    "accelerate env, llamafactory-cli env, nvidia-smi (-q, -L), nvcc --version, pip list/freeze, "
    "conda list, "
    "or an issue's System Info (`Torch: 2.5.1+cu124`, `### Pytorch version`, `GPU: RTX 4090`)"
)
SECTION_ORDER = ("host", "driver", "gpus", "cuda_toolkit", "packages", "torch", "env")


def read_dump(path: str) -> tuple[str, str]:
    """(text, name for messages) of FILE, or of stdin for `-`."""
    if path == "-":
        import sys

        return sys.stdin.read(), "<stdin>"
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DumpError(f"{p}: no such file") from None
    except OSError as exc:
        raise DumpError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data[:8192]:
        raise DumpError(f"{p}: not text (a binary file); paste the command's output as text")
    try:
        return data.decode("utf-8-sig"), str(p)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DumpError(f"{p}:{line}: not UTF-8 text ({exc.reason})") from None


def parse_dump(text: str, where: str = "<dump>") -> list[Partial]:
    """Every parser's partial facts, in merge order; a DumpError when none recognises it."""
    lines = clean_lines(text)
    parts = [part for _, parse in PARSERS if (part := parse(lines, where)) is not None]
    # What the reporter wrote by hand, on the lines no tool's output claimed
    read = {n for part in parts for n in part.lines}
    by_hand = prose.parse([ln for ln in lines if ln.number not in read], where)
    if by_hand is not None:
        parts.append(by_hand)
    if not parts:
        raise DumpError(
            f"{where}: no environment dump recognised; expected the output of {SOURCES}"
        )
    return parts


def snapshot_from_dump(text: str, where: str = "<dump>") -> dict[str, Any]:
    """A partial `shop-r1.snapshot/1` from pasted text."""
    parts = parse_dump(text, where)
    merged: dict[str, Any] = {}
    for part in parts:
        _merge(merged, part.facts)
    for gpu in merged.get("gpus") or []:
        info = gpu_info(gpu.get("name") or "")
        cc = f"{info.cc[0]}.{info.cc[1]}" if info else None
        if cc and "compute_capability" not in gpu:
            gpu["compute_capability"] = cc
    snapshot: dict[str, Any] = {
        "schema": SNAPSHOT_SCHEMA,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tool_version": __version__,
        "source": {
            "kind": "dump",
            "file": redact_home(where),
            "parts": [{"parser": p.parser, "lines": [min(p.lines), max(p.lines)]} for p in parts],
        },
    }
    if isinstance(merged.get("env"), dict):
        merged["env"] = redact_env(merged["env"])  # the snapshot contract: no secrets
    for key in SECTION_ORDER:
        if key in merged:
            snapshot[key] = merged[key]
    return snapshot


def _merge(into: dict[str, Any], facts: dict[str, Any]) -> None:
    for key, value in facts.items():
        if key == "gpus":
            if not into.get("gpus") and value:
                into["gpus"] = [dict(g) for g in value]
        elif key == "packages":
            packages = into.setdefault("packages", {})
            for name, record in value.items():
                packages[name] = better_package(packages.get(name, ...), record)
        elif key == "torch" and value is None:
            into.setdefault("torch", None)
        elif isinstance(value, dict):
            section = into.get(key)
            if not isinstance(section, dict):
                section = into[key] = {}
            for field, item in value.items():
                if isinstance(item, dict) and isinstance(section.get(field), dict):
                    section[field] = {**item, **section[field]}
                else:
                    section.setdefault(field, item)
        else:
            into.setdefault(key, value)
