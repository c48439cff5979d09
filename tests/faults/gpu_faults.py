"""GPU failures caused for real on an NVIDIA machine: the drivers that cause them.

`python -m tests.faults.gpu_faults <case> <workdir>` runs one driver (torchrun runs it
once per rank); the cases themselves (what each does, its expected codes, how it is
launched) are `tests/faults/gpu_cases.py`, and `tests/faults/gpu_record.py` launches
each and records what it printed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from .gpu_cases import CASES


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def ranks_one_gpu(work: Path) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)  # the bug: every rank on cuda:0 instead of LOCAL_RANK
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda:0")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {_rank()}: all_reduce gave {t.item()}", flush=True)
    dist.destroy_process_group()


def cuda_oom(work: Path) -> None:
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    torch.empty(int(total * 1.5), dtype=torch.uint8, device="cuda:0")


def gpus_hidden_to_cuda(work: Path) -> None:
    import torch

    print(f"torch.cuda.is_available(): {torch.cuda.is_available()}", flush=True)
    print(f"torch.cuda.device_count(): {torch.cuda.device_count()}", flush=True)
    model = torch.nn.Linear(8, 8)
    model.to("cuda")


def gpus_hidden_trl_bf16(work: Path) -> None:
    from trl import SFTConfig

    SFTConfig(output_dir=str(work / "out"), bf16=True, report_to="none")


def nccl_timeout(work: Path) -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    rank = _rank()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl", timeout=timedelta(seconds=10))
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)  # together: the communicator exists
    torch.cuda.synchronize()
    if rank == 1:
        time.sleep(80)  # the bug: this rank never reaches the second collective
        return
    dist.all_reduce(t)
    torch.cuda.synchronize()


def trl_several_gpus_one_process(work: Path) -> None:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from shop_r1.tiny import make_tiny_model_and_tokenizer

    texts = ["search for running shoes", "click the first result", "add to cart", "terminate"]
    model, tokenizer = make_tiny_model_and_tokenizer(texts * 16, vocab_size=256)
    args = SFTConfig(output_dir=str(work / "out"), max_steps=1, report_to="none")
    SFTTrainer(  # the bug: `python script.py` where `accelerate launch` was meant
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"text": texts * 4}),
        processing_class=tokenizer,
    )
    print("SFTTrainer built in one process", flush=True)


def vllm_memory_taken(work: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM
    from vllm import LLM

    config = LlamaConfig(
        vocab_size=1024,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
    )
    LlamaForCausalLM(config).save_pretrained(work / "tiny-llama")
    LLM(
        model=str(work / "tiny-llama"),
        skip_tokenizer_init=True,
        gpu_memory_utilization=0.9,
        max_model_len=128,
        enforce_eager=True,
    )


def ranks_exceed_gpus(work: Path) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def context_on_full_gpu(work: Path) -> None:
    import torch

    x = torch.ones(1024, 1024, device="cuda:0")
    print(f"allocated {x.numel() * 4} bytes on cuda:0", flush=True)
    y = x @ x
    torch.cuda.synchronize()
    print(f"matmul gave {y[0, 0].item()}", flush=True)


def oom_gpu_held_by_other(work: Path) -> None:
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    torch.empty(int(total * 0.4), dtype=torch.uint8, device="cuda:0").fill_(1)


def alloc_conf_typo(work: Path) -> None:
    import torch

    torch.ones(8, device="cuda:0")
    torch.cuda.synchronize()


def nccl_socket_ifname_missing(work: Path) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    dist.destroy_process_group()


def compile_no_c_compiler(work: Path) -> None:
    # Fresh caches: a launcher Triton compiled earlier on this machine would need no compiler.
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor-cache")
    os.environ.pop("CC", None)
    import torch

    @torch.compile
    def gelu_scale(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x) * 2.0

    print(gelu_scale(torch.randn(1024, device="cuda")).sum().item(), flush=True)


def vllm_max_len_over_kv_cache(work: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM
    from vllm import LLM

    max_len = 4 * 1024 * 1024
    config = LlamaConfig(
        vocab_size=1024,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_len,
    )
    LlamaForCausalLM(config).save_pretrained(work / "tiny-llama")
    LLM(
        model=str(work / "tiny-llama"),
        skip_tokenizer_init=True,
        gpu_memory_utilization=0.1,
        max_model_len=max_len,
        enforce_eager=True,
    )


def _all_reduce_two_gpus(numel: int) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    t = torch.ones(numel, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {_rank()}: all_reduce gave {t[0].item()}", flush=True)
    dist.destroy_process_group()


def nccl_small_shm(work: Path) -> None:
    _all_reduce_two_gpus(16 * 2**20)


def nccl_small_shm_no_p2p(work: Path) -> None:
    _all_reduce_two_gpus(16 * 2**20)


def nccl_net_ib_forced(work: Path) -> None:
    _all_reduce_two_gpus(1024)


def visible_devices_out_of_range(work: Path) -> None:
    gpus_hidden_to_cuda(work)


def liger_sft_no_c_compiler(work: Path) -> None:
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
    os.environ.pop("CC", None)
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from shop_r1.tiny import make_tiny_model_and_tokenizer

    texts = ["search for running shoes", "click the first result", "add to cart", "terminate"]
    model, tokenizer = make_tiny_model_and_tokenizer(texts * 16, vocab_size=256)
    args = SFTConfig(
        output_dir=str(work / "out"),
        use_liger_kernel=True,
        per_device_train_batch_size=4,
        max_steps=2,
        bf16=True,
        report_to="none",
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"text": texts * 4}),
        processing_class=tokenizer,
    )
    trainer.train()
    print("trained 2 steps with Liger's kernels", flush=True)


def _tiny_qwen(work: Path) -> Path:
    """A tiny random Qwen2 with its tokenizer, saved where vLLM and TRL load it."""
    from shop_r1.tiny import make_tiny_model_and_tokenizer

    texts = ["search for running shoes", "click the first result", "add to cart", "terminate"]
    model, tokenizer = make_tiny_model_and_tokenizer(texts * 16, vocab_size=256)
    model.save_pretrained(work / "tiny-qwen2")
    tokenizer.save_pretrained(work / "tiny-qwen2")
    return work / "tiny-qwen2"


def _grpo(work: Path, **vllm: object) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    texts = ["search for running shoes", "click the first result", "add to cart", "terminate"]
    args = GRPOConfig(
        output_dir=str(work / "out"),
        use_vllm=True,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        max_steps=1,
        report_to="none",
        **vllm,
    )
    trainer = GRPOTrainer(
        model=str(_tiny_qwen(work)),
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_dict({"prompt": texts * 4}),
    )
    trainer.train()


def trl_vllm_server_unreachable(work: Path) -> None:
    _grpo(
        work,
        vllm_mode="server",
        vllm_server_host="127.0.0.1",
        vllm_server_port=8765,
        vllm_server_timeout=15,
    )


def vllm_tp_exceeds_gpus(work: Path) -> None:
    from vllm import LLM

    LLM(model=str(_tiny_qwen(work)), tensor_parallel_size=2, enforce_eager=True)


def vllm_serve_port_busy(work: Path) -> None:
    import socket
    import subprocess

    model = _tiny_qwen(work)
    busy = socket.socket()
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("0.0.0.0", 8766))
    busy.listen()
    cmd = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", str(model)]
    cmd += ["--port", "8766", "--enforce-eager", "--gpu-memory-utilization", "0.3"]
    code = subprocess.call(cmd, timeout=80)
    busy.close()
    sys.exit(code)


def grpo_colocate_after_training_memory(work: Path) -> None:
    import torch

    state = torch.empty(20 * 2**30, dtype=torch.uint8, device="cuda")
    state.fill_(1)
    _grpo(work, vllm_mode="colocate", vllm_gpu_memory_utilization=0.9)


def cuda_under_vmem_limit(work: Path) -> None:
    import torch

    x = torch.ones(1024, 1024, device="cuda:0")
    print(f"allocated on cuda:0: {x.sum().item()}", flush=True)


def grpo_several_gpus_use_vllm(work: Path) -> None:
    grpo_use_vllm_not_installed(work)


def grpo_use_vllm_not_installed(work: Path) -> None:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from shop_r1.tiny import make_tiny_model_and_tokenizer

    texts = ["search for running shoes", "click the first result", "add to cart", "terminate"]
    model, tokenizer = make_tiny_model_and_tokenizer(texts * 16, vocab_size=256)
    args = GRPOConfig(
        output_dir=str(work / "out"),
        use_vllm=True,
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=1,
        report_to="none",
    )
    GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_dict({"prompt": texts * 4}),
        processing_class=tokenizer,
    )


def _tiny_qwen_config(work: Path) -> Path:
    """A tiny random Qwen2 saved from a config (no download), for from_pretrained."""
    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    out = work / "tiny-qwen2-config"
    model_from_config_dict(tiny_config_dict(1024)).save_pretrained(out)
    return out


def flash_attention_2_not_installed(work: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        _tiny_qwen_config(work),
        attn_implementation="flash_attention_2",
        dtype=torch.bfloat16,
        device_map="cuda",
    )
    print(f"loaded with {model.config._attn_implementation}", flush=True)


def bitsandbytes_4bit_not_installed(work: Path) -> None:
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    model = AutoModelForCausalLM.from_pretrained(
        _tiny_qwen_config(work),
        quantization_config=BitsAndBytesConfig(load_in_4bit=True),
        device_map="cuda",
    )
    print(f"loaded on {model.device}", flush=True)


ACCELERATE_DEEPSPEED_CONFIG = """\
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  zero_stage: 2
  gradient_accumulation_steps: 1
  offload_optimizer_device: none
  offload_param_device: none
