"""Read-only accessors over a snapshot dict, shared by checks and the trainer.

They encode the contract's three states once: a missing key is "unknown", an explicit
null is "absent", a value is "present". The typed sections (torch, gpus) say "unknown" with
NOT_PROBED; the older helpers still say it with None.
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Any

import msgspec
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from shop_r1_doctor.hardware import parse_cc
from shop_r1_doctor.runplan import RunPlan
from shop_r1_doctor.schema import decode_known

# "Not probed": the snapshot does not say (an older probe, a pasted dump, a child that
# died early). None is "looked, and it is absent" (torch.version.cuda of a CPU build).
# msgspec's UNSET is that value: a missing key decodes to it and is never written back.
NOT_PROBED = msgspec.UNSET
NotProbed = msgspec.UnsetType


class TorchFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The torch child's section (probes/torch_probe.py). A field the child did not
    record, or recorded with an odd value, is NOT_PROBED."""

    version: str | NotProbed | None = NOT_PROBED
    cuda: str | NotProbed | None = NOT_PROBED  # torch.version.cuda; None: a CPU/ROCm build
    hip: str | NotProbed | None = NOT_PROBED
    git_version: str | NotProbed | None = NOT_PROBED
    cxx11_abi: bool | NotProbed | None = NOT_PROBED
    arch_list: list[str] | NotProbed | None = NOT_PROBED
    nccl: str | NotProbed | None = NOT_PROBED
    error: str | NotProbed | None = NOT_PROBED
    cuda_available: bool | NotProbed | None = NOT_PROBED
    device_count: int | NotProbed | None = NOT_PROBED
    capabilities: list[str] | NotProbed | None = NOT_PROBED
    bf16_supported: bool | NotProbed | None = NOT_PROBED


class GpuProcess(msgspec.Struct, frozen=True, kw_only=True):
    """One compute process the GPU probe listed (NVML or `--query-compute-apps`)."""

    pid: int | NotProbed = NOT_PROBED
    name: str | NotProbed | None = NOT_PROBED
    used_bytes: int | NotProbed | None = NOT_PROBED  # None: the driver hides it


class GpuFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU of the `gpus` section (probes/gpu.py, ingest/*), or one torch saw
    (`source: "torch"`). A field the probe did not record, or recorded with an odd value,
    is NOT_PROBED: NVML refuses fields per GPU (MIG, vGPU, containers)."""

    index: int | NotProbed = NOT_PROBED
    name: str | NotProbed | None = NOT_PROBED
    compute_capability: str | NotProbed | None = NOT_PROBED  # "9.0"
    compute_capability_source: str | NotProbed = NOT_PROBED  # "name-table": from the name
    memory_total_bytes: int | NotProbed | None = NOT_PROBED
    memory_used_bytes: int | NotProbed | None = NOT_PROBED
    # NOT_PROBED: the probe could not list them; () : it looked and found none
    processes: tuple[GpuProcess, ...] | NotProbed = NOT_PROBED
    source: str | NotProbed = NOT_PROBED  # "torch": from torch's device list only


class PackageFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One installed distribution (probes/packages.py, ingest/pip_list.py); a dump that
    lists names and versions only leaves `requires` NOT_PROBED."""

    version: str | NotProbed = NOT_PROBED
    # environment markers already evaluated on the probed machine
    requires: tuple[str, ...] | NotProbed = NOT_PROBED


def _package(value: dict[Any, Any]) -> PackageFacts:
    # Requirements decode one by one: one odd entry leaves the others known.
    reqs = value.get("requires")
    record = decode_known({k: v for k, v in value.items() if k != "requires"}, PackageFacts)
    if not isinstance(reqs, list):
        return record
    return msgspec.structs.replace(record, requires=tuple(r for r in reqs if isinstance(r, str)))


def shown(value: object, missing: str = "?") -> str:
    """A fact for a message: `missing` when it was not probed (an explicit null shows as
    None, as the raw dict's `.get(key, "?")` showed it)."""
    return missing if value is NOT_PROBED else str(value)


def _gpu(value: dict[Any, Any]) -> GpuFacts:
    # Processes decode one by one: one odd entry leaves the others known.
    procs = value.get("processes")
    if not isinstance(procs, list):
        return decode_known(value, GpuFacts)
    gpu = decode_known({k: v for k, v in value.items() if k != "processes"}, GpuFacts)
    known = tuple(decode_known(p, GpuProcess) for p in procs if isinstance(p, dict))
    return msgspec.structs.replace(gpu, processes=known)


_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]|^\\\\")


def parse_version(text: Any) -> Version | None:
    """`"2.11.0+cu130"` -> Version('2.11.0+cu130'); junk -> None (never raises)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def cc_tuple(cc: Any) -> tuple[int, int] | None:
    """Compute capability `"9.0"` -> (9, 0) (the one parser: `hardware.parse_cc`)."""
    return parse_cc(cc)


class Facts:
    """A snapshot seen through the contract's rules. Never raises on odd input."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.raw = snapshot

    def section(self, name: str) -> dict[str, Any]:
        value = self.raw.get(name)
        return value if isinstance(value, dict) else {}

    def known(self, name: str) -> bool:
        return name in self.raw

    @property
    def from_dump(self) -> bool:
        """Facts parsed from a pasted dump (`doctor --from`): each section may be partial."""
        source = self.raw.get("source")
        return isinstance(source, dict) and source.get("kind") == "dump"

    @property
    def host(self) -> dict[str, Any]:
        return self.section("host")

    @property
    def driver(self) -> dict[str, Any]:
        return self.section("driver")

    @functools.cached_property
    def listed_gpus(self) -> list[GpuFacts] | NotProbed | None:
        """The `gpus` section as recorded: NOT_PROBED when the snapshot has none (no GPU
        probe ran, a dump that does not say), None when it says null, else the records."""
        value = self.raw.get("gpus", NOT_PROBED)
        if value is None or value is NOT_PROBED:
            return value
        if not isinstance(value, list):
            return NOT_PROBED
        return [_gpu(g) for g in value if isinstance(g, dict)]

    @functools.cached_property
    def gpus(self) -> list[GpuFacts]:
        """NVML's (else nvidia-smi's) GPUs; when both listed none, the devices torch saw."""
        return self.listed_gpus or self.torch_gpus()

    def torch_gpus(self) -> list[GpuFacts]:
        """GPUs from torch's own device list (`source: torch`): a container without NVML,
        or an nvidia-smi that failed, still leaves the capabilities torch initialised."""
        t = self.torch
        caps = t.capabilities if t else None
        return [
            GpuFacts(index=i, compute_capability=cc, source="torch")
            for i, cc in enumerate(caps or [])
        ]

    @functools.cached_property
    def torch(self) -> TorchFacts | NotProbed | None:
        """The torch child's facts; None: torch is not installed; NOT_PROBED: the snapshot
        does not say (both are falsy, for checks that need the facts either way)."""
        value = self.raw.get("torch", NOT_PROBED)
        if value is None or value is NOT_PROBED:
            return value
        return decode_known(value, TorchFacts) if isinstance(value, dict) else NOT_PROBED

    @functools.cached_property
    def plan(self) -> RunPlan:
        """The plan section as a RunPlan (every field None when there is none; a field
        of a hand-built section that does not decode is unknown)."""
        return decode_known(self.section("plan"), RunPlan)

    @property
    def has_plan(self) -> bool:
        """The snapshot carries a plan (a run that is about to happen), even a partial one."""
        return bool(self.section("plan"))

    @property
    def env(self) -> dict[str, Any]:
        return self.section("env")

    def env_value(self, name: str) -> str | None:
        value = self.env.get(name)
        return value if isinstance(value, str) else None

    @functools.cached_property
    def packages(self) -> dict[str, PackageFacts | None]:
        """Installed dists by canonical name; None: looked, not installed; a name that is
        not a key: not probed. Built once: checks look packages up hundreds of times."""
        out: dict[str, PackageFacts | None] = {}
        for name, value in self.section("packages").items():
            if isinstance(name, str) and (value is None or isinstance(value, dict)):
                out[canonicalize_name(name)] = _package(value) if value is not None else None
        return out

    def package(self, name: str) -> PackageFacts | None:
        """The dist's record; None when it is not installed or not probed."""
        return self.packages.get(canonicalize_name(name))

    def installed(self, name: str) -> bool | None:
        """True/False when the packages section says so; None when unknown."""
        key = canonicalize_name(name)
        return None if key not in self.packages else self.packages[key] is not None

    def version(self, name: str) -> Version | None:
        pkg = self.package(name)
        return parse_version(pkg.version) if pkg else None

    def requires(self, name: str) -> list[str]:
        pkg = self.package(name)
        return list(pkg.requires) if pkg and pkg.requires else []

    def import_ok(self, module: str) -> bool | None:
        value = self.section("imports").get(module)
        if not isinstance(value, dict):
            return None
        ok = value.get("ok")
        return ok if isinstance(ok, bool) else None

    def import_error(self, module: str) -> str:
        value = self.section("imports").get(module)
        err = value.get("error") if isinstance(value, dict) else None
        return err if isinstance(err, str) else ""

    def ccs(self) -> list[tuple[int, int]]:
        out = []
        for gpu in self.gpus:
            cc = cc_tuple(gpu.compute_capability)
            if cc:
                out.append(cc)
        return out

    def probed_path(self, path: str) -> str:
        """A plan's path in the probes' spelling: the host probe keys disk facts by absolute,
        home-redacted paths, so a relative plan path is joined to the probed (redacted) cwd."""
        if not path or path.startswith(("/", "~")) or _WINDOWS_ABS.match(path):
            return path
        paths = self.host.get("paths")
        cwd = paths.get("cwd") if isinstance(paths, dict) else None
        if not isinstance(cwd, str) or not cwd:
            return path
        return posixpath.normpath(posixpath.join(cwd, path))

    @property
    def os(self) -> str | None:
        value = self.host.get("os")
        return value if isinstance(value, str) else None

    @property
    def wsl(self) -> int | None:
        value = self.host.get("wsl")
        return value if isinstance(value, int) else None

    @property
    def container(self) -> str | None:
        value = self.host.get("container")
        return value if isinstance(value, str) else None
