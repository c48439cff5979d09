"""Writes past a disk quota (EDQUOT, `[Errno 122] Disk quota exceeded`), as a home or
project directory on a cluster has one: the disk has room, the user's share does not.

The case's dir is a btrfs file system on a loop device whose qgroup limit is the quota
(FaultCase.quota_mib); the driver runs as `nobody`, who owns it. The checkpoint, the
Hugging Face cache (HF_HOME is the case's hf-home) and a pip --target all live there.
Expected: a quota code; none in codes.yaml names one (DISK_FULL_AT_CHECKPOINT is the disk's
free space, which df still shows here), so the proposed DISK_QUOTA_EXCEEDED.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, default_cache, download_wheel, drive

FAMILY = "disk_quota"
EXPECTED = ("DISK_QUOTA_EXCEEDED",)
SYMPY = "sympy==1.14.0"  # a pure-Python wheel of 6 MB that unpacks to about 30 MB
CASES = (
    FaultCase(
        FAMILY,
        "torch_save_checkpoint",
        # torch's writer reports only an iostream error at an offset, not the errno: from
        # the log alone the checkpoint's file system ran out, as a full disk reads.
        (*EXPECTED, "DISK_FULL_AT_CHECKPOINT"),
        "as nobody, torch.save of a 4-layer 1024x1024 MLP's state dict and AdamW state (about"
        " 48 MB) into checkpoint-500/ of a btrfs file system with an 8 MiB qgroup limit",
        quota_mib=8,
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "save_pretrained_model",
        EXPECTED,
        "as nobody, save_pretrained of a Qwen2 model made from a config (about 30 MB of"
        " safetensors) into output/ of a btrfs file system with an 8 MiB qgroup limit",
        quota_mib=8,
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "datasets_cache_write",
        EXPECTED,
        "as nobody, load_dataset('json') of a 24 MB JSONL in /tmp with HF_HOME on a btrfs file"
        " system with an 8 MiB qgroup limit (the Arrow cache is written there)",
        quota_mib=8,
        run_as="nobody",
        env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "pip_install_target",
        EXPECTED,
        f"as nobody, pip install --no-index --no-deps --target site/ of the {SYMPY} wheel"
        " (downloaded beforehand) into a btrfs file system with an 8 MiB qgroup limit",
        quota_mib=8,
        run_as="nobody",
        prepare="prepare",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "state_dict_mismatch_under_quota",
        (),
        "as nobody, under the same 8 MiB qgroup limit, not reached: a 64-wide MLP's checkpoint"
        " (17 kB) loaded into a 128-wide one, the user's own size mismatch",
        quota_mib=8,
        run_as="nobody",
        timeout=60,
    ),
)

ENV = "SHOP_R1_FAULT_SYMPY_WHEEL"


def prepare(cache: Path) -> dict[str, str]:
    """The sympy wheel, downloaded once. `nobody` must read it, so it goes under the
    shared temp-dir cache (opened to all), not a test session's private one."""
    del cache
    out = default_cache() / "sympy-wheel"
    wheel = download_wheel(SYMPY, out)
    for p in (default_cache(), out):
        p.chmod(0o755)
    wheel.chmod(0o644)
    return {ENV: str(wheel)}


def _mlp(width: int):
    import torch

    return torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)])


def torch_save_checkpoint(work: Path) -> None:
    import torch

    model = _mlp(1024)
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 1024)).sum().backward()
    opt.step()
    out = work / "checkpoint-500"
    out.mkdir()
    torch.save(model.state_dict(), out / "model.pt")
    torch.save(opt.state_dict(), out / "optimizer.pt")
    print("saved", out)


def save_pretrained_model(work: Path) -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=8192,
        hidden_size=512,
        intermediate_size=1024,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
    )
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(work / "output")
    print("saved", work / "output")


def datasets_cache_write(work: Path) -> None:
    import json
    import tempfile

    from datasets import load_dataset

    src = Path(tempfile.mkdtemp()) / "train.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for i in range(60_000):
            row = {"prompt": f"Question {i}: " + "lorem ipsum " * 16, "completion": "x" * 200}
            f.write(json.dumps(row) + "\n")
    ds = load_dataset("json", data_files=str(src), split="train")
    print(len(ds))


def pip_install_target(work: Path) -> None:
    import os

    from pip._internal.cli.main import main as pip_main  # `python -m pip`, in this process

    # (the venv's python is a link into /root, which nobody may not follow to exec it)
    argv = ["install", "--no-index", "--no-deps", "--disable-pip-version-check"]
    sys.exit(pip_main([*argv, "--target", str(work / "site"), os.environ[ENV]]))


def state_dict_mismatch_under_quota(work: Path) -> None:
    import torch

    torch.save(_mlp(64).state_dict(), work / "model.pt")
    _mlp(128).load_state_dict(torch.load(work / "model.pt"))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