mixed_precision: bf16
num_machines: 1
num_processes: 1
machine_rank: 0
main_training_function: main
use_cpu: false
"""

ACCELERATE_TRAIN_SCRIPT = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(64, 8)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, opt = accelerator.prepare(model, opt)
for _ in range(3):
    loss = model(torch.randn(4, 64, device=accelerator.device)).float().pow(2).mean()
    accelerator.backward(loss)
    opt.step()
    opt.zero_grad()
accelerator.print("trained 3 steps")
"""


def accelerate_deepspeed_config_not_installed(work: Path) -> None:
    _accelerate_launch(work, ACCELERATE_DEEPSPEED_CONFIG, "ds_zero2.yaml")


def _llama_on_cuda() -> Any:
    """A 21M-parameter Llama on cuda:0 (about 80 MiB of float32 weights)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=8192,
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=8,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).to("cuda:0")


def torch_save_cuda_checkpoint_disk_full(work: Path) -> None:
    import torch

    model = _llama_on_cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 8192, (2, 64), device="cuda:0")
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    (work / "checkpoint-100").mkdir()
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 100}
    torch.save(state, work / "checkpoint-100" / "training_state.pt")
    print("checkpoint saved", flush=True)


def save_pretrained_cuda_disk_full(work: Path) -> None:
    model = _llama_on_cuda()
    model.save_pretrained(work / "checkpoint-500")
    print("checkpoint saved", flush=True)


class _Images:
    """128 images of 3x512x512 float32 (3 MiB each), as a vision or video pipeline loads."""

    def __len__(self) -> int:
        return 128

    def __getitem__(self, i: int) -> object:
        import torch

        return torch.full((3, 512, 512), float(i))


def dataloader_pin_memory_small_shm(work: Path) -> None:
    from torch.utils.data import DataLoader

    loader = DataLoader(_Images(), batch_size=8, num_workers=4, pin_memory=True)
    total = 0.0
    for batch in loader:
        total += batch.to("cuda:0", non_blocking=True).sum().item()
    print(f"read every batch: {total}", flush=True)


def user_labels_out_of_range_cuda(work: Path) -> None:
    import torch

    logits = torch.randn(8, 10, device="cuda:0")
    labels = torch.tensor([0, 1, 2, 3, 4, 5, 9, 10], device="cuda:0")  # the bug: 10 classes
    loss = torch.nn.functional.cross_entropy(logits, labels)
    print(f"loss {loss.item()}", flush=True)


def user_tensor_left_on_cpu(work: Path) -> None:
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    model.to("cuda:0")
    x = torch.randn(4, 32)  # the bug: never moved to the model's device
    print(model(x).sum().item(), flush=True)


def user_shape_mismatch_cuda(work: Path) -> None:
    import torch

    model = torch.nn.Linear(32, 8).to("cuda:0")
    x = torch.randn(4, 16, device="cuda:0")  # the bug: 16 features, the layer takes 32
    print(model(x).sum().item(), flush=True)


ADD_ONE_CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>

__global__ void add_one_kernel(float* x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

torch::Tensor add_one(torch::Tensor x) {
  int64_t n = x.numel();
  add_one_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return x;
}
"""


