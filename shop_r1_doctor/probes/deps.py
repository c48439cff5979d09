"""The outside world a probe may touch, passed in so tests can replace each part.

Tests build a `ProbeDeps` with recorded `nvidia-smi` outputs, a fake NVML object, a
dict of distributions, a temp directory as file-system root and fake packages on
`extra_path`; production uses the defaults below.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop_r1_doctor.isolate import CommandRunner, subprocess_runner


@dataclass(frozen=True)
class DistRecord:
    """One installed distribution; `requires` are its Requires-Dist lines as written."""

    name: str
    version: str
    requires: tuple[str, ...] = ()
    path: str | None = None  # the .dist-info directory; its mtime keys the torch cache
    mtime: float | None = None


@dataclass(frozen=True)
class PlatformFacts:
    system: str = field(default_factory=lambda: platform.system().lower())
    release: str = field(default_factory=platform.release)
    machine: str = field(default_factory=platform.machine)
    python_version: str = field(default_factory=platform.python_version)
    executable: str = sys.executable
    prefix: str = sys.prefix
    base_prefix: str = sys.base_prefix


def http_get(url: str, timeout: float) -> tuple[int, str] | None:
    """GET `url`; (status, body) or None when nothing answers. Never follows proxies:
    the addresses probed are cluster-local and a proxy would only add a hang."""
    import urllib.error  # here: 15 ms of imports that only the ray probe needs
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as resp:
            return resp.status, resp.read(1_000_000).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except (OSError, ValueError):
        return None


def process_name(pid: int) -> str | None:
    """Name of a PID; None when it is not visible (another PID namespace, gone)."""
    import psutil

    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return None


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    if environ.get("SHOP_R1_CACHE_DIR"):
        return Path(environ["SHOP_R1_CACHE_DIR"])
    if sys.platform == "win32":
        base = environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
        return Path(base) / "shop-r1" / "cache"
    base = environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "shop-r1"


def ray_cmdlines() -> list[list[str]]:
    """Command lines of this machine's Ray head processes (lazy: psutil walk)."""
    from shop_r1_doctor.probes.ray_probe import ray_cmdlines as scan

    return scan()


AUTO: Any = object()  # "load the real pynvml lazily"


@dataclass
class ProbeDeps:
    runner: CommandRunner = subprocess_runner
    nvml: Any = AUTO  # a pynvml-like module, None for "NVML is not available"
    dists: Callable[[], Mapping[str, DistRecord]] | None = None  # None: scan sys.path
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    root: Path = Path("/")  # where /proc, /etc, /.dockerenv, /dev/shm are read
    platform: PlatformFacts = field(default_factory=PlatformFacts)
    python: str = sys.executable  # interpreter for child probes
    extra_path: tuple[str, ...] = ()  # prepended to children's PYTHONPATH (fake packages)
    cache_dir: Path | None = None  # None: default_cache_dir(environ); torch facts live there
    http: Callable[[str, float], tuple[int, str] | None] = http_get
    docker: Callable[[str, float], Any] | None = None  # engine API GET; None: the real one
    proc_name: Callable[[int], str | None] = process_name
    ray_cmdlines: Callable[[], list[list[str]]] = ray_cmdlines
    cwd: Path = field(default_factory=Path.cwd)
    output_dir: str | None = None  # the plan's output_dir, checked for free disk
    home: str = field(default_factory=lambda: os.path.expanduser("~"))

    def resolved_cache_dir(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else default_cache_dir(self.environ)

    def load_nvml(self) -> Any:
        if self.nvml is AUTO:
            try:
                import pynvml  # nvidia-ml-py; a core dependency, but the env may be broken

                self.nvml = pynvml
            except ImportError:
                self.nvml = None
        return self.nvml

    def path_dirs(self) -> list[str]:
        return [d for d in self.environ.get("PATH", "").split(os.pathsep) if d]
