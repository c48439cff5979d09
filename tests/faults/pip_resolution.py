"""pip refuses or cannot do what it is asked, for reasons of where it installs from or
into: a torch pin with a local version tag asked of PyPI, a pin that has no wheel for the
interpreter or platform it targets, an index it cannot reach, a system Python marked
EXTERNALLY-MANAGED (PEP 668, as Debian ships its python3), a root-owned install's
site-packages used by another user without a venv.

The index cases run this environment's pip with its default configuration (PIP_* unset,
PIP_CONFIG_FILE=/dev/null: PyPI alone, as on a fresh machine) and `pip download --no-deps`
into the case's dir, so nothing is installed. `prepare` makes, once per cache, a copy of
this machine's CPython install (executable, libpython, the stdlib and lib-dynload, and
that install's own pip in its site-packages), root-owned and readable by all, as a
distribution's /usr; a second copy (hard links) carries Debian's EXTERNALLY-MANAGED file
in its stdlib directory.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "pip_resolution"
ENV = "SHOP_R1_FAULT_SYSTEM_PYTHONS"
CASES = (
    FaultCase(
        FAMILY,
        "local_tag_asked_of_pypi",
        ("TORCH_LOCAL_VERSION_NEEDS_INDEX",),
        "`pip download --no-deps torch==2.5.1+cu121` with pip's default configuration (PyPI"
        " only, no --index-url https://download.pytorch.org/whl/cu121)",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "pin_older_than_python",
        ("NO_RELEASE_FOR_THIS_PLATFORM",),
        "`pip download --no-deps --only-binary=:all: --python-version 3.13 torch==2.1.0`"
        " from PyPI: torch 2.1.0 has no cp313 wheel (its first is 2.5.0)",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "pin_newer_than_platform",
        ("NO_RELEASE_FOR_THIS_PLATFORM",),
        "`pip download --no-deps --only-binary=:all: --platform macosx_10_9_x86_64"
        " torch==2.5.1` from PyPI: torch's last Intel macOS wheels are 2.2.x",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "index_no_route",
        ("PACKAGE_INDEX_UNREACHABLE",),
        "`pip download --no-deps torch==2.5.1` in a network namespace with no interface up"
        " (no route, no DNS), pip's default configuration",
        no_network=True,
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "index_port_closed",
        ("PACKAGE_INDEX_UNREACHABLE",),
        "`pip download --no-deps --index-url http://127.0.0.1:9/simple wandb==0.19.11`: an"
        " index URL whose port nothing listens on (a mirror that is down)",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "externally_managed_system_python",
        ("SYSTEM_PYTHON_NOT_WRITABLE",),
        "a copy of this machine's CPython 3.11 install (with its own pip 23.2) whose stdlib"
        " dir holds Debian's EXTERNALLY-MANAGED file: `<copy>/bin/python3.11 -m pip install"
        " --dry-run requests`, no venv",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "site_packages_not_writable",
        ("SYSTEM_PYTHON_NOT_WRITABLE",),
        "the root-owned copy without the marker, run as nobody (HOME=/nonexistent, its"
        " passwd home, as a container started with --user): `<copy>/bin/python3.11 -m pip"
        " install six`, no venv",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "requirements_file_typo",
        (),
        "the user's own typo: `pip install -r requirement.txt` where the file is requirements.txt",
        timeout=60,
    ),
)

DEBIAN_MARKER = """[externally-managed]
Error=To install Python packages system-wide, try apt install
 python3-xyz, where xyz is the package you are trying to
 install.
 \n If you wish to install a non-Debian-packaged Python package,
 create a virtual environment using python3 -m venv path/to/venv.
 Then use path/to/venv/bin/python3 and path/to/venv/bin/pip. Make
 sure you have python3-full installed.
 \n See /usr/share/doc/python3.11/README.venv for more information.