def extension_built_for_other_arch(work: Path) -> None:
    import torch
    from torch.utils.cpp_extension import load_inline

    ext = load_inline(
        name="add_one_ext",
        cpp_sources="torch::Tensor add_one(torch::Tensor x);",
        cuda_sources=ADD_ONE_CUDA,
        functions=["add_one"],
        build_directory=str(work),
    )
    x = ext.add_one(torch.zeros(1024, device="cuda:0"))
    print(f"add_one gave {x.sum().item()}", flush=True)


def _touch_cuda_in_child() -> None:
    import torch

    print(f"child: {torch.ones(4, device='cuda:0').sum().item()}", flush=True)


def cuda_in_forked_child(work: Path) -> None:
    import multiprocessing

    import torch

    print(f"parent: {torch.ones(4, device='cuda:0').sum().item()}", flush=True)
    child = multiprocessing.get_context("fork").Process(target=_touch_cuda_in_child)
    child.start()
    child.join()
    sys.exit(child.exitcode)


class _CudaSamples:
    """A Dataset that builds each sample on the GPU (what the workers must not do)."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> object:
        import torch

        return torch.full((16,), float(i), device="cuda:0")


def dataloader_workers_touch_cuda(work: Path) -> None:
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(16, 4).to("cuda:0")
    loader = DataLoader(_CudaSamples(), batch_size=8, num_workers=2, multiprocessing_context="fork")
    for batch in loader:
        print(model(batch).sum().item(), flush=True)


def visible_devices_unknown_uuid(work: Path) -> None:
    gpus_hidden_to_cuda(work)


def memory_fraction_oom(work: Path) -> None:
    import torch

    torch.cuda.set_per_process_memory_fraction(0.05, device=0)
    x = torch.empty(8 * 2**30, dtype=torch.uint8, device="cuda:0")
    print(f"allocated {x.numel() / 2**30:.0f} GiB", flush=True)


def user_log_of_negative_nan_cuda(work: Path) -> None:
    import torch

    torch.autograd.set_detect_anomaly(True)
    torch.manual_seed(0)
    w = torch.randn(64, 1, device="cuda:0", requires_grad=True)
    x = torch.randn(32, 64, device="cuda:0")
    target = torch.ones(32, 1, device="cuda:0")
    # the bug: sqrt of (target - prediction), which goes negative for large predictions
    loss = torch.sqrt(target - x @ w).mean()
    print(f"loss {loss.item()}", flush=True)
    loss.backward()
    print(f"grad norm {w.grad.norm().item()}", flush=True)


def user_embedding_index_out_of_range_cuda(work: Path) -> None:
    import torch

    torch.manual_seed(0)
    embed = torch.nn.Embedding(1000, 64).to("cuda:0")
    head = torch.nn.Linear(64, 1000).to("cuda:0")
    ids = torch.randint(0, 1000, (8, 128), device="cuda:0")
    ids[3, 17] = 1000  # the bug: the tokenizer's vocabulary is larger than the model's
    logits = head(embed(ids))
    loss = torch.nn.functional.cross_entropy(logits.view(-1, 1000), ids.view(-1).clamp(max=999))
    print(f"loss {loss.item()}", flush=True)


def _local_cuda() -> int:
    import torch

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    return local


def user_ddp_unused_parameter(work: Path) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    local = _local_cuda()
    dist.init_process_group("nccl")

    class TwoHeads(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Linear(32, 32)
            self.head = torch.nn.Linear(32, 1)
            self.aux_head = torch.nn.Linear(32, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(torch.relu(self.body(x)))  # the bug: aux_head is never used

    model = DistributedDataParallel(TwoHeads().cuda(), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 32, device="cuda")).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"rank {_rank()} step {step}: loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


def _mismatched_all_reduces() -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    _local_cuda()
    dist.init_process_group("nccl", timeout=timedelta(seconds=10))
    rank = _rank()
    # the bug: each rank sizes its gradient buffer from its own (rank-dependent) model
    grads = torch.ones(1024 if rank == 0 else 4 * 2**20, device="cuda")
    for step in range(3):
        dist.all_reduce(grads)
        torch.cuda.synchronize()
        print(f"rank {rank} step {step}: {grads[0].item()}", flush=True)
    dist.destroy_process_group()


def user_collective_mismatch_detail(work: Path) -> None:
    _mismatched_all_reduces()


def collective_mismatch_hang(work: Path) -> None:
    _mismatched_all_reduces()


def user_rank_raises_mid_step(work: Path) -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    _local_cuda()
    dist.init_process_group("nccl", timeout=timedelta(seconds=10))
    rank = _rank()
    shard: list[dict[str, Any]] = [{"text": "add to cart", "label": 1}] * 3
    if rank == 1:
        shard[1] = {"text": "terminate"}  # the bug: a record without its label
    for step, record in enumerate(shard):
        y = torch.tensor([float(record["label"])], device="cuda")
        dist.all_reduce(y)
        torch.cuda.synchronize()
        print(f"rank {rank} step {step}: {y.item()}", flush=True)
    dist.destroy_process_group()


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]


def two_gpu_all_reduce(work: Path) -> None:
    _all_reduce_two_gpus(1024)


PORT_HOLDER = (
    "import socket, time\n"
    "s = socket.socket()\n"
    "s.bind(('0.0.0.0', 29561))\n"
    "s.listen()\n"
    "print('listening', flush=True)\n"
    "time.sleep(120)\n"
)


def torchrun_master_port_taken(work: Path) -> None:
    import subprocess

    holder = subprocess.Popen([sys.executable, "-c", PORT_HOLDER], stdout=subprocess.PIPE)
    assert holder.stdout is not None
    if b"listening" not in holder.stdout.readline():
        sys.exit("the port holder did not start")
    launch = ["--nnodes=1", "--nproc-per-node=2", "--master-addr=127.0.0.1"]
    argv = _torchrun(*launch, "--master-port=29561", "-m", "tests.faults.gpu_faults")
    print("$ torchrun --nproc-per-node 2 --master-port 29561 train.py", flush=True)
    code = subprocess.call([*argv, "two_gpu_all_reduce", str(work)], timeout=50)
    holder.kill()
    sys.exit(code)


def hold_rank_gpu(work: Path) -> None:
    """One rank of the first job: 70% of its GPU held, NCCL up, then waits."""
    import torch
    import torch.distributed as dist

    local = _local_cuda()
    dist.init_process_group("nccl")
    total = torch.cuda.get_device_properties(local).total_memory
    held = torch.empty(int(total * 0.7), dtype=torch.uint8, device="cuda")
    held.fill_(1)
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"holding {held.numel() / 2**30:.1f} GiB on cuda:{local}", flush=True)
    time.sleep(300)


def train_rank_step(work: Path) -> None:
    """One rank of the second job: NCCL up, then 40% of its card for its model state."""
    import torch
    import torch.distributed as dist

    local = _local_cuda()
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    total = torch.cuda.get_device_properties(local).total_memory
    state = torch.empty(int(total * 0.4), dtype=torch.uint8, device="cuda")
    state.fill_(1)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {_rank()}: model state on cuda:{local}", flush=True)
    dist.destroy_process_group()


def second_job_same_gpus(work: Path) -> None:
    import subprocess
    import threading

    faults = ["--standalone", "--nproc-per-node=2", "-m", "tests.faults.gpu_faults"]
    first = subprocess.Popen(
        _torchrun(*faults, "hold_rank_gpu", str(work)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert first.stdout is not None
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(first.stdout.readline, b"")))
    reader.daemon = True
    reader.start()
    deadline = time.monotonic() + 45
    while sum(b"holding" in line for line in lines) < 2:
        if time.monotonic() > deadline or first.poll() is not None:
            first.kill()
            text = b"".join(lines).decode(errors="replace")
            sys.exit(f"the first job did not hold both GPUs; it printed:\n{text}")
        time.sleep(0.2)
    try:
        code = subprocess.call(_torchrun(*faults, "train_rank_step", str(work)), timeout=40)
    finally:
        first.terminate()
        first.wait(timeout=20)
    sys.exit(code)


def alloc_conf_bad_value(work: Path) -> None:
    alloc_conf_typo(work)


def device_map_gpu_past_visible(work: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    print(f"torch.cuda.device_count(): {torch.cuda.device_count()}", flush=True)
    # the config's placement, written for a machine whose GPU 1 holds the policy
    model = AutoModelForCausalLM.from_pretrained(_tiny_qwen_config(work), device_map={"": 1})
    print(f"loaded on {model.device}", flush=True)


ACCELERATE_FSDP_FP8_CONFIG = """\
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_version: 2
  fsdp_auto_wrap_policy: NO_WRAP
  fsdp_reshard_after_forward: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
