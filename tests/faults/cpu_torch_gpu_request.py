"""A training script asks this machine's CPU-only torch build for a GPU.

The calls are the ones scripts make before the first step: a model's `.to("cuda")` or
`.cuda()`, `torch.cuda.set_device(local_rank)`, `init_process_group("nccl")` and
`from_pretrained(..., device_map="cuda")` of a tiny model saved on disk (no Hub). torch
here is a `+cpu` wheel, so each is refused by torch itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "cpu_torch_gpu_request"
PORT = 29521
_CPU_ONLY = ("TORCH_CPU_ONLY_BUILD",)
CASES = (
    FaultCase(
        FAMILY,
        "model_to_cuda",
        _CPU_ONLY,
        "a tiny causal LM's .to('cuda') under the CPU-only torch build",
    ),
    FaultCase(
        FAMILY,
        "tensor_cuda",
        _CPU_ONLY,
        "a batch's .cuda() (the input_ids tensor) under the CPU-only torch build",
    ),
    FaultCase(
        FAMILY,
        "set_device",
        _CPU_ONLY,
        "torch.cuda.set_device(int(LOCAL_RANK)) under the CPU-only torch build",
        env={"LOCAL_RANK": "0"},
    ),
    FaultCase(
        FAMILY,
        "init_nccl",
        _CPU_ONLY,
        "init_process_group('nccl') (env://, world size 1) under the CPU-only torch build",
    ),
    FaultCase(
        FAMILY,
        "device_map_cuda",
        _CPU_ONLY,
        "AutoModelForCausalLM.from_pretrained(<a tiny model saved locally>, device_map='cuda')"
        " under the CPU-only torch build",
        env={"HF_HUB_OFFLINE": "1"},
    ),
    FaultCase(
        FAMILY,
        "float_input_ids",
        (),
        "the script picks cpu when CUDA is unavailable, then feeds float input_ids to the"
        " embedding (the user's own dtype bug)",
    ),
)


def _tiny_model():
    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    return model_from_config_dict(tiny_config_dict(512))


def model_to_cuda(work: Path) -> None:
    model = _tiny_model()
    model.to("cuda")


def tensor_cuda(work: Path) -> None:
    import torch

    model = _tiny_model()
    batch = {"input_ids": torch.randint(0, 512, (2, 16))}
    batch = {k: v.cuda() for k, v in batch.items()}
    model(**batch)


def set_device(work: Path) -> None:
    import os

    import torch

    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


def init_nccl(work: Path) -> None:
    import os

    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(PORT), RANK="0", WORLD_SIZE="1")
    dist.init_process_group("nccl")
    dist.all_reduce(torch.ones(1))


def device_map_cuda(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    _tiny_model().save_pretrained(work / "tiny-sft")
    AutoModelForCausalLM.from_pretrained(str(work / "tiny-sft"), device_map="cuda")


def float_input_ids(work: Path) -> None:
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = _tiny_model().to(device)
    ids = torch.randint(0, 512, (2, 16)).float()  # the bug: token ids as floats
    model(input_ids=ids.to(device))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
