"""Host facts: OS, WSL, container, CPUs, memory, /dev/shm, disks, encoding, interpreter."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.probes.fabric import probe_fabric
from shop_r1_doctor.redact import redact_home


def _read(deps: ProbeDeps, path: str) -> str | None:
    try:
        return (deps.root / path.lstrip("/")).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def wsl_version(proc_version: str | None) -> int | None:
    """WSL2 kernels say `microsoft-standard-WSL2`; WSL1 reports e.g. `4.4.0-19041-Microsoft`."""
    if not proc_version or "microsoft" not in proc_version.lower():
        return None
    text = proc_version.lower()
    return 2 if ("wsl2" in text or "microsoft-standard" in text) else 1


# Root file systems of container runtimes (docker/podman: overlay; rootless: fuse-overlayfs;
# gVisor: 9p/gofer). A VM or bare metal boots from a block device (ext4, xfs, btrfs, ...).
CONTAINER_ROOT_FS = ("overlay", "fuse-overlayfs", "aufs", "9p", "shiftfs")
# DMI vendors / product names of hypervisors (lower case), for the VM's name
HYPERVISORS = {
    "qemu": "kvm",
    "kvm": "kvm",
    "amazon ec2": "kvm",
    "google": "kvm",
    "firecracker": "firecracker",
    "microsoft corporation": "hyper-v",
    "vmware": "vmware",
    "xen": "xen",
    "innotek": "virtualbox",
}


def root_fs_type(deps: ProbeDeps) -> str | None:
    """The type of the file system mounted at / for PID 1 (mountinfo), or None."""
    for line in (_read(deps, "/proc/1/mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 8 and fields[4] == "/" and "-" in fields:
            return fields[fields.index("-") + 1]
    return None


def virtualization(deps: ProbeDeps) -> str | None:
    """ "vm" / a hypervisor's name when this kernel runs under one (the CPU's `hypervisor`
    flag, /sys/hypervisor, DMI), else None. Containers share the host's kernel, so inside a
    container on a VM this is the VM's answer too."""
    vendor = " ".join(
        (_read(deps, f"/sys/class/dmi/id/{f}") or "").strip().lower()
        for f in ("sys_vendor", "product_name")
    )
    for key, name in HYPERVISORS.items():
        if key in vendor:
            return name
    kind = (_read(deps, "/sys/hypervisor/type") or "").strip().lower()
    if kind:
        return kind
    kernel = (deps.platform.release or "").lower()
    cpuinfo = _read(deps, "/proc/cpuinfo") or ""
    if any(line.startswith("flags") and " hypervisor" in line for line in cpuinfo.splitlines()):
        # Firecracker guests carry no DMI table; their kernels are often named for it
        return "firecracker" if "-fc-" in kernel or "firecracker" in kernel else "vm"
    return None


def image_built_by(deps: ProbeDeps) -> str | None:
    """ "docker" when the root file system came from a Docker image (`/.dockerenv`, which
    `docker export` keeps) but is not a container's: e.g. a VM booted from such an image."""
    if not (deps.root / ".dockerenv").exists():
        return None
    return None if _in_container_fs(deps) else "docker"


def _in_container_fs(deps: ProbeDeps) -> bool:
    fs = root_fs_type(deps)
    # no mountinfo (non-Linux test roots, restricted /proc): trust /.dockerenv as before
    return fs is None or fs in CONTAINER_ROOT_FS


def container_kind(deps: ProbeDeps) -> str | None:
    """Kubernetes first: a pod's runtime (docker, containerd) is the less useful answer.

    `/.dockerenv` alone is not a container: a VM booted from a Docker-built image (the
    lent Firecracker GPU machines) has it on an ext4 root. It counts only when the root
    file system is a container runtime's (overlay, ...), or /proc says nothing either way."""
    cgroup = (_read(deps, "/proc/1/cgroup") or "").lower()
    if deps.environ.get("KUBERNETES_SERVICE_HOST") or "kubepods" in cgroup:
        return "kubernetes"
    if "docker" in cgroup or ((deps.root / ".dockerenv").exists() and _in_container_fs(deps)):
        return "docker"
    if (deps.root / "run/.containerenv").exists() or "libpod" in cgroup:
        return "podman"
    if "containerd" in cgroup:
        return "containerd"
    if deps.environ.get("container"):  # systemd's convention (lxc, systemd-nspawn, ...)
        return "other"
    return None


def os_release(deps: ProbeDeps) -> str | None:
    system = deps.platform.system
    if system == "linux":
        fields = {}
        for line in (_read(deps, "/etc/os-release") or "").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                fields[key.strip()] = value.strip().strip('"')
        return fields.get("PRETTY_NAME") or fields.get("NAME")
    if system == "darwin":
        import platform

        return f"macOS {platform.mac_ver()[0]}"
    if system == "windows":
        import platform

        release, version, *_ = platform.win32_ver()
        return f"Windows {release} ({version})"
    return None


