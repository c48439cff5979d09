"""Installed distributions of interest, with the requirements they declare.

Reads `*.dist-info` / `*.egg-info` directories on sys.path directly (a directory
listing, then METADATA only for the few dists of interest): `importlib.metadata`
parsing every installed dist costs tens of milliseconds that `--fast` cannot spare.
The torch cache key needs only names, versions and mtimes, so requirements are parsed
(`packaging`) only by `probe_packages`, off the torch child's critical path. They are
stored with environment markers already evaluated on this machine
(so a saved snapshot means the same thing elsewhere) and extras-only ones dropped.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps

INTERESTING = (
    "torch",
    "torchvision",
    "torchaudio",
    "transformers",
    "trl",
    "accelerate",
    "datasets",
    "peft",
    "vllm",
    "flash-attn",
    "flash-attn-3",
    "xformers",
    "deepspeed",
    "megatron-core",
    "apex",
    "numpy",
    "opencv-python",
    "opencv-python-headless",
    "ray",
    "grpcio",
    "triton",
    "pytorch-triton",
    "hf-xet",
    "huggingface-hub",
    "tokenizers",
    "safetensors",
    "verifiers",
    "liger-kernel",
    "bitsandbytes",
    "shop-r1",
)
# Families listed whenever present: several NCCL wheels side by side is itself a finding.
PREFIXES = ("nvidia-nccl-",)
# Dists whose change must invalidate the cached torch facts.
TORCH_KEY_PREFIXES = ("torch", "nvidia-", "triton", "pytorch-triton")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wanted(name: str) -> bool:
    return name in INTERESTING or name.startswith(PREFIXES) or name.startswith(TORCH_KEY_PREFIXES)


def _applicable(requires: Iterable[str]) -> tuple[str, ...]:
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            out.append(text)
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        spec = f" @ {req.url}" if req.url else str(req.specifier)
        out.append(f"{req.name}{extras}{spec}")
    return tuple(out)


def _read_dist_info(path: str) -> tuple[str | None, list[str]] | None:
    """Version and Requires-Dist from METADATA's header, without `email` parsing the
    whole file (torch's METADATA carries its README)."""
    version: str | None = None
    requires: list[str] = []
    try:
        with open(os.path.join(path, "METADATA"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the body (long description) starts here
                key, _, value = line.partition(":")
                if key == "Version":
                    version = value.strip()
                elif key == "Requires-Dist":
                    requires.append(value.strip())
    except OSError:
        return None
    return version, requires


def scan_installed(paths: Iterable[str] | None = None) -> dict[str, DistRecord]:
    """First dist of each wanted name on the path wins, as for `import`."""
    found: dict[str, DistRecord] = {}
    for entry in paths if paths is not None else sys.path:
        try:
            listing = list(os.scandir(entry or "."))
        except OSError:
            continue
        for item in listing:
            if not item.name.endswith((".dist-info", ".egg-info")):
                continue
            name = normalize(item.name.split("-", 1)[0].rsplit(".", 1)[0])
            if name in found or not _wanted(name):
                continue
            meta_name = None
            if item.name.endswith(".dist-info") and (read := _read_dist_info(item.path)):
                version, requires = read
            else:  # egg-info: requires.txt with [extra] sections; let importlib read it
                from importlib.metadata import PathDistribution

                dist = PathDistribution(Path(item.path))
                version, requires = dist.version, dist.requires or []
                meta_name = dist.metadata["Name"]
            if not version:
                continue
            found[normalize(meta_name) if meta_name else name] = DistRecord(
                name=name,
                version=version,
                requires=tuple(requires),  # raw: markers are evaluated by probe_packages
                path=item.path,
                mtime=item.stat().st_mtime,
            )
    return found


def installed(deps: ProbeDeps) -> Mapping[str, DistRecord]:
    if deps.dists is not None:
        return deps.dists()
    return scan_installed([*deps.extra_path, *sys.path])


def probe_packages(deps: ProbeDeps) -> dict[str, Any]:
    dists = installed(deps)
    names = list(INTERESTING) + sorted(n for n in dists if n.startswith(PREFIXES))
    packages: dict[str, Any] = {}
    for name in names:
        rec = dists.get(name)
        packages[name] = (
            {"version": rec.version, "requires": list(_applicable(rec.requires))} if rec else None
        )
    return {"packages": packages}
