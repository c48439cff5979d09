"""pip refuses what the user asks it to install: a wheel built for another Python, two
pins that cannot both hold, a release that needs a newer Python than this one.

The drivers run this environment's pip against the package index (pip's own
configuration; nothing is installed into the environment: `--target` a scratch dir,
`--dry-run`, or `pip download`). `prepare` downloads MarkupSafe 3.0.2's CPython 3.12
wheel into the cache (pip download --python-version 3.12 --platform ...), as a wheel
fetched on or for another machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "pip_install"
OTHER_PY_WHEEL = "markupsafe==3.0.2"
ENV = "SHOP_R1_FAULT_OTHER_PY_WHEEL"  # the downloaded cp312 wheel
CASES = (
    FaultCase(
        FAMILY,
        "wheel_for_other_python",
        ("WHEEL_NOT_FOR_THIS_PYTHON",),
        f"`pip install --target <dir> <wheel>` of {OTHER_PY_WHEEL}'s cp312 manylinux wheel"
        " (pip download --python-version 3.12 --platform manylinux2014_x86_64) under Python"
        " 3.11 (WHEEL_NOT_FOR_THIS_PYTHON is a proposed code, not in codes.yaml: a wheel"
        " whose Python or platform tag this interpreter does not accept)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "resolver_conflict",
        ("REQUIREMENT_CONFLICT",),
        '`pip install --dry-run --target <dir> "trl==1.16.0" "transformers==4.30.0"`:'
        " TRL 1.16 requires transformers>=4.56.2",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "release_needs_newer_python",
        ("PYTHON_TOO_OLD_FOR_PACKAGE",),
        "`pip download --no-deps numpy==2.5.0` under Python 3.11: every 2.5 release says"
        " Requires-Python >=3.12 (PYTHON_TOO_OLD_FOR_PACKAGE is a proposed code, not in"
        " codes.yaml: the interpreter is older than the release's Requires-Python)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "invalid_requirement",
        (),
        "the user's own typo: `pip install --dry-run --target <dir> trl=1.16.0` (one `=`)",
        timeout=60,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """The cp312 wheel, downloaded once into `cache`."""
    name, version = OTHER_PY_WHEEL.split("==")
    out = cache / "cp312-wheels"
    found = sorted(out.glob(f"[Mm]arkup[Ss]afe-{version}-cp312-*.whl"))
    if not found:
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        argv += ["--python-version", "3.12", "--platform", "manylinux2014_x86_64"]
        argv += ["-q", OTHER_PY_WHEEL, "-d", str(out)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=180)
        found = sorted(out.glob(f"[Mm]arkup[Ss]afe-{version}-cp312-*.whl"))
        if proc.returncode != 0 or not found:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise Unavailable(f"pip could not download {name}'s cp312 wheel: {last}")
    return {ENV: str(found[0])}


def _pip(*args: str) -> None:
    sys.exit(subprocess.run(["pip", *args], check=False).returncode)


def wheel_for_other_python(work: Path) -> None:
    import os

    _pip("install", "--target", str(work / "site"), os.environ[ENV])


def resolver_conflict(work: Path) -> None:
    _pip(
        "install",
        "--dry-run",
        "--target",
        str(work / "site"),
        "trl==1.16.0",
        "transformers==4.30.0",
    )


def release_needs_newer_python(work: Path) -> None:
    _pip("download", "--no-deps", "-d", str(work / "wheels"), "numpy==2.5.0")


def invalid_requirement(work: Path) -> None:
    _pip("install", "--dry-run", "--target", str(work / "site"), "trl=1.16.0")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
