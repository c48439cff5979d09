"""A checkpoint pickled with objects outside torch.load's weights-only allow-list (numpy
arrays, argparse.Namespace, the user's own class), loaded with torch >= 2.6's default
`weights_only=True`: `_pickle.UnpicklingError: Weights only load failed ... Unsupported
global`. The checkpoint is written by the same driver with torch.save (as an older
training script, or torch < 2.6, saved it) and loaded in a fresh process.

Expected: TORCH_LOAD_WEIGHTS_ONLY (torch.load refused a checkpoint holding globals outside
the weights-only allow-list).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "torch_load_weights_only"
EXPECTED = ("TORCH_LOAD_WEIGHTS_ONLY",)
CASES = (
    FaultCase(
        FAMILY,
        "numpy_array_in_checkpoint",
        EXPECTED,
        "torch.save of {'model': state_dict, 'mean': np.ndarray, 'step': np.int64}, then"
        " torch.load(path) (weights_only defaults to True) in a new process",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "argparse_namespace_in_checkpoint",
        EXPECTED,
        "torch.save of {'model': state_dict, 'args': argparse.Namespace(lr=..)}, then"
        " torch.load(path, map_location='cpu') in a new process",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "custom_class_in_checkpoint",
        EXPECTED,
        "torch.save of a whole nn.Module subclass defined in the training script"
        " (__main__.ShopPolicy), then torch.load(path) in a new process",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "checkpoint_path_typo",
        (),
        "the user's wrong path: torch.load('checkpoint-500/pytorch_model.bin') where the"
        " run saved checkpoint-50",
        timeout=60,
    ),
)

SAVE = {
    "numpy_array_in_checkpoint": (
        "import numpy as np, torch\n"
        "m = torch.nn.Linear(4, 2)\n"
        "torch.save({'model': m.state_dict(), 'mean': np.zeros(4), 'step': np.int64(500)}, P)\n"
    ),
    "argparse_namespace_in_checkpoint": (
        "import argparse, torch\n"
        "m = torch.nn.Linear(4, 2)\n"
        "torch.save({'model': m.state_dict(), 'args': argparse.Namespace(lr=1e-4)}, P)\n"
    ),
    "custom_class_in_checkpoint": (
        "import torch\n"
        "class ShopPolicy(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.head = torch.nn.Linear(4, 2)\n"
        "torch.save(ShopPolicy(), P)\n"
    ),
}


def _save(name: str, path: Path) -> None:
    """Write the checkpoint in another process (the training run that saved it)."""
    code = f"P = {str(path)!r}\n" + SAVE[name]
    subprocess.run([sys.executable, "-c", code], check=True)


def _load(path: Path) -> None:
    import torch

    state = torch.load(path, map_location="cpu")
    print(sorted(state) if isinstance(state, dict) else type(state).__name__)


def numpy_array_in_checkpoint(work: Path) -> None:
    _save("numpy_array_in_checkpoint", work / "ckpt.pt")
    _load(work / "ckpt.pt")


def argparse_namespace_in_checkpoint(work: Path) -> None:
    _save("argparse_namespace_in_checkpoint", work / "ckpt.pt")
    _load(work / "ckpt.pt")


def custom_class_in_checkpoint(work: Path) -> None:
    _save("custom_class_in_checkpoint", work / "policy.pt")
    _load(work / "policy.pt")


def checkpoint_path_typo(work: Path) -> None:
    import torch

    (work / "checkpoint-50").mkdir()
    torch.save(torch.nn.Linear(4, 2).state_dict(), work / "checkpoint-50" / "pytorch_model.bin")
    _load(work / "checkpoint-500" / "pytorch_model.bin")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
