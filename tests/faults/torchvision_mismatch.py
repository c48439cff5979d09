"""A torchvision wheel built for another torch, installed beside this torch with --no-deps
(as `pip install torchvision --no-deps` or a pinned requirements file leaves it).

`prepare` downloads each release's wheel from the package index (pip download --no-deps)
and unpacks it into the cache, one directory per release: torchvision 0.29.1 (built for
torch 2.14) and 0.20.1 (for torch 2.5). The driver writes the user's script into the
case's dir and runs it with that directory first on PYTHONPATH, over this environment's
torch 2.13 (CPU). Without the wheels the cases cannot be caused (Unavailable, one line).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from .case import FaultCase, download_wheel, drive

FAMILY = "torchvision_mismatch"
ENV = "SHOP_R1_FAULT_TORCHVISION_DIRS"  # version=dir pairs, os.pathsep-separated
RELEASES = ("0.29.1", "0.20.1")
EXPECTED = ("TORCHVISION_TORCH_MISMATCH",)
CASES = (
    FaultCase(
        FAMILY,
        "torchvision_for_newer_torch",
        EXPECTED,
        "torchvision 0.29.1 (built for torch 2.14) unpacked first on PYTHONPATH, as pip"
        " install --no-deps leaves it, over torch 2.13 (CPU): `import torchvision`",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "torchvision_for_older_torch",
        EXPECTED,
        "torchvision 0.20.1 (built for torch 2.5) the same way: the data pipeline's"
        " `from torchvision import transforms`",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "user_keyerror_torchvision_listed",
        (),
        "torchvision 0.20.1 on PYTHONPATH but never imported: the script prints the"
        " installed versions (torch and torchvision) then reads a key its batch lacks",
        prepare="prepare",
        timeout=60,
    ),
)

SCRIPTS = {
    "torchvision_for_newer_torch": """\
import torch
import torchvision

model = torchvision.models.resnet18(num_classes=10)
print(model(torch.randn(1, 3, 64, 64)).shape)
""",
    "torchvision_for_older_torch": """\
import torch
from torchvision import transforms

augment = transforms.Compose([transforms.RandomHorizontalFlip(), transforms.Normalize([0.5], [0.5])])
print(augment(torch.rand(1, 8, 8)).shape)
""",
    "user_keyerror_torchvision_listed": """\
from importlib.metadata import version

import torch

print("torch", torch.__version__, "torchvision", version("torchvision"))
batch = {"pixel_values": torch.rand(2, 3, 8, 8)}
print(batch["labels"])
""",
}


def prepare(cache: Path) -> dict[str, str]:
    """Each release's wheel unpacked into `cache` once."""
    pairs = []
    for release in RELEASES:
        target = cache / "torchvision-wheels" / f"torchvision-{release}"
        if not (target / "torchvision").exists():
            wheel = download_wheel(f"torchvision=={release}", cache / "wheels")
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(target)
        pairs.append(f"{release}={target}")
    return {ENV: os.pathsep.join(pairs)}


def _run(work: Path, release: str, name: str) -> None:
    dirs = dict(p.split("=", 1) for p in os.environ[ENV].split(os.pathsep))
    (work / "train.py").write_text(SCRIPTS[name], encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=dirs[release])
    print(f"+ PYTHONPATH=<torchvision {release}> python train.py", flush=True)
    sys.exit(subprocess.run([sys.executable, "train.py"], cwd=work, env=env).returncode)


def torchvision_for_newer_torch(work: Path) -> None:
    _run(work, "0.29.1", "torchvision_for_newer_torch")


def torchvision_for_older_torch(work: Path) -> None:
    _run(work, "0.20.1", "torchvision_for_older_torch")


def user_keyerror_torchvision_listed(work: Path) -> None:
    _run(work, "0.20.1", "user_keyerror_torchvision_listed")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
