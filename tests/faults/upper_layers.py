"""A layer above the core stack refuses the installed core release with its own check.

`prepare` fetches LLaMA-Factory's and peft's released wheels (pip download --no-deps) and
unpacks them into the cache, so the real package runs against this environment's
transformers without being installed into it. LLaMA-Factory 0.9.5 checks at import of its
argument parser (llamafactory/hparams/parser.py calls check_dependencies()) that
transformers is within >=4.55.0,<=5.6.0, through transformers' require_version; the
installed transformers is newer. Without the wheels the case cannot be caused
(`Unavailable`, one line); its recording stays.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

from .case import FaultCase, download_wheel, drive

FAMILY = "upper_layers"
WHEELS = ("llamafactory==0.9.5", "peft==0.21.2")
ENV = "SHOP_R1_FAULT_UPPER_LAYERS"  # the unpacked wheels, os.pathsep-separated
CASES = (
    FaultCase(
        FAMILY,
        "llamafactory_transformers_out_of_range",
        ("REQUIREMENT_CONFLICT",),
        "LLaMA-Factory 0.9.5's dependency check (run at import of its argument parser) under"
        " the installed transformers 5.24, outside the >=4.55.0,<=5.6.0 it requires",
        prepare="prepare",
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """Unpack the wheels once into `cache`; the driver's environment to import them."""
    dirs = []
    for spec in WHEELS:
        name, version = spec.split("==")
        out = cache / f"{name}-{version}"
        if not (out / name).is_dir():
            with zipfile.ZipFile(download_wheel(spec, cache)) as zf:
                zf.extractall(out)
        dirs.append(str(out))
    return {ENV: os.pathsep.join(dirs)}


def llamafactory_transformers_out_of_range(work: Path) -> None:
    sys.path[:0] = os.environ[ENV].split(os.pathsep)
    # what `from llamafactory.hparams.parser import ...` runs first; the parser module
    # itself also imports omegaconf and more of LLaMA-Factory's requirements
    from llamafactory.extras.misc import check_dependencies

    check_dependencies()


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
