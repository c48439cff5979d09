"""A launcher (torchrun, accelerate launch) started on this CPU machine with GPU-only settings.

The driver writes the training script into the case's directory and runs the launcher
as a user does; what the launcher and its ranks print is the recording, and the
launcher's exit status is the driver's. `accelerate launch --mixed_precision fp16` (or
bf16) and `--multi_gpu --num_processes 2` with a device-agnostic script (its own loop or
a Trainer without bf16/fp16 arguments) do not fail here: accelerate falls back to the
CPU, so they are not cases; a Trainer script that also sets bf16=True is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "launcher_config"
PORT = 29523
CASES = (
    FaultCase(
        FAMILY,
        "torchrun_nccl",
        ("TORCH_CPU_ONLY_BUILD",),
        "torchrun --nproc-per-node 2 of a script calling init_process_group('nccl'), under"
        " the CPU-only torch build",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "torchrun_nproc_gpu",
        # what it prints (torch found no GPU) names no build: a CUDA build with hidden GPUs
        # prints the same, so the log alone reads TORCH_CUDA_UNAVAILABLE (a +cpu in the log
        # makes TORCH_CPU_ONLY_BUILD lead)
        ("TORCH_CPU_ONLY_BUILD", "TORCH_CUDA_UNAVAILABLE"),
        "torchrun --nproc-per-node gpu (one process per GPU) on a machine whose torch sees none",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "accelerate_multi_gpu_device_map",
        # what it prints (torch found no GPU) names no build: a CUDA build with hidden GPUs
        # prints the same, so the log alone reads TORCH_CUDA_UNAVAILABLE (a +cpu in the log
        # makes TORCH_CPU_ONLY_BUILD lead)
        ("TORCH_CPU_ONLY_BUILD", "TORCH_CUDA_UNAVAILABLE"),
        "accelerate launch --multi_gpu --num_processes 2 of a script loading a tiny local model"
        " with device_map={'': accelerator.local_process_index} (TRL's examples' pattern)",
        env={"HF_HUB_OFFLINE": "1"},
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "accelerate_bf16_trainer",
        ("MIXED_PRECISION_NEEDS_GPU",),
        "accelerate launch --num_processes 1 --mixed_precision bf16 of a tiny Trainer script"
        " with TrainingArguments(bf16=True), as configured for a GPU, on this CPU machine",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "accelerate_use_deepspeed",
        ("DEEPSPEED_REQUESTED_NOT_INSTALLED",),
        "accelerate launch --use_deepspeed --num_processes 1 where deepspeed is not installed",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "torchrun_gloo_user_keyerror",
        (),
        "torchrun --nproc-per-node 2 (gloo, init works) of a script whose config lookup"
        " raises KeyError on every rank (the user's own bug)",
        timeout=90,
    ),
)

NCCL_SCRIPT = """\
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = int(os.environ["LOCAL_RANK"])
t = torch.ones(1).to(f"cuda:{rank}")
dist.all_reduce(t)
print(t)
"""

DEVICE_MAP_SCRIPT = """\
import sys

from accelerate import Accelerator
from transformers import AutoModelForCausalLM

accelerator = Accelerator()
model = AutoModelForCausalLM.from_pretrained(
    sys.argv[1], device_map={"": accelerator.local_process_index}
)
accelerator.print(model.device)
"""

TRAIN_SCRIPT = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
for _ in range(3):
    loss = model(torch.randn(4, 8, device=accelerator.device)).sum()
    accelerator.backward(loss)
    opt.step()
    opt.zero_grad()
accelerator.print("done")
"""

BF16_TRAINER_SCRIPT = """\
from datasets import Dataset
from transformers import Trainer, TrainingArguments

from shop_r1.tiny import make_tiny_model_and_tokenizer

texts = ["click buy now", "search for a red lamp"] * 8
model, tokenizer = make_tiny_model_and_tokenizer(texts)
rows = [dict(tokenizer(t), labels=tokenizer(t)["input_ids"]) for t in texts]
args = TrainingArguments(output_dir="out", max_steps=2, per_device_train_batch_size=1, bf16=True)
Trainer(model=model, args=args, train_dataset=Dataset.from_list(rows)).train()
"""

KEYERROR_SCRIPT = """\
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
config = {"learning_rate": 1e-5, "batch_size": 4}
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()}: world {int(t.item())}", flush=True)
steps = config["max_steps"]
"""


def _launch(work: Path, argv: list[str], script: str, *args: str) -> None:
    path = work / "train.py"
    path.write_text(script, encoding="utf-8")
    print("$", " ".join([*argv, "train.py", *args]), flush=True)
    proc = subprocess.run([*argv, str(path), *args], cwd=work, check=False)
    sys.exit(proc.returncode)


def torchrun_nccl(work: Path) -> None:
    argv = ["torchrun", "--nproc-per-node", "2", "--master-port", str(PORT)]
    _launch(work, argv, NCCL_SCRIPT)


def torchrun_nproc_gpu(work: Path) -> None:
    argv = ["torchrun", "--nproc-per-node", "gpu", "--master-port", str(PORT)]
    _launch(work, argv, NCCL_SCRIPT)


def accelerate_multi_gpu_device_map(work: Path) -> None:
    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    model_from_config_dict(tiny_config_dict(512)).save_pretrained(work / "tiny-sft")
    argv = ["accelerate", "launch", "--multi_gpu", "--num_processes", "2"]
    argv += ["--main_process_port", str(PORT)]
    _launch(work, argv, DEVICE_MAP_SCRIPT, str(work / "tiny-sft"))


def accelerate_bf16_trainer(work: Path) -> None:
    argv = ["accelerate", "launch", "--num_processes", "1", "--mixed_precision", "bf16"]
    _launch(work, argv, BF16_TRAINER_SCRIPT)


def accelerate_use_deepspeed(work: Path) -> None:
    argv = ["accelerate", "launch", "--use_deepspeed", "--num_processes", "1"]
    _launch(work, argv, TRAIN_SCRIPT)


def torchrun_gloo_user_keyerror(work: Path) -> None:
    argv = ["torchrun", "--nproc-per-node", "2", "--master-port", str(PORT)]
    _launch(work, argv, KEYERROR_SCRIPT)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
