"""Take paths away inside a private mount namespace, then run a command: how the GPU fault
cases that hide device files or libraries (gpu_cases.GpuCase.hide) are launched, under
`unshare -m --propagation private`, so nothing outside the case's process tree changes.

    python -m tests.faults.gpu_hide [--stage DIR] [--leave DIR NAMES] [--null PATH]
        [--empty DIR] -- ARGV...

--leave DIR NAMES  DIR shows everything but NAMES (comma-separated). A tmpfs mounted nodev
                   under the stage directory is filled with bind mounts of DIR's other
                   entries (links copied as links), then moved over DIR in one step: no
                   program loses DIR's files meanwhile (DIR may hold the C library), and a
                   device node a driver makes there again cannot be opened, as a container's
                   device cgroup forbids it
--null PATH        /dev/null bound over PATH (a program there cannot be run)
--empty DIR        an empty tmpfs over DIR
"""

from __future__ import annotations

import argparse
import ctypes
import os
import stat
import sys
import tempfile
from pathlib import Path

MS_NODEV = 4
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384

_libc = ctypes.CDLL(None, use_errno=True)


def mount(
    source: str, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    def b(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    if _libc.mount(b(source), b(target), b(fstype), ctypes.c_ulong(flags), b(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def leave_out(directory: str, names: set[str], stage: str) -> None:
    """Show `directory` without `names` (see the module's doc)."""
    mode = stat.S_IMODE(os.stat(directory).st_mode)
    staged = tempfile.mkdtemp(prefix="hidden-", dir=stage)
    mount("tmpfs", staged, "tmpfs", MS_NODEV, f"mode={mode:o}")
    with os.scandir(directory) as entries:
        for e in entries:
            if e.name in names:
                continue
            into = os.path.join(staged, e.name)
            if e.is_symlink():
                os.symlink(os.readlink(e.path), into)
            elif e.is_dir(follow_symlinks=False):
                os.mkdir(into)
                mount(e.path, into, None, MS_BIND | MS_REC)
            else:  # a file, a device node, a socket: bound onto an empty file
                Path(into).touch()
                mount(e.path, into, None, MS_BIND)
    mount(staged, directory, None, MS_MOVE)


def main(argv: list[str]) -> None:
    if "--" not in argv:
        sys.exit("usage: python -m tests.faults.gpu_hide [options] -- ARGV...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m tests.faults.gpu_hide")
    parser.add_argument("--stage", default=tempfile.gettempdir())
    parser.add_argument("--leave", nargs=2, action="append", default=[], metavar=("DIR", "NAMES"))
    parser.add_argument("--null", action="append", default=[])
    parser.add_argument("--empty", action="append", default=[])
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        sys.exit("gpu_hide: no command after --")
    for path in args.null:
        mount("/dev/null", path, None, MS_BIND)
    for path in args.empty:
        mount("tmpfs", path, "tmpfs", 0, "size=1m,mode=755")
    for directory, names in args.leave:
        leave_out(directory, set(names.split(",")), args.stage)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