mixed_precision: fp8
num_machines: 1
num_processes: 1
machine_rank: 0
main_training_function: main
use_cpu: false
"""


def _accelerate_launch(work: Path, config_text: str, shown: str) -> None:
    import shutil
    import subprocess

    config, script = work / shown, work / "train.py"
    config.write_text(config_text, encoding="utf-8")
    script.write_text(ACCELERATE_TRAIN_SCRIPT, encoding="utf-8")
    beside = Path(sys.executable).parent / "accelerate"
    accelerate = str(beside) if beside.exists() else shutil.which("accelerate") or "accelerate"
    argv = [accelerate, "launch", "--config_file", str(config), str(script)]
    print(f"$ accelerate launch --config_file {shown} train.py", flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def accelerate_fsdp_fp8_no_backend(work: Path) -> None:
    _accelerate_launch(work, ACCELERATE_FSDP_FP8_CONFIG, "fsdp_fp8.yaml")


def _compile_gelu_on_cuda() -> None:
    import torch

    @torch.compile
    def gelu_scale(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x) * 2.0

    print(gelu_scale(torch.randn(1024, device="cuda")).sum().item(), flush=True)


def _fresh_inductor_cache() -> None:
    import tempfile

    # on the real disk, fresh: a launcher or kernel compiled earlier would need no write
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cache-")


def compile_cc_points_nowhere(work: Path) -> None:
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor-cache")
    _compile_gelu_on_cuda()


def triton_cache_read_only(work: Path) -> None:
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")  # work: a read-only mount
    _fresh_inductor_cache()
    _compile_gelu_on_cuda()


def _fill(directory: Path) -> None:
    """Write a filler file until the file system has no space left (earlier runs' output)."""
    import errno

    fd = os.open(directory / "filler.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    block = b"\0" * 65536
    try:
        while True:
            os.write(fd, block)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    left = os.statvfs(directory)
    print(f"{directory.name}: {left.f_bavail * left.f_frsize} bytes free", flush=True)


def triton_cache_disk_full(work: Path) -> None:
    _fill(work)
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
    _fresh_inductor_cache()
    _compile_gelu_on_cuda()


def user_lm_labels_past_vocab_blocking(work: Path) -> None:
    import torch

    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    torch.manual_seed(0)
    model = model_from_config_dict(tiny_config_dict(1024)).to("cuda:0")
    ids = torch.randint(0, 1024, (2, 32), device="cuda:0")
    labels = ids.clone()
    labels[1, 5] = 1030  # the bug: ids from a tokenizer with added tokens the model lacks
    loss = model(input_ids=ids, labels=labels).loss
    print(f"loss {loss.item()}", flush=True)


def user_triton_kernel_out_of_bounds(work: Path) -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)  # the bug: no mask

    n, block = 2**20, 1024
    x = torch.randn(n, device="cuda:0")
    out = torch.empty_like(x)
    scale_kernel[(n,)](x, out, BLOCK=block)  # the bug: n programs, cdiv(n, block) meant
    torch.cuda.synchronize()
    print(f"scaled: {out.sum().item()}", flush=True)


def user_linear_dtype_mismatch_cuda(work: Path) -> None:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8).to("cuda:0", torch.float16)
    x = torch.randn(4, 64, device="cuda:0")  # the bug: the batch stays float32, no autocast
    print(model(x).sum().item(), flush=True)