""".replace(" \n", " \n")


def _build(root: Path) -> None:
    base = Path(sys.base_prefix)
    executable = Path(sys.executable).resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    partial = root.with_name(root.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    (partial / "bin").mkdir(parents=True)
    shutil.copy2(executable, partial / "bin" / executable.name)
    (partial / "bin" / "python3").symlink_to(executable.name)
    lib = partial / "lib"
    lib.mkdir()
    for so in base.glob("lib/libpython*.so*"):
        shutil.copy2(so, lib / so.name, follow_symlinks=True)
    skip = shutil.ignore_patterns("test", "site-packages", "__pycache__", "idlelib", "tkinter")
    shutil.copytree(stdlib, lib / stdlib.name, ignore=skip)
    site = lib / stdlib.name / "site-packages"
    site.mkdir()
    for entry in (stdlib / "site-packages").glob("pip*"):
        if entry.is_dir():
            shutil.copytree(entry, site / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(partial)], check=True)
    os.replace(partial, root)


def prepare(cache: Path) -> dict[str, str]:
    if sys.platform != "linux":
        raise Unavailable("the copy of the interpreter is made for Linux's layout")
    out = cache / "system-python"
    plain, managed = out / "plain", out / "externally-managed"
    if not (plain / "bin").exists():
        out.mkdir(parents=True, exist_ok=True)
        os.chmod(out, 0o755)
        _build(plain)
    if not (managed / "bin").exists():
        partial = managed.with_name(managed.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["cp", "-al", str(plain), str(partial)], check=True)
        stdlib = next((partial / "lib").glob("python3.*"))
        (stdlib / "EXTERNALLY-MANAGED").write_text(DEBIAN_MARKER, encoding="utf-8")
        os.replace(partial, managed)
    return {ENV: str(out)}


def _default_pip_env() -> dict[str, str]:
    """This environment without pip's configuration: PyPI alone, as a fresh machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    print("$", shlex.join(argv), flush=True)
    sys.exit(subprocess.run(argv, env=env, cwd=cwd, check=False).returncode)


def _pip_download(work: Path, *args: str) -> None:
    _run(
        ["pip", "download", "--no-deps", "-d", str(work / "wheels"), *args],
        _default_pip_env(),
        work,
    )


def local_tag_asked_of_pypi(work: Path) -> None:
    _pip_download(work, "torch==2.5.1+cu121")


def pin_older_than_python(work: Path) -> None:
    _pip_download(work, "--only-binary=:all:", "--python-version", "3.13", "torch==2.1.0")


def pin_newer_than_platform(work: Path) -> None:
    _pip_download(work, "--only-binary=:all:", "--platform", "macosx_10_9_x86_64", "torch==2.5.1")


def index_no_route(work: Path) -> None:
    _pip_download(work, "torch==2.5.1")


def index_port_closed(work: Path) -> None:
    _pip_download(work, "--index-url", "http://127.0.0.1:9/simple", "wandb==0.19.11")


def _system_python(kind: str) -> tuple[Path, dict[str, str]]:
    root = Path(os.environ[ENV]) / kind
    env = _default_pip_env()
    # The copy's libpython: its RUNPATH names this machine's install, which others cannot read.
    env["LD_LIBRARY_PATH"] = str(root / "lib")
    return root / "bin" / "python3.11", env


def externally_managed_system_python(work: Path) -> None:
    python, env = _system_python("externally-managed")
    _run([str(python), "-m", "pip", "install", "--dry-run", "requests"], env, work)


def site_packages_not_writable(work: Path) -> None:
    python, env = _system_python("plain")
    env["HOME"] = "/nonexistent"
    os.chmod(work, 0o755)
    setpriv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    _run([*setpriv, str(python), "-m", "pip", "install", "six"], env, work)


def requirements_file_typo(work: Path) -> None:
    (work / "requirements.txt").write_text("six\n", encoding="utf-8")
    _run(["pip", "install", "-r", "requirement.txt"], _default_pip_env(), work)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
