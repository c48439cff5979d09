"""The snapshot's sections as typed records, each declared once (`facts.Facts` reads them).

Probes write plain JSON; these Structs say what each section holds. A field the snapshot
does not carry, or carries with a value of the wrong type (an older probe, a pasted
dump, a hand-edited file), is NOT_PROBED, a value distinct from None ("looked, and it is
absent"). `lenient` decodes a section field by field, so one odd value leaves the
others known and a check never crashes on a snapshot.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

import msgspec

# "Not probed": the snapshot does not say (an older probe, a pasted dump, a child that
# died early). None is "looked, and it is absent" (torch.version.cuda of a CPU build).
# msgspec's UNSET is that value: a missing key decodes to it and is never written back.
NOT_PROBED = msgspec.UNSET
NotProbed = msgspec.UnsetType

S = TypeVar("S", bound=msgspec.Struct)


class PythonFacts(msgspec.Struct, frozen=True, kw_only=True):
    """`host.python`: the interpreter the doctor ran in (a dump may name the version only)."""

    version: str | NotProbed | None = NOT_PROBED
    executable: str | NotProbed | None = NOT_PROBED
    which_python: str | NotProbed | None = NOT_PROBED  # `python` on PATH
    venv: str | NotProbed | None = NOT_PROBED
    env_manager: str | NotProbed | None = NOT_PROBED  # venv / uv / conda


class PathsFacts(msgspec.Struct, frozen=True, kw_only=True):
    """`host.paths`: the directories the run writes to, home-redacted."""

    cwd: str | NotProbed = NOT_PROBED
    temp: str | NotProbed = NOT_PROBED
    hf_cache: str | NotProbed = NOT_PROBED
    output: str | NotProbed = NOT_PROBED  # only when the plan names an output_dir


class InfinibandFacts(msgspec.Struct, frozen=True, kw_only=True):
    """`host.infiniband` (probes/fabric.py): HCAs the kernel lists, and what a process here
    can use of them."""

    sys_devices: tuple[str, ...] | NotProbed = NOT_PROBED
    dev_present: bool | NotProbed = NOT_PROBED  # /dev/infiniband/uverbs*
    memlock_bytes: int | NotProbed | None = NOT_PROBED  # -1: unlimited


class HostFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `host` section (probes/host.py, ingest/*): OS, CPUs, memory, /dev/shm, disks,
    container, interpreter."""

    os: str | NotProbed | None = NOT_PROBED  # "linux" / "windows" / "darwin"
    os_release: str | NotProbed | None = NOT_PROBED
    kernel: str | NotProbed | None = NOT_PROBED
    arch: str | NotProbed | None = NOT_PROBED
    libc: str | NotProbed | None = NOT_PROBED
    wsl: int | NotProbed | None = NOT_PROBED  # 1 / 2; None: not WSL
    container: str | NotProbed | None = NOT_PROBED  # docker / kubernetes / ...; None: none
    virtualization: str | NotProbed | None = NOT_PROBED
    image_built_by: str | NotProbed | None = NOT_PROBED
    cpu_count: int | NotProbed | None = NOT_PROBED
    cpu_usable: int | NotProbed | None = NOT_PROBED
    ram_bytes: int | NotProbed | None = NOT_PROBED
    ram_available_bytes: int | NotProbed | None = NOT_PROBED
    shm_bytes: int | NotProbed | None = NOT_PROBED  # None: no /dev/shm
    paths: PathsFacts | NotProbed = NOT_PROBED
    # free bytes by the home-redacted paths of `paths` (and what a dump names)
    disk_free_bytes: dict[str, int] | NotProbed = NOT_PROBED
    windows_long_paths: bool | NotProbed | None = NOT_PROBED
    stdout_encoding: str | NotProbed | None = NOT_PROBED
    python: PythonFacts | NotProbed = NOT_PROBED
    infiniband: InfinibandFacts | NotProbed | None = NOT_PROBED  # None: no IB class
    libcuda_in_ldconfig: bool | NotProbed | None = NOT_PROBED  # asked under WSL only


class RlimitFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One resource limit of the probing process (`resource.getrlimit`); -1: unlimited."""

    soft: int | NotProbed = NOT_PROBED
    hard: int | NotProbed = NOT_PROBED


class RlimitsFacts(msgspec.Struct, frozen=True, kw_only=True):
    """`limits.rlimits`: open files, processes/threads per user, address space."""

    nofile: RlimitFacts | NotProbed = NOT_PROBED
    nproc: RlimitFacts | NotProbed = NOT_PROBED
    address_space: RlimitFacts | NotProbed = NOT_PROBED


class PidsCgroupFacts(msgspec.Struct, frozen=True, kw_only=True):
    """`limits.pids_cgroup`: the pids cgroup level (own or an ancestor) with least headroom."""

    version: str | NotProbed | None = NOT_PROBED  # "v2" / "v1"
    path: str | NotProbed | None = NOT_PROBED
    max: int | NotProbed | None = NOT_PROBED  # -1: no limit
    current: int | NotProbed | None = NOT_PROBED


class CacheDirFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One cache directory the stack writes (`limits.caches`), home-redacted."""

    name: str | NotProbed = NOT_PROBED  # the variable that sets it: HF_HOME, TRITON_CACHE_DIR, ...
    path: str | NotProbed = NOT_PROBED
    exists: bool | NotProbed | None = NOT_PROBED
    checked: str | NotProbed | None = NOT_PROBED  # the path, or its nearest existing parent
    writable: bool | NotProbed | None = NOT_PROBED  # by this user (os.access W_OK|X_OK)
    read_only_mount: bool | NotProbed | None = NOT_PROBED  # statvfs ST_RDONLY


class LimitsFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `limits` section (probes/limits.py): what the run inherits from its shell,
    container or scheduler."""

    rlimits: RlimitsFacts | NotProbed = NOT_PROBED
    euid: int | NotProbed | None = NOT_PROBED  # 0: RLIMIT_NPROC does not apply
    pids_cgroup: PidsCgroupFacts | NotProbed | None = NOT_PROBED  # None: no cgroups visible
    memory_max: int | NotProbed | None = NOT_PROBED  # bytes; -1: no limit
    caches: tuple[CacheDirFacts, ...] | NotProbed = NOT_PROBED
    net_interfaces: tuple[str, ...] | NotProbed | None = NOT_PROBED  # /sys/class/net


class DriverFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `driver` section (NVML, nvidia-smi, a dump): the NVIDIA driver."""

    version: str | NotProbed | None = NOT_PROBED
    cuda_version: str | NotProbed | None = NOT_PROBED  # the newest CUDA the driver runs
    source: str | NotProbed | None = NOT_PROBED  # nvml / nvidia-smi / a dump's parser
    error: str | NotProbed | None = NOT_PROBED  # what nvidia-smi said when it failed


class ImportFacts(msgspec.Struct, frozen=True, kw_only=True):
    """One module of the `imports` section (probes/imports.py): did it import in a child?"""

    ok: bool | NotProbed | None = NOT_PROBED  # None: on demand, not imported this run
    error: str | NotProbed | None = NOT_PROBED
    version: str | NotProbed | None = NOT_PROBED
    checked: str | NotProbed | None = NOT_PROBED  # why `ok` is None


class ToolkitFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `cuda_toolkit` section (probes/cuda_toolkit.py): CUDA_HOME and every nvcc."""

    cuda_home: str | NotProbed | None = NOT_PROBED
    cuda_home_source: str | NotProbed | None = NOT_PROBED  # CUDA_HOME / nvcc on PATH / ...
    cuda_home_exists: bool | NotProbed | None = NOT_PROBED
    nvcc: str | NotProbed | None = NOT_PROBED  # the nvcc builds use
    nvcc_version: str | NotProbed | None = NOT_PROBED
    nvcc_on_path: tuple[str, ...] | NotProbed = NOT_PROBED
    nvcc_versions: dict[str, str | None] | NotProbed = NOT_PROBED


class ProbeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """How one probe went (`probes` section): ok / error / timeout / crash / skipped."""

    status: str | NotProbed | None = NOT_PROBED
    seconds: float | NotProbed | None = NOT_PROBED
    detail: str | NotProbed | None = NOT_PROBED


class RayClientFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What `ray.init()` would do with this environment's RAY_ADDRESS (probes/ray_probe.py)."""

    ray_address: str | NotProbed | None = NOT_PROBED
    action: str | NotProbed | None = NOT_PROBED  # connect / connect-client / start-local / fail
    address: str | NotProbed | None = NOT_PROBED
    error: str | NotProbed | None = NOT_PROBED


class RayFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `ray` section: the installed Ray and the cluster ray.init() would use. A record
    built from the package list alone carries the version only (no `cluster`)."""

    version: str | NotProbed | None = NOT_PROBED
    cluster: str | NotProbed | None = NOT_PROBED  # none / running / unhealthy / ...
    address: str | NotProbed | None = NOT_PROBED
    source: str | NotProbed | None = NOT_PROBED  # RAY_ADDRESS / cluster_file / process
    nodes: int | NotProbed | None = NOT_PROBED
    error: str | NotProbed | None = NOT_PROBED
    temp_dir: str | NotProbed | None = NOT_PROBED
    dashboard: str | NotProbed | None = NOT_PROBED
    gcs_healthy: bool | NotProbed | None = NOT_PROBED
    head_version: str | NotProbed | None = NOT_PROBED
    cluster_file: str | NotProbed | None = NOT_PROBED
    local_heads: tuple[str, ...] | NotProbed = NOT_PROBED
    client: RayClientFacts | NotProbed | None = NOT_PROBED


class DockerFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `docker` section (probes/docker_probe.py): the engine and its GPU support."""

    host: str | NotProbed | None = NOT_PROBED
    host_from: str | NotProbed | None = NOT_PROBED  # DOCKER_HOST / socket
    reachable: bool | NotProbed | None = NOT_PROBED
    error: str | NotProbed | None = NOT_PROBED
    server_version: str | NotProbed | None = NOT_PROBED
    api_version: str | NotProbed | None = NOT_PROBED
    storage_driver: str | NotProbed | None = NOT_PROBED
    runtimes: tuple[str, ...] | NotProbed = NOT_PROBED
    default_runtime: str | NotProbed | None = NOT_PROBED
    nvidia_runtime: bool | NotProbed | None = NOT_PROBED
    nvidia_hook: bool | NotProbed | None = NOT_PROBED
    cdi_spec_dirs: tuple[str, ...] | NotProbed = NOT_PROBED
    cdi_nvidia_devices: tuple[str, ...] | NotProbed = NOT_PROBED
    gpus_usable: bool | NotProbed | None = NOT_PROBED


class GpuPair(msgspec.Struct, frozen=True, kw_only=True):
    """One pair of the `topology` section: how two GPUs talk."""

    gpus: list[int] | NotProbed = NOT_PROBED
    link: str | NotProbed | None = NOT_PROBED  # NV4 / PIX / SYS / ...
    p2p: bool | NotProbed | None = NOT_PROBED
    p2p_nvlink: bool | NotProbed | None = NOT_PROBED


class SourceFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The `source` section of a snapshot parsed from a pasted dump (`doctor --from`)."""

    kind: str | NotProbed | None = NOT_PROBED  # "dump"
    file: str | NotProbed | None = NOT_PROBED


def lenient(section: Mapping[Any, Any], type_: type[S]) -> S:
    """The fields of a recorded section that decode; any other stays NOT_PROBED. A nested
    record decodes the same way, and a list or mapping keeps the entries that decode: for
    facts a probe wrote, odd input never makes a check crash."""
    fields = {f.name: f.type for f in msgspec.structs.fields(type_)}
    good: dict[str, Any] = {}
    for key, value in section.items():
        if key not in fields:
            continue
        try:
            msgspec.convert({key: value}, type_)
        except msgspec.ValidationError:
            kept = _salvage(value, fields[key])
            if kept is not NOT_PROBED:
                good[key] = kept
            continue
        good[key] = value
    return msgspec.convert(good, type_)


def _salvage(value: Any, annotation: Any) -> Any:
    """What can be kept of a value that does not decode as a whole: a nested record's good
    fields, a list's or mapping's good entries; else NOT_PROBED."""
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, msgspec.Struct):
            if isinstance(value, dict):
                return lenient(value, member)
        elif get_origin(member) is tuple and isinstance(value, list):
            item = get_args(member)[0]
            return [v for v in value if _fits(v, item)]
        elif get_origin(member) is dict and isinstance(value, dict):
            key_t, item = get_args(member)
            return {k: v for k, v in value.items() if _fits(k, key_t) and _fits(v, item)}
    return NOT_PROBED


def _members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def _fits(value: Any, type_: Any) -> bool:
    try:
        msgspec.convert(value, type_)
    except msgspec.ValidationError:
        return False
    return True