def user_attention_scores_shapes_cuda(work: Path) -> None:
    import torch

    torch.manual_seed(0)
    q = torch.randn(2, 4, 128, 32, device="cuda:0")  # batch, heads, tokens, head size
    k = torch.randn(2, 4, 128, 32, device="cuda:0")
    scores = q @ k / 32**0.5  # the bug: k.transpose(-2, -1) meant
    print(scores.softmax(-1).sum().item(), flush=True)


def user_gather_out_of_range_then_cublas(work: Path) -> None:
    import torch

    torch.manual_seed(0)
    proj = torch.nn.Linear(64, 64).to("cuda:0")
    head = torch.nn.Linear(64, 16).to("cuda:0")
    h = proj(torch.randn(32, 64, device="cuda:0"))  # cuBLAS's handle is set up here
    torch.cuda.synchronize()
    pos = torch.randint(0, 32, (8,), device="cuda:0")
    pos[5] = 32  # the bug: a position one past the sequence
    picked = torch.gather(h, 0, pos[:, None].expand(-1, 64))
    time.sleep(0.5)  # the host builds the next batch meanwhile
    loss = head(picked).logsumexp(-1).mean()
    print(f"loss {loss.item()}", flush=True)


def user_fp16_loss_overflow_no_scaler(work: Path) -> None:
    import torch

    torch.manual_seed(0)
    mlp = [torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)]
    model = torch.nn.Sequential(*mlp).to("cuda:0", torch.float16)  # the bug: pure fp16
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        x = torch.randn(64, 256, device="cuda:0", dtype=torch.float16) * 20
        target = torch.randn(64, 1, device="cuda:0", dtype=torch.float16) * 500
        loss = torch.nn.functional.mse_loss(model(x), target)
        print(f"step {step}: loss {loss.item()}", flush=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1e4, error_if_nonfinite=True)
        opt.step()
        opt.zero_grad()