def windows_long_paths(system: str) -> bool | None:
    if system != "windows" or sys.platform != "win32":
        return None
    import winreg

    try:
        with winreg.OpenKey(
            winreg.HKEY_LOCAL_MACHINE, r"SYSTEM\CurrentControlSet\Control\FileSystem"
        ) as key:
            value, _ = winreg.QueryValueEx(key, "LongPathsEnabled")
    except OSError:
        return False  # the value is absent on a default install: long paths are off
    return bool(value)


def _existing(path: Path) -> Path:
    """The nearest existing ancestor: disk space of a not-yet-created output dir."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return path


def hf_cache_dir(environ: dict[str, str] | Any, home: str) -> str:
    if environ.get("HF_HUB_CACHE"):
        return str(environ["HF_HUB_CACHE"])
    hf_home = environ.get("HF_HOME") or os.path.join(
        environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "huggingface"
    )
    return os.path.join(hf_home, "hub")


def temp_dir(environ: dict[str, str] | Any) -> str:
    for name in ("TMPDIR", "TEMP", "TMP"):
        if environ.get(name):
            return str(environ[name])
    return "/tmp" if os.name != "nt" else os.path.expanduser("~/AppData/Local/Temp")


def _python(deps: ProbeDeps) -> dict[str, Any]:
    plat = deps.platform
    env = deps.environ
    which = shutil.which("python", path=env.get("PATH", ""))
    venv: str | None = None
    manager: str | None = None
    if plat.prefix != plat.base_prefix:
        venv = plat.prefix
        cfg = Path(plat.prefix) / "pyvenv.cfg"
        try:
            manager = "uv" if "\nuv =" in "\n" + cfg.read_text(encoding="utf-8") else "venv"
        except OSError:
            manager = "venv"
    elif env.get("CONDA_PREFIX") and Path(plat.executable).is_relative_to(env["CONDA_PREFIX"]):
        venv, manager = env["CONDA_PREFIX"], "conda"
    home = deps.home
    return {
        "version": plat.python_version,
        "executable": redact_home(plat.executable, home),
        "which_python": redact_home(which, home) if which else None,
        "venv": redact_home(venv, home) if venv else None,
        "env_manager": manager,
    }


def probe_host(deps: ProbeDeps) -> dict[str, Any]:
    import psutil

    plat = deps.platform
    home = deps.home
    env = deps.environ
    shm: int | None = None
    shm_path = deps.root / "dev/shm"
    if plat.system == "linux" and shm_path.is_dir():
        shm = shutil.disk_usage(shm_path).total
    paths = {
        "cwd": str(deps.cwd),
        "temp": temp_dir(env),
        "hf_cache": hf_cache_dir(env, home),
    }
    if deps.output_dir:
        # the spelling Facts.probed_path gives the plan's output_dir: ~ is the user's home
        out = deps.output_dir
        out = home + out[1:] if out == "~" or out.startswith("~/") else out
        paths["output"] = str(deps.cwd / out)
    disk_free: dict[str, int] = {}
    for path in paths.values():
        try:
            disk_free[redact_home(path, home)] = shutil.disk_usage(_existing(Path(path))).free
        except OSError:
            continue
    names = getattr(os, "confstr_names", {})  # macOS has confstr but no glibc name
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in names else None
    encoding = getattr(sys.stdout, "encoding", None)
    wsl = wsl_version(_read(deps, "/proc/version")) if plat.system == "linux" else None
    return {
        "os": plat.system,
        "os_release": os_release(deps),
        "kernel": plat.release,
        "arch": plat.machine,
        "libc": libc,
        "wsl": wsl,
        "container": container_kind(deps) if plat.system == "linux" else None,
        "virtualization": virtualization(deps) if plat.system == "linux" else None,
        "image_built_by": image_built_by(deps) if plat.system == "linux" else None,
        "cpu_count": os.cpu_count(),
        "cpu_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_bytes": psutil.virtual_memory().total,
        "ram_available_bytes": psutil.virtual_memory().available,
        "shm_bytes": shm,
        "paths": {k: redact_home(v, home) for k, v in paths.items()},
        "disk_free_bytes": disk_free,
        "windows_long_paths": windows_long_paths(plat.system),
        "stdout_encoding": encoding.lower() if isinstance(encoding, str) else None,
        "python": _python(deps),
        **(probe_fabric(deps, wsl) if plat.system == "linux" else {}),
    }
