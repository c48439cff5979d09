"""Read-only accessors over a snapshot dict, shared by checks, renderers and the trainer.

They encode the contract's three states once: a missing key is "unknown", an explicit
null is "absent", a value is "present". Every section is decoded once, on first read,
into its typed record (here and in `sections`); "unknown" is NOT_PROBED, never a
missing key. The raw dict stays only for writing the snapshot back out (`--json`).
"""

from __future__ import annotations

import functools
import posixpath
import re
from typing import Any, TypeVar

import msgspec
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from shop_r1_doctor.hardware import parse_cc
from shop_r1_doctor.runplan import RunPlan
from shop_r1_doctor.schema import decode_known
from shop_r1_doctor.sections import (
    NOT_PROBED,
    DockerFacts,
    DriverFacts,
    GpuPair,
    HostFacts,
    ImportFacts,
    LimitsFacts,
    NotProbed,
    ProbeRecord,
    RayFacts,
    SourceFacts,
    ToolkitFacts,
    lenient,
)

__all__ = ["NOT_PROBED", "Facts", "GpuFacts", "NotProbed", "PackageFacts", "TorchFacts", "shown"]


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


R = TypeVar("R", bound=msgspec.Struct)

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


def _record(value: Any, type_: type[R]) -> R | NotProbed | None:
    """A section as recorded: NOT_PROBED when absent or not an object, None when null."""
    if value is None or value is NOT_PROBED:
        return value
    return lenient(value, type_) if isinstance(value, dict) else NOT_PROBED