class _Records:
    """Labelled records, one of which lost its label (the user's data)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = [
            {"text": f"add item {i} to cart", "label": i % 2} for i in range(64)
        ]
        self.rows[37] = {"text": "terminate"}  # the bug: a record without its label

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> object:
        import torch

        row = self.rows[i]
        return torch.tensor([float(len(row["text"]))]), torch.tensor(row["label"])


def user_dataloader_worker_keyerror(work: Path) -> None:
    import torch
    from torch.utils.data import DataLoader

    model = torch.nn.Linear(1, 2).to("cuda:0")
    loader = DataLoader(_Records(), batch_size=8, num_workers=2)
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x.to("cuda:0")), y.to("cuda:0"))
        print(f"step {step}: loss {loss.item():.4f}", flush=True)


def user_compiled_forward_keyerror(work: Path) -> None:
    import torch

    class ScaledHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(64, 64)
            self.scales = {"small": 0.5, "large": 2.0}

        def forward(self, x: torch.Tensor, size: str) -> torch.Tensor:
            return self.proj(x) * self.scales[size]

    model = torch.compile(ScaledHead().to("cuda:0"), fullgraph=True)
    print(model(torch.randn(2, 64, device="cuda:0"), "large").sum().item(), flush=True)
    # the bug: a size the table does not have
    print(model(torch.randn(2, 64, device="cuda:0"), "medium").sum().item(), flush=True)


def user_checkpoint_inputs_no_grad(work: Path) -> None:
    import torch
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    embed = torch.nn.Embedding(1000, 64).to("cuda:0").requires_grad_(False)  # frozen
    blocks = [torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU()) for _ in range(2)]
    layers = torch.nn.ModuleList(blocks).to("cuda:0")  # trainable
    head = torch.nn.Linear(64, 1000).to("cuda:0").requires_grad_(False)  # frozen
    ids = torch.randint(0, 1000, (4, 32), device="cuda:0")
    h = embed(ids)  # the bug: no input needs grad (enable_input_require_grads not called)
    for layer in layers:
        h = checkpoint(layer, h, use_reentrant=True)
    loss = torch.nn.functional.cross_entropy(head(h).view(-1, 1000), ids.view(-1))
    print(f"loss {loss.item():.4f}", flush=True)
    loss.backward()
    print(f"grad {layers[0][0].weight.grad.norm().item()}", flush=True)


def save_cuda_checkpoint(work: Path) -> None:
    """The first process: a state_dict saved from cuda:0 (a GPU job's checkpoint)."""
    import torch

    model = torch.nn.Linear(64, 8).to("cuda:0")
    torch.save(model.state_dict(), work / "model.pt")
    print(f"saved {work / 'model.pt'} from {model.weight.device}", flush=True)


def cuda_checkpoint_loaded_gpus_hidden(work: Path) -> None:
    import subprocess

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0"}
    argv = [sys.executable, "-m", "tests.faults.gpu_faults", "save_cuda_checkpoint", str(work)]
    if subprocess.call(argv, env=env, timeout=40) != 0:
        sys.exit("the first process did not save the checkpoint")
    import torch

    print(f"torch.cuda.is_available(): {torch.cuda.is_available()}", flush=True)
    state = torch.load(work / "model.pt")  # no map_location
    print(f"loaded {len(state)} tensors", flush=True)


def visible_devices_set_after_count(work: Path) -> None:
    import torch

    print(f"torch.cuda.device_count(): {torch.cuda.device_count()}", flush=True)
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # the bug: set after torch counted the GPUs
    model = torch.nn.Linear(8, 8).to("cuda:1")
    print(model(torch.ones(2, 8, device="cuda:1")).sum().item(), flush=True)


def _mlp_step_on_cuda() -> None:
    """What a user's first GPU run does: check CUDA, then one training step on cuda."""
    import torch

    print(f"torch.cuda.is_available(): {torch.cuda.is_available()}", flush=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)
    ).to("cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randint(0, 8, (32,), device="cuda")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"one step on {torch.cuda.get_device_name(0)}: loss {loss.item():.4f}", flush=True)


def train_step_on_cuda(work: Path) -> None:
    _mlp_step_on_cuda()


def uvm_device_hidden(work: Path) -> None:
    _mlp_step_on_cuda()


def gpu_device_node_hidden(work: Path) -> None:
    _mlp_step_on_cuda()


def nvidiactl_hidden(work: Path) -> None:
    _mlp_step_on_cuda()


def cublas_libs_hidden(work: Path) -> None:
    _mlp_step_on_cuda()


def cudnn_sublibs_hidden(work: Path) -> None:
    import torch

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 10),
    ).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (8,), device="cuda")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"conv step: loss {loss.item():.4f}", flush=True)


