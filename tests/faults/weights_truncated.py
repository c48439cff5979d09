"""Weights files cut short (a download or copy that broke off, a save the job was killed
in), then loaded: from_pretrained of a local directory and of a Hub-cache snapshot whose
model.safetensors is half its size, and torch.load of a truncated checkpoint.

The drivers write the files with the real savers (save_pretrained, torch.save) into the
case's directory, truncate them, then load them. HF_DOWNLOAD_INCOMPLETE covers a
download that broke off; CHECKPOINT_TRUNCATED names any weights file cut short (both
are right for the safetensors cases).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "weights_truncated"
CASES = (
    FaultCase(
        FAMILY,
        "from_pretrained_local_dir",
        ("CHECKPOINT_TRUNCATED", "HF_DOWNLOAD_INCOMPLETE"),
        "a tiny model saved with save_pretrained, its model.safetensors then cut to half (a"
        " download/copy that broke off): AutoModelForCausalLM.from_pretrained(<dir>)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "from_pretrained_hub_cache",
        ("CHECKPOINT_TRUNCATED", "HF_DOWNLOAD_INCOMPLETE"),
        "HF_HUB_OFFLINE=1; a Hub-cache snapshot (hub/models--shop--tiny-qwen2, refs/main) whose"
        " model.safetensors is half its size: AutoModelForCausalLM.from_pretrained"
        "('shop/tiny-qwen2')",
        env={"HF_HUB_OFFLINE": "1"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "torch_load_checkpoint",
        ("CHECKPOINT_TRUNCATED",),
        "torch.save of a state dict, the file cut to half (the job killed while saving; proposed"
        " code CHECKPOINT_TRUNCATED): torch.load",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "load_state_dict_wrong_model",
        (),
        "a complete torch.save'd state dict of one tiny model loaded into another with a wider"
        " hidden size (the user's bug: size mismatch)",
        timeout=60,
    ),
)


def _truncate(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size // 2)


def _save_tiny(out: Path, hidden: int = 64) -> None:
    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    model_from_config_dict(tiny_config_dict(4096, hidden=hidden)).save_pretrained(out)


def from_pretrained_local_dir(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    out = work / "tiny-qwen2"
    _save_tiny(out)
    _truncate(out / "model.safetensors")
    AutoModelForCausalLM.from_pretrained(out)


def from_pretrained_hub_cache(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    # The layout huggingface_hub writes: refs/main names the snapshot of the files.
    repo = Path(os.environ["HF_HOME"]) / "hub" / "models--shop--tiny-qwen2"
    commit = "3f1c7f0d5b2a9e8c4d6f7a1b2c3d4e5f60718293"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    _save_tiny(snapshot)
    _truncate(snapshot / "model.safetensors")
    AutoModelForCausalLM.from_pretrained("shop/tiny-qwen2")


def torch_load_checkpoint(work: Path) -> None:
    import torch

    ckpt = work / "checkpoint-1000.pt"
    torch.save({"model": {"w": torch.randn(512, 512)}, "step": 1000}, ckpt)
    _truncate(ckpt)
    state = torch.load(ckpt, map_location="cpu")
    print(state["step"])


def load_state_dict_wrong_model(work: Path) -> None:
    import torch

    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    small = model_from_config_dict(tiny_config_dict(4096, hidden=64))
    torch.save(small.state_dict(), work / "sft.pt")
    wide = model_from_config_dict(tiny_config_dict(4096, hidden=128))
    wide.load_state_dict(torch.load(work / "sft.pt", map_location="cpu"))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