class Facts:
    """A snapshot seen through the contract's rules. Never raises on odd input."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.raw = snapshot  # what `--json` writes back; checks read the typed sections

    def known(self, name: str) -> bool:
        """The snapshot carries the section at all (even null or partial)."""
        return name in self.raw

    def known_as_object(self, name: str) -> bool:
        """The snapshot carries the section as an object (even an empty one)."""
        return isinstance(self.raw.get(name), dict)

    @functools.cached_property
    def source(self) -> SourceFacts:
        """Where the facts came from; `kind: dump` for a pasted dump."""
        value = self.raw.get("source")
        return lenient(value, SourceFacts) if isinstance(value, dict) else SourceFacts()

    @property
    def from_dump(self) -> bool:
        """Facts parsed from a pasted dump (`doctor --from`): each section may be partial."""
        return self.source.kind == "dump"

    @functools.cached_property
    def host(self) -> HostFacts:
        """The host section; every field NOT_PROBED when the snapshot has none."""
        value = self.raw.get("host")
        return lenient(value, HostFacts) if isinstance(value, dict) else HostFacts()

    @functools.cached_property
    def listed_driver(self) -> DriverFacts | NotProbed | None:
        """The driver section as recorded: None when it says null (no nvidia-smi at all)."""
        return _record(self.raw.get("driver", NOT_PROBED), DriverFacts)

    @property
    def driver(self) -> DriverFacts:
        """The driver's facts; every field NOT_PROBED when the section is missing or null."""
        return self.listed_driver or DriverFacts()

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
    def topology(self) -> list[GpuPair]:
        """The GPU pairs of the `topology` section (several GPUs only)."""
        value = self.raw.get("topology")
        pairs = value.get("pairs") if isinstance(value, dict) else None
        return [lenient(p, GpuPair) for p in pairs or [] if isinstance(p, dict)]

    @functools.cached_property
    def torch(self) -> TorchFacts | NotProbed | None:
        """The torch child's facts; None: torch is not installed; NOT_PROBED: the snapshot
        does not say (both are falsy, for checks that need the facts either way)."""
        value = self.raw.get("torch", NOT_PROBED)
        if value is None or value is NOT_PROBED:
            return value
        return decode_known(value, TorchFacts) if isinstance(value, dict) else NOT_PROBED

    @functools.cached_property
    def cuda_toolkit(self) -> ToolkitFacts:
        """CUDA_HOME and nvcc; every field NOT_PROBED when the snapshot has no section."""
        value = self.raw.get("cuda_toolkit")
        return lenient(value, ToolkitFacts) if isinstance(value, dict) else ToolkitFacts()

    @functools.cached_property
    def limits(self) -> LimitsFacts:
        """Resource limits, cgroup pids/memory limits, cache dirs and network interfaces
        (probes/limits.py); every field NOT_PROBED when the snapshot has no section."""
        value = self.raw.get("limits")
        return lenient(value, LimitsFacts) if isinstance(value, dict) else LimitsFacts()

    @functools.cached_property
    def ray(self) -> RayFacts | NotProbed | None:
        """The Ray probe's section; None: Ray is not installed; NOT_PROBED: not said."""
        return _record(self.raw.get("ray", NOT_PROBED), RayFacts)

    @functools.cached_property
    def docker(self) -> DockerFacts | NotProbed | None:
        """The Docker probe's section; None: no engine (no socket, no DOCKER_HOST)."""
        return _record(self.raw.get("docker", NOT_PROBED), DockerFacts)

    @functools.cached_property
    def probes(self) -> dict[str, ProbeRecord]:
        """How each probe went, by probe name (`imports.<group>` for the import children)."""
        value = self.raw.get("probes")
        return {
            name: lenient(rec, ProbeRecord)
            for name, rec in (value.items() if isinstance(value, dict) else ())
            if isinstance(name, str) and isinstance(rec, dict)
        }

    @property
    def probes_seconds(self) -> float | None:
        value = self.raw.get("probes_seconds")
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def created(self) -> str | None:
        value = self.raw.get("created")
        return value if isinstance(value, str) else None

    @property
    def tool_version(self) -> str | None:
        value = self.raw.get("tool_version")
        return value if isinstance(value, str) else None

    @functools.cached_property
    def plan(self) -> RunPlan:
        """The plan section as a RunPlan (every field None when there is none; a field
        of a hand-built section that does not decode is unknown)."""
        value = self.raw.get("plan")
        return decode_known(value if isinstance(value, dict) else {}, RunPlan)

    @property
    def has_plan(self) -> bool:
        """The snapshot carries a plan (a run that is about to happen), even a partial one."""
        value = self.raw.get("plan")
        return isinstance(value, dict) and bool(value)

    @functools.cached_property
    def plan_fields(self) -> tuple[str, ...]:
        """The plan fields the snapshot names, in its order (the `-v` listing)."""
        value = self.raw.get("plan")
        names = {f.name for f in msgspec.structs.fields(RunPlan)}
        return tuple(k for k in value if k in names) if isinstance(value, dict) else ()

    @functools.cached_property
    def env(self) -> dict[str, str] | NotProbed:
        """The environment variables the env probe kept (probes/env.py: an allowlist,
        redacted); NOT_PROBED when the snapshot has no env section, {} when it says null."""
        value = self.raw.get("env", NOT_PROBED)
        if value is NOT_PROBED or value is None:
            return NOT_PROBED if value is NOT_PROBED else {}
        if not isinstance(value, dict):
            return {}
        return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}

    def env_value(self, name: str) -> str | None:
        """The variable's value; None when it is unset or the snapshot does not say."""
        env = self.env
        return env.get(name) if env is not NOT_PROBED else None

    @functools.cached_property
    def packages(self) -> dict[str, PackageFacts | None]:
        """Installed dists by canonical name; None: looked, not installed; a name that is
        not a key: not probed. Built once: checks look packages up hundreds of times."""
        out: dict[str, PackageFacts | None] = {}
        value = self.raw.get("packages")
        for name, rec in value.items() if isinstance(value, dict) else ():
            if isinstance(name, str) and (rec is None or isinstance(rec, dict)):
                out[canonicalize_name(name)] = _package(rec) if rec is not None else None
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

    @functools.cached_property
    def imports(self) -> dict[str, ImportFacts | None]:
        """The import children's answers by module name; None: the package is not
        installed; a module that is not a key: not probed (--fast, no such group)."""
        value = self.raw.get("imports")
        return {
            module: lenient(rec, ImportFacts) if rec is not None else None
            for module, rec in (value.items() if isinstance(value, dict) else ())
            if isinstance(module, str) and (rec is None or isinstance(rec, dict))
        }

    def import_ok(self, module: str) -> bool | None:
        """True/False when the module was imported; None when that is not known (or the
        package is not installed)."""
        rec = self.imports.get(module)
        return rec.ok if rec is not None and isinstance(rec.ok, bool) else None

    def import_error(self, module: str) -> str:
        rec = self.imports.get(module)
        return rec.error if rec is not None and isinstance(rec.error, str) else ""

    def import_version(self, module: str) -> str | None:
        """The `__version__` the import child read; None when not recorded."""
        rec = self.imports.get(module)
        return rec.version if rec is not None and isinstance(rec.version, str) else None

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
        paths = self.host.paths
        cwd = paths.cwd if paths else NOT_PROBED
        if not isinstance(cwd, str) or not cwd:
            return path
        return posixpath.normpath(posixpath.join(cwd, path))

    def disk_free(self, path: str) -> int | None:
        """Free bytes the host probe recorded at `path` (its spelling); None: not recorded."""
        table = self.host.disk_free_bytes
        return table.get(path) if table else None

    @property
    def os(self) -> str | None:
        value = self.host.os
        return value if isinstance(value, str) else None

    @property
    def wsl(self) -> int | None:
        value = self.host.wsl
        return value if isinstance(value, int) else None

    @property
    def container(self) -> str | None:
        value = self.host.container
        return value if isinstance(value, str) else None