def nccl_lib_hidden(work: Path) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda:0")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"all_reduce gave {t.item()}", flush=True)
    dist.destroy_process_group()


def nvrtc_builtins_hidden(work: Path) -> None:
    import math

    import torch

    torch.manual_seed(0)
    theta = torch.rand(256, device="cuda") * 2 * math.pi
    mu = torch.zeros(1, device="cuda", requires_grad=True)
    log_kappa = torch.zeros(1, device="cuda", requires_grad=True)
    kappa = log_kappa.exp()
    # log I0(kappa) = log(i0e(kappa)) + kappa: the von Mises normaliser
    nll = -kappa * torch.cos(theta - mu) + torch.log(torch.special.i0e(kappa)) + kappa
    loss = (nll + math.log(2 * math.pi)).mean()
    loss.backward()
    print(f"von Mises NLL {loss.item():.4f}, grad {log_kappa.grad.item():.4f}", flush=True)


CUDA_STUB_GLOBS = (
    "/usr/local/cuda*/targets/*/lib/stubs/libcuda.so",
    "/usr/local/cuda*/lib64/stubs/libcuda.so",
    "{site}/nvidia/*/lib/stubs/libcuda.so",
)


def libcuda_stub_first(work: Path) -> None:
    import glob
    import importlib.util

    spec = importlib.util.find_spec("torch")
    site = str(Path(next(iter(spec.submodule_search_locations or ["."]))).parent) if spec else ""
    stubs = [m for g in CUDA_STUB_GLOBS for m in sorted(glob.glob(g.replace("{site}", site)))]
    if not stubs:
        sys.exit(f"no CUDA stub libcuda.so here ({', '.join(CUDA_STUB_GLOBS)})")
    first = work / "cuda-stubs"
    first.mkdir()
    (first / "libcuda.so.1").symlink_to(stubs[0])
    ld = [str(first), *(d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d)]
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(ld)}
    argv = [sys.executable, "-m", "tests.faults.gpu_faults", "train_step_on_cuda", str(work)]
    os.execve(sys.executable, argv, env)


