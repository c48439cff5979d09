"""The GPU failures the project causes for real on an NVIDIA machine: what each case does,
the codes naming its cause, and how it is launched (ranks, GPUs, a second process holding
memory, a small `/dev/shm`, an address-space limit, device files or libraries taken away
in its own mount namespace, its batch and timeout).

`tests/faults/gpu_faults.py` holds the drivers that cause them; `tests/faults/gpu_record.py`
launches each and records what it printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FAMILY = "gpu"


@dataclass(frozen=True)
class GpuCase:
    name: str
    expected: tuple[str, ...]  # finding codes naming the cause
    cause: str  # what was done to cause it, one line
    ranks: int = 1  # > 1: launched with torchrun --nproc-per-node <ranks>
    min_gpus: int = 1
    env: dict[str, str] = field(default_factory=dict)
    needs: tuple[str, ...] = ()  # modules that must import (vllm, trl)
    holds_memory: float = 0.0  # a second process holds this share of GPU 0 meanwhile
    # > 0: a second process holds all of GPU 0's free memory but this many MiB meanwhile
    leaves_free_mib: int = 0
    # The recorder's batches: each fits one device call (gpu_record.BUDGET_S); batch 2's
    # cases were added after batch 1 was read for signatures and scored at first sight.
    batch: int = 1
    # > 0: run in a private mount namespace whose /dev/shm is a tmpfs of this many MiB
    # (a container's default is 64 MiB), as `unshare -m` + `mount -t tmpfs` make it
    shm_mib: float = 0
    # > 0: an address-space limit (`ulimit -v`, KiB), as HPC schedulers set per job
    vmem_kib: int = 0
    # > 0: the case's work directory is a tmpfs of this many MiB in a private mount
    # namespace (a small scratch or quota-bound disk that a checkpoint fills)
    work_tmpfs_mib: float = 0
    # with work_tmpfs_mib: that tmpfs is mounted read-only (a cache shared `:ro`)
    work_readonly: bool = False
    # with work_tmpfs_mib: that tmpfs is mounted noexec (an HPC node's or container's /tmp)
    work_noexec: bool = False
    # paths the case's private mount namespace takes away, as a host or container that
    # lacks them would (globs, resolved on the machine at launch: `{site}` is the
    # site-packages holding torch, `{ldpath}` each LD_LIBRARY_PATH entry). A file or device
    # node is left out of its directory (tests.faults.gpu_hide: a nodev tmpfs holding bind
    # mounts of everything else replaces the directory, so a node the driver makes there
    # again cannot be opened, as in a container); a directory is covered by an empty tmpfs;
    # `null:` before a glob binds /dev/null over each match instead (a program there cannot
    # be run). A case none of whose globs matches anything is skipped.
    hide: tuple[str, ...] = ()
    timeout: float = 90.0
    # When the log (and the recorded command) cannot tell the cause from another with the
    # same words (torch's `No CUDA GPUs are available` for a missing device node as for an
    # empty CUDA_VISIBLE_DEVICES), the hint it must lead with instead, never at error level;
    # the figures still count it a miss (as tests/faults/case.py's FaultCase.log_reads_as)
    log_reads_as: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{FAMILY}/{self.name}"


CASES = (
    GpuCase(
        "ranks_one_gpu",
        ("RANKS_SHARE_GPU",),
        "torchrun --nproc-per-node 2, both ranks torch.cuda.set_device(0), an NCCL all_reduce",
        ranks=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=60,
    ),
    GpuCase(
        "cuda_oom",
        ("GPU_OUT_OF_MEMORY",),
        "torch.empty of 1.5x the card's total memory on cuda:0",
        timeout=45,
    ),
    GpuCase(
        "gpus_hidden_to_cuda",
        ("TORCH_CUDA_UNAVAILABLE", "CUDA_VISIBLE_DEVICES_HIDES_GPUS"),
        "CUDA_VISIBLE_DEVICES='' then torch.cuda.is_available() and a model's .to('cuda')",
        env={"CUDA_VISIBLE_DEVICES": ""},
        timeout=30,
    ),
    GpuCase(
        "gpus_hidden_trl_bf16",
        ("MIXED_PRECISION_NEEDS_GPU", "CUDA_VISIBLE_DEVICES_HIDES_GPUS"),
        "CUDA_VISIBLE_DEVICES='' then TRL's SFTConfig(bf16=True), as a GPU recipe does",
        env={"CUDA_VISIBLE_DEVICES": ""},
        needs=("trl",),
        timeout=45,
    ),
    GpuCase(
        "nccl_timeout",
        ("NCCL_COLLECTIVE_TIMEOUT",),
        "torchrun 2 ranks on 2 GPUs, init_process_group(timeout=10 s); after one all_reduce"
        " together, rank 1 skips the second",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=60,
    ),
    GpuCase(
        "trl_several_gpus_one_process",
        ("TRL_SEVERAL_GPUS_ONE_PROCESS",),
        "plain python, no launcher, 2 GPUs visible: TRL's SFTTrainer on a tiny model",
        min_gpus=2,
        needs=("trl", "datasets"),
        timeout=60,
    ),
    GpuCase(
        "vllm_memory_taken",
        ("GPU_BUSY_OTHER_PROCESSES", "VLLM_KV_CACHE_NO_MEMORY"),
        "another process holds 60% of GPU 0; vLLM LLM(a tiny random Llama,"
        " gpu_memory_utilization=0.9)",
        needs=("vllm",),
        holds_memory=0.6,
        timeout=75,
    ),
    GpuCase(
        "ranks_exceed_gpus",
        ("DEVICE_ORDINAL_OUT_OF_RANGE",),
        "torchrun --nproc-per-node 2 with one GPU visible (CUDA_VISIBLE_DEVICES=0), each rank"
        " torch.cuda.set_device(LOCAL_RANK), an NCCL all_reduce",
        ranks=2,
        env={"CUDA_VISIBLE_DEVICES": "0", "NCCL_DEBUG": "WARN"},
        timeout=45,
        batch=2,
    ),
    GpuCase(
        "context_on_full_gpu",
        ("GPU_BUSY_OTHER_PROCESSES", "GPU_OUT_OF_MEMORY"),
        "another process holds all of GPU 0's memory but 100 MiB; this one puts a tensor on cuda:0",
        leaves_free_mib=100,
        timeout=30,
        batch=2,
    ),
    GpuCase(
        "oom_gpu_held_by_other",
        ("GPU_BUSY_OTHER_PROCESSES", "GPU_OUT_OF_MEMORY"),
        "another process holds 70% of GPU 0; this one allocates 40% of the card",
        holds_memory=0.7,
        timeout=30,
        batch=2,
    ),
    GpuCase(
        "alloc_conf_typo",
        ("CUDA_ALLOC_CONF_INVALID",),
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segment:True (a misspelt key), then a tensor on cuda:0",
        env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"},
        timeout=30,
        batch=2,
    ),
    GpuCase(
        "nccl_socket_ifname_missing",
        ("NCCL_SOCKET_IFNAME_NO_MATCH",),
        "NCCL_SOCKET_IFNAME=nosuch0 (no such interface), one rank, NCCL init + all_reduce",
        env={
            "NCCL_SOCKET_IFNAME": "nosuch0",
            "NCCL_DEBUG": "WARN",
            **{"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"},
            **{"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29533"},
        },
        timeout=45,
        batch=2,
    ),
    GpuCase(
        "compile_no_c_compiler",
        ("TORCH_COMPILE_NO_COMPILER",),
        "PATH without any C compiler, CC unset, fresh Triton/Inductor caches: torch.compile of a"
        " function on cuda tensors",
        env={"PATH": "/nonexistent-bin"},
        timeout=60,
        batch=2,
    ),
    GpuCase(
        "vllm_max_len_over_kv_cache",
        ("VLLM_KV_CACHE_NO_MEMORY",),
        "vLLM LLM(a tiny random Llama, max_model_len=4M tokens, gpu_memory_utilization=0.1)",
        needs=("vllm",),
        timeout=90,
        batch=2,
    ),
    GpuCase(
        "nccl_small_shm",
        ("NCCL_DOCKER_SHM_TOO_SMALL",),
        "torchrun 2 ranks on 2 GPUs in a mount namespace whose /dev/shm is a 1 MiB tmpfs (a"
        " container's is 64 MiB), NCCL_CUMEM_ENABLE=0 (NCCL's /dev/shm segments, as before"
        " 2.19 or where cuMem is off), NCCL all_reduce of 64 MiB",
        ranks=2,
        min_gpus=2,
        # With cuMem (NCCL 2.28's default) the same all_reduce passes under a 1 MiB
        # /dev/shm on an H100 pair (benchmarks/results/gpu_faults_shm_cumem/).
        env={"NCCL_DEBUG": "WARN", "NCCL_CUMEM_ENABLE": "0"},
        shm_mib=1,
        timeout=60,
        batch=3,
    ),
    GpuCase(
        "nccl_small_shm_no_p2p",
        ("NCCL_DOCKER_SHM_TOO_SMALL",),
        "as nccl_small_shm with NCCL_P2P_DISABLE=1 (GPUs without P2P/NVLink use NCCL's shared-memory"
        " transport)",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN", "NCCL_P2P_DISABLE": "1", "NCCL_CUMEM_ENABLE": "0"},
        shm_mib=1,
        timeout=60,
        batch=3,
    ),
    GpuCase(
        "nccl_net_ib_forced",
        ("NCCL_IB_UNUSABLE",),
        "NCCL_NET=IB on a machine without InfiniBand, torchrun 2 ranks on 2 GPUs, NCCL all_reduce",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN", "NCCL_NET": "IB"},
        timeout=60,
        batch=3,
    ),
    GpuCase(
        "visible_devices_out_of_range",
        ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "TORCH_CUDA_UNAVAILABLE"),
        "CUDA_VISIBLE_DEVICES=7 on a machine with fewer GPUs, then a model's .to('cuda')",
        env={"CUDA_VISIBLE_DEVICES": "7"},
        timeout=30,
        batch=3,
    ),
    GpuCase(
        "grpo_use_vllm_not_installed",
        ("VLLM_REQUESTED_NOT_INSTALLED",),
        "TRL's GRPOTrainer with use_vllm=True on a GPU where vLLM is not installed (TRL on the"
        " path without it)",
        needs=("trl", "datasets"),
        env={"PYTHONPATH": ".:/tmp/site", "CUDA_VISIBLE_DEVICES": "0"},
        timeout=60,
        batch=3,
    ),
    GpuCase(
        "liger_sft_no_c_compiler",
        ("TORCH_COMPILE_NO_COMPILER",),
        "PATH without any C compiler, CC unset, a fresh Triton cache: TRL's SFTTrainer with"
        " use_liger_kernel=True on a tiny Qwen2, one GPU visible",
        needs=("trl", "datasets", "liger_kernel"),
        env={"PYTHONPATH": ".:/tmp/site", "CUDA_VISIBLE_DEVICES": "0", "PATH": "/nonexistent-bin"},
        timeout=60,
        batch=4,
    ),
    GpuCase(
        "trl_vllm_server_unreachable",
        ("TRL_VLLM_SERVER_UNREACHABLE",),
        "TRL's GRPOTrainer with use_vllm=True, vllm_mode='server' on 127.0.0.1:8765 where no"
        " server listens (vllm_server_timeout=15), one GPU visible",
        needs=("trl", "datasets", "vllm"),
        env={"CUDA_VISIBLE_DEVICES": "0"},
        timeout=75,
        batch=5,
    ),
    GpuCase(
        "vllm_tp_exceeds_gpus",
        ("DEVICE_ORDINAL_OUT_OF_RANGE", "NODE_GPU_COUNT_MISMATCH"),
        "vLLM LLM(a tiny random Llama, tensor_parallel_size=2) with one GPU visible",
        needs=("vllm",),
        env={"CUDA_VISIBLE_DEVICES": "0"},
        timeout=75,
        batch=5,
    ),
    GpuCase(
        "vllm_serve_port_busy",
        ("VLLM_PORT_EADDRINUSE", "DIST_PORT_IN_USE"),
        "`vllm serve` (as `trl vllm-serve` runs it) of a tiny model on port 8766, which another"
        " socket already listens on",
        needs=("vllm",),
        env={"CUDA_VISIBLE_DEVICES": "0"},
        timeout=90,
        batch=5,
    ),
    GpuCase(
        "grpo_colocate_after_training_memory",
        ("TRL_COLOCATE_MEMORY_BUDGET", "VLLM_KV_CACHE_NO_MEMORY"),
        "one process holds 20 GiB of training state on the GPU, then TRL's GRPOTrainer with"
        " vllm_mode='colocate' and vllm_gpu_memory_utilization=0.9",
        needs=("trl", "datasets", "vllm"),
        env={
            "CUDA_VISIBLE_DEVICES": "0",
            **{"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"},
            **{"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29534"},
        },
        timeout=90,
        batch=5,
    ),
    GpuCase(
        "cuda_under_vmem_limit",
        ("ADDRESS_SPACE_LIMIT",),
        "ulimit -v 16 GiB (a scheduler's per-job virtual-memory limit; the host has far more RAM),"
        " then a tensor on cuda:0",
        vmem_kib=16 * 2**20,
        timeout=45,
        batch=6,
    ),
    GpuCase(
        # First recorded as grpo_use_vllm_not_installed with both GPUs visible: TRL refuses
        # nn.DataParallel before it looks for vLLM, so that is the failure this case is.
        "grpo_several_gpus_use_vllm",
        ("TRL_SEVERAL_GPUS_ONE_PROCESS",),
        "plain python, 2 GPUs visible: TRL's GRPOTrainer with use_vllm=True where vLLM is not"
        " installed",
        min_gpus=2,
        needs=("trl", "datasets"),
        env={"PYTHONPATH": ".:/tmp/site"},
        timeout=60,
        batch=3,
    ),
    GpuCase(
        "flash_attention_2_not_installed",
        ("FA_REQUESTED_NOT_INSTALLED",),
        "a tiny Qwen2 saved from a config, then from_pretrained(attn_implementation="
        "'flash_attention_2', dtype=bfloat16, device_map='cuda') where flash-attn is not installed",
        timeout=45,
        batch=7,
    ),
    GpuCase(
        "bitsandbytes_4bit_not_installed",
        ("BNB_REQUESTED_NOT_INSTALLED",),
        "a tiny Qwen2 saved from a config, then from_pretrained(quantization_config="
        "BitsAndBytesConfig(load_in_4bit=True), device_map='cuda') where bitsandbytes is not"
        " installed",
        timeout=45,
        batch=7,
    ),
    GpuCase(
        "accelerate_deepspeed_config_not_installed",
        ("DEEPSPEED_REQUESTED_NOT_INSTALLED",),
        "`accelerate launch --config_file` a config with distributed_type: DEEPSPEED (zero_stage 2,"
        " 1 process, bf16) of an Accelerator training script, where deepspeed is not installed",
        timeout=60,
        batch=7,
    ),
    GpuCase(
        "torch_save_cuda_checkpoint_disk_full",
        ("DISK_FULL_AT_CHECKPOINT",),
        "a 21M-parameter Llama trained one AdamW step on cuda:0, then torch.save of its model and"
        " optimizer state (about 250 MiB) into a work directory that is an 8 MiB tmpfs",
        work_tmpfs_mib=8,
        timeout=45,
        batch=7,
    ),
    GpuCase(
        "save_pretrained_cuda_disk_full",
        ("DISK_FULL_AT_CHECKPOINT",),
        "the same 21M-parameter Llama on cuda:0, save_pretrained (safetensors, about 80 MiB) into"
        " a work directory that is an 8 MiB tmpfs",
        work_tmpfs_mib=8,
        timeout=45,
        batch=7,
    ),
    GpuCase(
        "dataloader_pin_memory_small_shm",
        ("DATALOADER_SHM_BUS_ERROR",),
        "DataLoader(4 workers, pin_memory=True, batch_size=8 of 3x512x512 float32 images, 24 MiB a"
        " batch) whose batches go to cuda:0, with /dev/shm a 64 MiB tmpfs (a container's default)",
        shm_mib=64,
        timeout=60,
        batch=7,
    ),
    GpuCase(
        "user_labels_out_of_range_cuda",
        (),
        "the user's data: cross_entropy on cuda:0 with 10 classes and a label of 10 (a"
        " device-side assert)",
        timeout=30,
        batch=7,
    ),
    GpuCase(
        "user_tensor_left_on_cpu",
        (),
        "the user's code: a model moved to cuda:0 called on an input tensor left on the CPU",
        timeout=30,
        batch=7,
    ),
    GpuCase(
        "user_shape_mismatch_cuda",
        (),
        "the user's code: a Linear(32, 8) on cuda:0 called on a batch of 16 features",
        timeout=30,
        batch=7,
    ),
    GpuCase(
        "extension_built_for_other_arch",
        ("EXT_BUILD_ARCH_LIST_MISSES_GPU", "CUDA_NO_KERNEL_IMAGE"),
        "TORCH_CUDA_ARCH_LIST=8.0 (sm_80 only, no PTX), then torch.utils.cpp_extension.load_inline"
        " of a CUDA kernel that adds one to a float tensor, built with nvcc and run on the H100"
        " (sm_90)",
        env={"TORCH_CUDA_ARCH_LIST": "8.0"},
        timeout=200,
        batch=8,
    ),
    GpuCase(
        "cuda_in_forked_child",
        ("CUDA_INIT_BEFORE_FORK",),
        "a tensor on cuda:0 in the parent (CUDA initialised), then a multiprocessing Process of"
        " the 'fork' context whose target puts a tensor on cuda:0",
        timeout=40,
        batch=8,
    ),
    GpuCase(
        "dataloader_workers_touch_cuda",
        ("CUDA_INIT_BEFORE_FORK",),
        "a model on cuda:0, then DataLoader(num_workers=2, multiprocessing_context='fork') over"
        " a Dataset whose __getitem__ builds its sample on cuda:0",
        timeout=45,
        batch=8,
    ),
    GpuCase(
        "visible_devices_unknown_uuid",
        ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "TORCH_CUDA_UNAVAILABLE"),
        "CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000 (a UUID no GPU has), then"
        " torch.cuda.is_available() and a model's .to('cuda')",
        env={"CUDA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-000000000000"},
        timeout=30,
        batch=8,
    ),
    GpuCase(
        "memory_fraction_oom",
        ("GPU_OUT_OF_MEMORY",),
        "torch.cuda.set_per_process_memory_fraction(0.05) (about 4 GiB of the H100's 80), then"
        " torch.empty of 8 GiB on cuda:0 (the card has it free)",
        timeout=30,
        batch=8,
    ),
    GpuCase(
        "user_log_of_negative_nan_cuda",
        (),
        "the user's code: under torch.autograd.set_detect_anomaly(True), a loss on cuda:0 that"
        " takes torch.sqrt of a difference that goes negative (NaN), then backward",
        timeout=30,
        batch=8,
    ),
    GpuCase(
        "user_embedding_index_out_of_range_cuda",
        (),
        "the user's data: token ids up to 1000 into an nn.Embedding(1000, 64) on cuda:0 (an id"
        " equal to the vocabulary size), followed by a Linear and loss.item()",
        timeout=30,
        batch=8,
    ),
    GpuCase(
        "user_ddp_unused_parameter",
        (),
        "the user's model: torchrun 2 ranks on 2 GPUs, DistributedDataParallel (no"
        " find_unused_parameters) of a module whose aux_head takes no part in the loss; three"
        " SGD steps",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=45,
        batch=9,
    ),
    GpuCase(
        "user_collective_mismatch_detail",
        (),
        "the user's code under TORCH_DISTRIBUTED_DEBUG=DETAIL: torchrun 2 ranks on 2 GPUs, each"
        " all_reduces a gradient buffer sized from its rank (1024 floats on rank 0, 4M on rank"
        " 1), init_process_group(timeout=10 s)",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
        timeout=45,
        batch=9,
    ),
    GpuCase(
        "collective_mismatch_hang",
        # The ranks' collectives never match, so one waits until the watchdog's 10 s: the log
        # shows only the timeout, whose code says a rank stalled or never arrived (warning).
        ("NCCL_COLLECTIVE_TIMEOUT",),
        "as user_collective_mismatch_detail without TORCH_DISTRIBUTED_DEBUG: rank 0 all_reduces"
        " 1024 floats, rank 1 4M floats, three times, init_process_group(timeout=10 s)",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=40,
        batch=9,
    ),
    GpuCase(
        "user_rank_raises_mid_step",
        (),
        "the user's data: torchrun 2 ranks on 2 GPUs, init_process_group(timeout=10 s); rank 1's"
        " shard has a record without 'label' and raises KeyError at step 1 while rank 0 waits in"
        " that step's all_reduce",
        ranks=2,
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=45,
        batch=9,
    ),
    GpuCase(
        "torchrun_master_port_taken",
        ("DIST_PORT_IN_USE",),
        "another process listens on 0.0.0.0:29561; then torchrun --nnodes 1 --nproc-per-node 2"
        " --master-addr 127.0.0.1 --master-port 29561 of an NCCL all_reduce on 2 GPUs",
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=60,
        batch=9,
    ),
    GpuCase(
        "second_job_same_gpus",
        ("GPU_BUSY_OTHER_PROCESSES", "GPU_OUT_OF_MEMORY"),
        "a first torchrun job (2 ranks) holds 70% of each of the 2 GPUs and waits; a second"
        " torchrun --standalone --nproc-per-node 2 job on the same GPUs initialises NCCL, then"
        " each rank allocates 40% of its card (only the second job's output is recorded)",
        min_gpus=2,
        env={"NCCL_DEBUG": "WARN"},
        timeout=90,
        batch=9,
    ),
    GpuCase(
        "alloc_conf_bad_value",
        ("CUDA_ALLOC_CONF_INVALID",),
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:1 (a value other than True/False), then a"
        " tensor on cuda:0",
        env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:1"},
        timeout=20,
        batch=10,
    ),
    GpuCase(
        "device_map_gpu_past_visible",
        # a config written for a two-GPU machine (the policy on GPU 1) run where one GPU is
        # visible: the index names a GPU this machine does not show
        ("DEVICE_ORDINAL_OUT_OF_RANGE",),
        "a tiny Qwen2 saved from a config, then from_pretrained(device_map={'': 1}) (a config"
        " written for two GPUs) on a machine with one GPU",
        timeout=40,
        batch=10,
    ),
    GpuCase(
        "accelerate_fsdp_fp8_no_backend",
        ("PACKAGE_REQUESTED_NOT_INSTALLED",),
        "`accelerate launch --config_file` an FSDP (version 2, 1 process) config with"
        " mixed_precision: fp8 of an Accelerator training script, where none of"
        " transformer-engine, MS-AMP or torchao is installed",
        timeout=45,
        batch=10,
    ),
    GpuCase(
        "compile_cc_points_nowhere",
        ("TORCH_COMPILE_NO_COMPILER",),
        "CC=/opt/gcc-13/bin/gcc (no such file; gcc on PATH), fresh Triton/Inductor caches:"
        " torch.compile of a function on cuda tensors",
        env={"CC": "/opt/gcc-13/bin/gcc"},
        timeout=60,
        batch=10,
    ),
    GpuCase(
        "triton_cache_read_only",
        ("CACHE_DIR_NOT_WRITABLE",),
        "TRITON_CACHE_DIR on a read-only tmpfs (a shared cache mounted :ro), Inductor's cache"
        " a fresh directory on the real disk: torch.compile of a function on cuda tensors",
        work_tmpfs_mib=1,
        work_readonly=True,
        timeout=60,
        batch=10,
    ),
    GpuCase(
        "triton_cache_disk_full",
        ("DISK_FULL_AT_CHECKPOINT", "DISK_LOW"),
        "TRITON_CACHE_DIR on a 1 MiB tmpfs that a filler file has filled, Inductor's cache a"
        " fresh directory on the real disk: torch.compile of a function on cuda tensors",
        work_tmpfs_mib=1,
        timeout=60,
        batch=10,
    ),
    GpuCase(
        "user_lm_labels_past_vocab_blocking",
        (),
        "the user's data: CUDA_LAUNCH_BLOCKING=1, a tiny Qwen2 (vocabulary 1024) on cuda:0"
        " called with labels holding the id 1030 (a tokenizer with added tokens the model"
        " lacks); a device-side assert in the loss",
        env={"CUDA_LAUNCH_BLOCKING": "1"},
        timeout=40,
        batch=10,
    ),
    GpuCase(
        "user_triton_kernel_out_of_bounds",
        (),
        "the user's Triton kernel: no mask on its loads and stores, launched with grid (n,)"
        " where cdiv(n, BLOCK) was meant, over a 1M-float tensor on cuda:0 (an illegal memory"
        " access)",
        timeout=45,
        batch=10,
    ),
    GpuCase(
        "user_linear_dtype_mismatch_cuda",
        (),
        "the user's code: a Linear(64, 8) moved to cuda:0 in float16, called on a float32 batch"
        " (no autocast)",
        timeout=30,
        batch=11,
    ),
    GpuCase(
        "user_attention_scores_shapes_cuda",
        (),
        "the user's code: attention scores q @ k on cuda:0 with q and k both (2, 4, 128, 32),"
        " k not transposed (a batched matmul whose inner sizes differ)",
        timeout=30,
        batch=11,
    ),
    GpuCase(
        "user_gather_out_of_range_then_cublas",
        (),
        "the user's code, CUDA_LAUNCH_BLOCKING unset: a Linear on cuda:0 (cuBLAS set up), then"
        " torch.gather of rows with a position one past the sequence (a device-side assert),"
        " 0.5 s of host work, then a second Linear's matmul and loss.item()",
        timeout=30,
        batch=11,
    ),
    GpuCase(
        "user_fp16_loss_overflow_no_scaler",
        (),
        "the user's code: an MLP cast to float16 on cuda:0 trained with plain SGD (no autocast,"
        " no GradScaler) on unnormalised features (x20) and targets (x500); mse_loss overflows"
        " float16, clip_grad_norm_(error_if_nonfinite=True) refuses the non-finite gradients",
        timeout=30,
        batch=11,
    ),
    GpuCase(
        "user_dataloader_worker_keyerror",
        (),
        "the user's data: a model on cuda:0 fed by DataLoader(num_workers=2) over records of"
        " which one has no 'label' key; the worker's KeyError re-raised in the main process",
        timeout=40,
        batch=11,
    ),
    GpuCase(
        "user_compiled_forward_keyerror",
        (),
        "the user's code: torch.compile(fullgraph=True) of a module on cuda:0 whose forward looks"
        " its scale up in a dict; the first call compiles and runs, the second passes a key the"
        " dict lacks (Dynamo's Observed exception for a KeyError)",
        timeout=60,
        batch=11,
    ),
    GpuCase(
        "user_checkpoint_inputs_no_grad",
        (),
        "the user's code: a frozen Embedding and head (requires_grad False, as under LoRA), the"
        " trainable blocks between them under torch.utils.checkpoint(use_reentrant=True), on"
        " cuda:0; loss.backward()",
        timeout=30,
        batch=11,
    ),
    GpuCase(
        "cuda_checkpoint_loaded_gpus_hidden",
        ("TORCH_CUDA_UNAVAILABLE", "CUDA_VISIBLE_DEVICES_HIDES_GPUS"),
        "a state_dict saved from cuda:0 by a first process (CUDA_VISIBLE_DEVICES=0), then"
        " torch.load of it without map_location in a process run with CUDA_VISIBLE_DEVICES=''",
        env={"CUDA_VISIBLE_DEVICES": ""},
        timeout=45,
        batch=11,
    ),
    GpuCase(
        "visible_devices_set_after_count",
        (
            "CUDA_VISIBLE_DEVICES_HIDES_GPUS",
            "TORCH_CUDA_UNAVAILABLE",
            "DEVICE_ORDINAL_OUT_OF_RANGE",
        ),
        "torch.cuda.device_count() (1 on this machine, no CUDA context yet), then"
        " os.environ['CUDA_VISIBLE_DEVICES'] = '1' inside the script (a setting written for a"
        " two-GPU machine), then a model's .to('cuda:1')",
        timeout=30,
        batch=11,
    ),
    # Batch 13: a broken host or container, made for real inside the case's own mount
    # namespace (`hide`): nothing outside the case's process tree changes.
    GpuCase(
        "uvm_device_hidden",
        ("CUDA_INIT_FAILED_HOST_STATE",),
        "/dev/nvidia-uvm and /dev/nvidia-uvm-tools absent from the case's /dev (a nodev tmpfs"
        " holding bind mounts of every other node: a node the driver makes again cannot be"
        " opened), /dev/null bound over nvidia-modprobe where there is one (as after a driver"
        " update or a resume that left nvidia_uvm unloaded): then torch.cuda.is_available() and"
        " one training step of a small MLP on cuda",
        hide=("/dev/nvidia-uvm*", "null:/usr/bin/nvidia-modprobe"),
        timeout=30,
        batch=13,
    ),
    GpuCase(
        "gpu_device_node_hidden",
        ("DOCKER_GPU_RUNTIME_MISSING", "TORCH_CUDA_UNAVAILABLE"),
        "NVIDIA_VISIBLE_DEVICES=all with /dev/nvidia0 absent from the case's /dev (a nodev"
        " tmpfs holding bind mounts of every other node: a container started without the GPU"
        " passed), /dev/null bound over nvidia-modprobe where there is one: then"
        " torch.cuda.is_available() and one training step of a small MLP on cuda",
        env={"NVIDIA_VISIBLE_DEVICES": "all"},
        hide=("/dev/nvidia[0-9]*", "null:/usr/bin/nvidia-modprobe"),
        timeout=30,
        batch=13,
    ),
    GpuCase(
        "nvidiactl_hidden",
        ("DOCKER_GPU_RUNTIME_MISSING", "TORCH_CUDA_UNAVAILABLE"),
        "/dev/nvidiactl absent from the case's /dev (a nodev tmpfs holding bind mounts of every"
        " other node), the GPU's own node and nvidia-uvm there (a container given the GPU with"
        " --device /dev/nvidia0 but not the control device),"
        " /dev/null bound over nvidia-modprobe where there is one: then"
        " torch.cuda.is_available() and one training step of a small MLP on cuda",
        hide=("/dev/nvidiactl", "null:/usr/bin/nvidia-modprobe"),
        # its log is gpus_hidden_to_cuda's, word for word, and its command shows no container
        log_reads_as=("CUDA_VISIBLE_DEVICES_HIDES_GPUS", "TORCH_CUDA_UNAVAILABLE"),
        timeout=30,
        batch=13,
    ),
    GpuCase(
        "cublas_libs_hidden",
        ("CUDA_RUNTIME_LIB_MISSING",),
        "libcublas and libcublasLt absent from every directory torch's loader looks in (the"
        " pip nvidia wheels' lib directory, the CUDA toolkit's, LD_LIBRARY_PATH's): then"
        " `import torch` and one training step of a small MLP on cuda",
        hide=(
            "{site}/nvidia/*/lib/libcublas*.so*",
            "/usr/local/cuda*/targets/*/lib/libcublas*.so*",
            "/usr/lib/*-linux-gnu/libcublas*.so*",
            "{ldpath}/libcublas*.so*",
        ),
        timeout=30,
        batch=13,
    ),
    GpuCase(
        "cudnn_sublibs_hidden",
        ("CUDA_RUNTIME_LIB_MISSING",),
        "cuDNN's sub-libraries (libcudnn_*.so: graph, engines, ops, cnn, adv, heuristic) absent"
        " from the pip nvidia-cudnn wheel's lib directory and the system's (an image's apt"
        " cuDNN), libcudnn.so.9 itself left in the wheel (a partial cuDNN): then one training"
        " step of a small conv net on cuda",
        hide=(
            "{site}/nvidia/*/lib/libcudnn_*.so*",
            "/usr/local/cuda*/targets/*/lib/libcudnn_*.so*",
            "/usr/lib/*-linux-gnu/libcudnn_*.so*",
            "{ldpath}/libcudnn_*.so*",
        ),
        timeout=45,
        batch=13,
    ),
    GpuCase(
        "nccl_lib_hidden",
        ("CUDA_RUNTIME_LIB_MISSING",),
        "libnccl absent from the pip nvidia-nccl wheel's lib directory, the system's (an image's"
        " apt libnccl2) and LD_LIBRARY_PATH's:"
        " one rank (RANK=0, WORLD_SIZE=1) of an NCCL job, init_process_group('nccl') and an"
        " all_reduce on cuda:0",
        env={
            "NCCL_DEBUG": "WARN",
            **{"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"},
            **{"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29563"},
        },
        hide=(
            "{site}/nvidia/*/lib/libnccl*.so*",
            "/usr/lib/*-linux-gnu/libnccl*.so*",
            "{ldpath}/libnccl*.so*",
        ),
        timeout=40,
        batch=13,
    ),
    GpuCase(
        "nvrtc_builtins_hidden",
        ("CUDA_RUNTIME_LIB_MISSING",),
        "libnvrtc-builtins absent (libnvrtc itself left) from the pip nvidia wheels' lib"
        " directory, the CUDA toolkit's and LD_LIBRARY_PATH's: then a von Mises negative"
        " log-likelihood on cuda (torch.special.i0e, a kernel torch's jiterator compiles with"
        " NVRTC at first use) and its backward",
        hide=(
            "{site}/nvidia/*/lib/libnvrtc-builtins*.so*",
            "/usr/local/cuda*/targets/*/lib/libnvrtc-builtins*.so*",
            "/usr/lib/*-linux-gnu/libnvrtc-builtins*.so*",
            "{ldpath}/libnvrtc-builtins*.so*",
        ),
        timeout=45,
        batch=13,
    ),
    GpuCase(
        "libcuda_stub_first",
        ("CUDA_DRIVER_STUB_LOADED",),
        "the CUDA toolkit's stub driver library (lib64/stubs/libcuda.so) linked as libcuda.so.1"
        " into a directory put first on LD_LIBRARY_PATH: then torch.cuda.is_available() and one"
        " training step of a small MLP on cuda",
        timeout=30,
        batch=13,
    ),
    GpuCase(
        "triton_ptxas_hidden",
        ("TRITON_PTXAS_NOT_FOUND",),
        "Triton's bundled ptxas (triton/backends/nvidia/bin/ptxas*) absent, TRITON_PTXAS_PATH"
        " unset, fresh Triton/Inductor caches (as a Triton build that ships no ptxas): then"
        " torch.compile of a function on cuda tensors",
        hide=("{site}/triton/backends/nvidia/bin/ptxas*",),
        timeout=60,
        batch=13,
    ),
    GpuCase(
        "user_shape_bug_after_cpu_fallback",
        (),
        "the user's code on a host whose /dev/nvidia-uvm is absent (as uvm_device_hidden): the"
        " script picks 'cpu' when torch.cuda.is_available() is False, then calls its"
        " Linear(64, ...) model on a batch of 48 features (a shape mismatch on the CPU)",
        hide=("/dev/nvidia-uvm*", "null:/usr/bin/nvidia-modprobe"),
        timeout=30,
        batch=13,
    ),
    GpuCase(
        "triton_cache_noexec",
        ("TMP_DIR_NOEXEC",),
        "TRITON_CACHE_DIR on a 256 MiB tmpfs mounted noexec (the case's work directory), a"
        " fresh Inductor cache on the real disk: then torch.compile of a function on cuda"
        " tensors (Triton builds its launcher module into its cache and loads it)",
        work_tmpfs_mib=256,
        work_noexec=True,
        timeout=75,
        batch=14,
    ),
    GpuCase(
        "user_conv_channels_mismatch_cudnn",
        (),
        "the user's conv net on cuda (cuDNN, the libraries torch pins) is fed 1-channel images"
        " where its first Conv2d takes 3 channels",
        timeout=30,
        batch=14,
    ),
    GpuCase(
        "user_matmul_shapes_cublas",
        (),
        "the user's projection on cuda (cuBLAS, the libraries torch pins) multiplies a"
        " (32, 96) batch by a (64, 128) weight: mismatched inner dimensions",
        timeout=30,
        batch=14,
    ),
)
