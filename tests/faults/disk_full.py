"""A checkpoint or cache written to a file system that is full (a tmpfs of 1 MB)."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "disk_full"
_FULL = ("work", "1m")
CASES = (
    FaultCase(
        FAMILY,
        "torch_save",
        ("DISK_FULL_AT_CHECKPOINT",),
        "torch.save of a 4 MB state dict onto a 1 MB tmpfs",
        tmpfs=_FULL,
    ),
    FaultCase(
        FAMILY,
        "safetensors_save",
        ("DISK_FULL_AT_CHECKPOINT",),
        "safetensors.torch.save_file of a 4 MB state dict onto a 1 MB tmpfs",
        tmpfs=_FULL,
    ),
    FaultCase(
        FAMILY,
        "save_pretrained",
        ("DISK_FULL_AT_CHECKPOINT",),
        "a tiny model's save_pretrained (safetensors, 4 MB) onto a 1 MB tmpfs",
        tmpfs=_FULL,
    ),
    FaultCase(
        FAMILY,
        "datasets_cache",
        ("DISK_FULL_AT_CHECKPOINT",),
        "datasets builds a 3 MB JSON dataset into a cache_dir on a 1 MB tmpfs",
        tmpfs=_FULL,
    ),
    FaultCase(
        FAMILY,
        "datasets_save_to_disk",
        ("DISK_FULL_AT_CHECKPOINT",),
        "Dataset.save_to_disk of 3 MB onto a 1 MB tmpfs",
        tmpfs=_FULL,
    ),
)


def _state_dict():  # 4 MB of float32
    import torch

    return {"weight": torch.randn(1024, 1024), "bias": torch.zeros(1024)}


def torch_save(work: Path) -> None:
    import torch

    torch.save(_state_dict(), work / "checkpoint-100.pt")


def safetensors_save(work: Path) -> None:
    from safetensors.torch import save_file

    save_file(_state_dict(), str(work / "model.safetensors"))


def save_pretrained(work: Path) -> None:
    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    model = model_from_config_dict(tiny_config_dict(8192, hidden=128))
    model.save_pretrained(work / "checkpoint-500")


def _rows() -> list[dict[str, str]]:
    return [{"prompt": f"row {i} " + "x" * 300, "completion": "y" * 20} for i in range(10_000)]


def datasets_cache(work: Path) -> None:
    import json
    import tempfile

    from datasets import load_dataset

    # The source file sits on the real disk; only the cache is on the full file system.
    src = Path(tempfile.mkdtemp()) / "train.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    load_dataset("json", data_files=str(src), cache_dir=str(work / "datasets"))


def datasets_save_to_disk(work: Path) -> None:
    from datasets import Dataset

    Dataset.from_list(_rows()).save_to_disk(str(work / "train_ds"))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