def triton_ptxas_hidden(work: Path) -> None:
    os.environ.pop("TRITON_PTXAS_PATH", None)  # Triton's bundled one is the only ptxas
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor-cache")
    _compile_gelu_on_cuda()


def user_shape_bug_after_cpu_fallback(work: Path) -> None:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"training on {device}", flush=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)
    ).to(device)
    x = torch.randn(32, 48, device=device)  # the bug: 48 features where the model takes 64
    print(model(x).sum().item(), flush=True)


def triton_cache_noexec(work: Path) -> None:
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")  # work: a noexec tmpfs
    _fresh_inductor_cache()
    _compile_gelu_on_cuda()


def user_conv_channels_mismatch_cudnn(work: Path) -> None:
    import torch

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3)
    ).to("cuda")
    x = torch.randn(8, 1, 32, 32, device="cuda")  # the bug: grayscale images, 1 channel
    print(model(x).mean().item(), flush=True)


def user_matmul_shapes_cublas(work: Path) -> None:
    import torch

    x = torch.randn(32, 96, device="cuda")
    w = torch.randn(64, 128, device="cuda", requires_grad=True)  # the bug: 64 rows, not 96
    print((x @ w).sum().item(), flush=True)


# Drivers the cases start themselves (a first job, a second job's ranks), not cases.
INNER = (
    "two_gpu_all_reduce",
    "hold_rank_gpu",
    "train_rank_step",
    "save_cuda_checkpoint",
    "train_step_on_cuda",
)


def hold_memory(share: float) -> None:
    """Hold `share` of GPU 0's total memory until killed (the other process)."""
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    held = torch.empty(int(total * share), dtype=torch.uint8, device="cuda:0")
    held.fill_(1)
    print(f"holding {held.numel() / 2**30:.1f} GiB on cuda:0", flush=True)
    time.sleep(600)


def hold_memory_leaving(mib: int) -> None:
    """Hold all of GPU 0's free memory but `mib` MiB until killed (the other process)."""
    import torch

    free, _ = torch.cuda.mem_get_info(0)
    held = torch.empty(free - mib * 2**20, dtype=torch.uint8, device="cuda:0")
    held.fill_(1)
    left, _ = torch.cuda.mem_get_info(0)
    print(
        f"holding {held.numel() / 2**30:.1f} GiB on cuda:0, {left / 2**20:.0f} MiB free", flush=True
    )
    time.sleep(600)


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[1] == "hold_memory":
        hold_memory(float(argv[2]))
        return
    if len(argv) == 3 and argv[1] == "hold_memory_leaving":
        hold_memory_leaving(int(argv[2]))
        return
    names = [c.name for c in CASES]
    if len(argv) != 3 or argv[1] not in (*names, *INNER):
        sys.exit(f"usage: {argv[0]} {{{','.join(names)}}} WORKDIR")
    globals()[argv[1]](Path(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
