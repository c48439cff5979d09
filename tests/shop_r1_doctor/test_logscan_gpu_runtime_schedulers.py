"""Readings learned from GPU fault batch 2 and held-out batch 16, on text shapes beyond the
batches' own logs: other releases' wordings, launcher prefixes, lower-cased pastes, Windows
paths, a Chinese sentence. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings


def _codes(log: str) -> list[str]:
    return [code for code, _ in readings(log)]


# --- CUDA_ALLOC_CONF_INVALID ---------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # torch 2.13's shared parser, behind torchrun's rank prefix
        "[rank0]: ValueError: Unrecognized key 'expandable_segment' in Accelerator allocator "
        "config.",
        # torch before 2.8
        "RuntimeError: Unrecognized CachingAllocator option: max_split_size",
        # the same, pasted lower-cased
        "runtimeerror: unrecognized cachingallocator option: expandable_segment",
        # a value it cannot read, under a Windows path
        '  File "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\cuda\\__init__.py", line 319,'
        " in _lazy_init\n    torch._C._cuda_init()\n"
        "RuntimeError: Expected a single True/False argument for expandable_segments",
        # a size below the parser's floor
        "RuntimeError: CachingAllocator option max_split_size_mb too small, must be >= 20",
    ],
)
def test_a_refused_allocator_config_is_an_error(log):
    assert readings(log)[0] == ("CUDA_ALLOC_CONF_INVALID", "error")


def test_an_allocator_config_that_was_accepted_is_not_read_as_refused():
    log = (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    )
    assert "CUDA_ALLOC_CONF_INVALID" not in _codes(log)


# --- NCCL_SOCKET_IFNAME_NO_MATCH and RANKS_SHARE_GPU -------------------------------------

INVALID_USAGE = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL "
    "version 2.21.5\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
)


@pytest.mark.parametrize(
    "log",
    [
        # NCCL's bootstrap under torchrun's rank prefix, with torch's Last error block
        "".join(
            f"[rank1]: {line}\n"
            for line in (
                "host:1:1 [1] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found",
                *INVALID_USAGE.splitlines(),
                "Last error:",
                "Bootstrap : no socket interface found",
            )
        ),
        # NCCL 2.7's transport wording, lower-cased
        "node:2211:2211 [0] nccl info net/socket : no interface found\n"
        "RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:825, internal "
        "error, NCCL version 2.7.8",
        # gloo's tcp device on a GLOO_SOCKET_IFNAME without an address
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] "
        "ifa != nullptr. Unable to find address for: eth1",
    ],
)
def test_no_interface_matching_the_socket_ifname_is_an_error(log):
    assert readings(log)[0] == ("NCCL_SOCKET_IFNAME_NO_MATCH", "error")
    assert "RANKS_SHARE_GPU" not in _codes(log)


def test_invalid_usage_whose_last_error_names_another_cause_is_not_ranks_sharing_a_gpu():
    log = INVALID_USAGE + "Last error:\nInvalid config blocking attribute value -2147483648"
    assert "RANKS_SHARE_GPU" not in _codes(log)


def test_bare_invalid_usage_is_only_a_hint_of_ranks_sharing_a_gpu():
    assert readings(INVALID_USAGE)[0] == ("RANKS_SHARE_GPU", "info")


def test_a_duplicate_gpu_in_the_last_error_block_is_still_an_error():
    log = (
        INVALID_USAGE
        + "Last error:\nDuplicate GPU detected : rank 0 and rank 1 both on CUDA device 2000"
    )
    assert readings(log)[0] == ("RANKS_SHARE_GPU", "error")


# --- TRITON_NO_ACTIVE_DRIVER ---------------------------------------------------------------

NO_DRIVER = "RuntimeError: 0 active drivers ([]). There should only be one."


@pytest.mark.parametrize(
    "log",
    [
        # triton-windows, the reporter saying there is no GPU
        "I run it on a laptop without a GPU\n"
        '  File "C:\\Users\\me\\venv\\Lib\\site-packages\\triton\\runtime\\driver.py", line 8,'
        " in _create_driver\n" + NO_DRIVER,
        # a Chinese sentence: on a server without a graphics card
        "在没有显卡的服务器上运行\n" + NO_DRIVER,
        # the GPUs hidden by an empty CUDA_VISIBLE_DEVICES
        "CUDA_VISIBLE_DEVICES= python generate.py\n" + NO_DRIVER,
    ],
)
def test_no_triton_driver_where_the_log_says_there_is_no_gpu_is_that_alone(log):
    assert readings(log) == [("TRITON_NO_ACTIVE_DRIVER", "error")]


@pytest.mark.parametrize("log", [f"[rank0]: {NO_DRIVER}", NO_DRIVER.lower()])
def test_no_triton_driver_without_a_reason_adds_a_pin_mismatch_hint(log):
    assert readings(log) == [("TRITON_NO_ACTIVE_DRIVER", "error"), ("PACKAGE_VERSION_SKEW", "info")]


# --- GPU_OUT_OF_MEMORY on Apple's MPS ------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # torch 2.4+: OutOfMemoryError, the private pool
        "torch.OutOfMemoryError: MPS backend out of memory (MPS allocated: 18.12 GB, other "
        "allocations: 384.00 KB, max allowed: 18.13 GB). Tried to allocate 1.00 GB on private "
        "pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory "
        "allocations (may cause system failure).",
        # torch 1.13's RuntimeError, pasted lower-cased
        "runtimeerror: mps backend out of memory (mps allocated: 1.81 gb, other allocations: "
        "7.23 gb, max allowed: 9.07 gb).",
    ],
)
def test_the_mps_allocator_running_out_is_a_gpu_oom(log):
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "error")


# --- JOB_TIME_LIMIT_OR_PREEMPTION ----------------------------------------------------------

SIGTERM = (
    "W0102 03:04:05.000000 123 torch/distributed/elastic/agent/server/api.py:704] Received "
    "Signals.SIGTERM death signal, shutting down workers\n"
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4321 got signal: 15"
)


@pytest.mark.parametrize(
    "log",
    [
        "slurmstepd: error: *** STEP 1234.0 ON gpu-node-7 CANCELLED AT 2025-01-02T03:04:05 DUE TO "
        "PREEMPTION ***",
        "=>> PBS: job killed: walltime 86415 exceeded limit 86400",
        "Exited with exit code 140.\nTERM_RUNLIMIT: job killed after reaching LSF run time limit.",
        # the scheduler's line makes torchrun's SIGTERM evidence, not a guess
        "slurmstepd: error: *** JOB 77 ON n1 CANCELLED AT 2025-01-02T03:04:05 DUE TO TIME LIMIT "
        "***\n" + SIGTERM,
    ],
)
def test_the_schedulers_own_record_is_an_error(log):
    assert readings(log)[0] == ("JOB_TIME_LIMIT_OR_PREEMPTION", "error")


def test_a_sigterm_the_launcher_received_is_not_an_error():
    # the stop from outside is shown; that a scheduler sent it is not
    assert readings(SIGTERM) == [("JOB_TIME_LIMIT_OR_PREEMPTION", "warning")]


# --- HOST_OOM_KILLED from Ray's memory monitor ---------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # Ray 2.9's raylet summary, lower-cased
        "(raylet) [2024-03-01 10:00:00,000 e 1 1] (raylet) node_manager.cc:3022: 3 workers (tasks "
        "/ actors) killed due to memory pressure (oom), 0 workers crashed due to other reasons at "
        "node (id: x, ip: 10.0.0.1) over the last time period.",
        # the task owner's exception in a verl run with colocated vLLM: host RAM, not the GPU
        "vllm colocate rollout\n"
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
        "Memory on the node (IP: 10.0.0.5, ID: abc) where the task (actor ID: a1, "
        "name=WorkerDict.__init__, pid=1234, memory used=20.1GB) was running was 240.32GB / "
        "251.50GB (0.955), which exceeds the memory usage threshold of 0.95.",
        # Ray 2.60's raylet wording
        "(raylet) 2 worker(s) were killed due to the node running low on memory.",
        # an actor's death behind Ray's worker prefix, the paste cut after the exit type
        "(WorkerDict pid=4242, ip=10.0.0.7) ray.exceptions.ActorDiedError: The actor died "
        "unexpectedly before finishing this task.\n\tclass_name: WorkerDict\n\tThe actor is "
        "dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY",
    ],
)
def test_rays_memory_monitor_killing_workers_is_host_oom(log):
    assert readings(log) == [("HOST_OOM_KILLED", "error")]


# --- PACKAGE_VERSION_SKEW from HfArgumentParser --------------------------------------------


def test_a_packages_config_class_whose_types_do_not_resolve_is_a_skew_hint():
    log = (
        "[rank0]: RuntimeError: Type resolution failed for <class "
        "'trl.trainer.grpo_config.GRPOConfig'>. Try declaring the class in global scope or "
        "removing line of `from __future__ import annotations` which opts in Postponed "
        "Evaluation of Annotations (PEP 563)"
    )
    assert readings(log) == [("PACKAGE_VERSION_SKEW", "info")]


def test_the_users_own_config_class_is_not_read_as_skew():
    log = (
        "RuntimeError: Type resolution failed for <class '__main__.ScriptArguments'>. Try "
        "declaring the class in global scope"
    )
    assert "PACKAGE_VERSION_SKEW" not in _codes(log)


# --- NCCL_IB_UNUSABLE: a forced network transport that cannot start ------------------------


@pytest.mark.parametrize(
    "log",
    [
        # NCCL 2.28's warning, then the error torch raises with NCCL's last error
        "vm:822:822 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin\n"
        "[rank0]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, "
        "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9\n"
        "[rank0]: Last error:\n[rank0]: Failed to initialize any NET plugin",
        # an older NCCL with NCCL_NET=IB on a node without an HCA
        "node1:4242:4300 [0] NCCL INFO NET/IB : No device found.",
        # pasted lower-cased
        "ncclinvalidusage ... last error: failed to initialize any net plugin",
    ],
)
def test_a_forced_nccl_transport_that_cannot_start(log):
    assert "NCCL_IB_UNUSABLE" in _codes(log)
    assert readings(log)[0][0] == "NCCL_IB_UNUSABLE"


def test_nccl_choosing_its_transport_is_not_a_failure():
    log = (
        "node1:4242:4300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n"
        "node1:4242:4300 [0] NCCL INFO Using network IB\n"
    )
    assert "NCCL_IB_UNUSABLE" not in _codes(log)


# --- vLLM inside the trainer: its free-memory refusal is the colocate budget ---------------

_FREE = (
    "ValueError: Free memory on device cuda:0 (40.1/79.18 GiB) on startup is less than desired "
    "GPU memory utilization (0.7, 55.43 GiB). Decrease GPU memory utilization or reduce GPU "
    "memory used by other processes."
)


@pytest.mark.parametrize(
    "frame",
    [
        # TRL 1.x: the trainer's VLLMGeneration builds the engine
        '  File "/venv/lib/python3.12/site-packages/trl/generation/vllm_generation.py", line 347,'
        " in _init_vllm\n    self.llm = LLM(\n",
        # TRL 0.x built it in the trainer itself, on Windows paths
        '  File "C:\\envs\\rl\\Lib\\site-packages\\trl\\trainer\\grpo_trainer.py", line 612, in'
        " __init__\n    self.llm = LLM(\n",
        # verl's hybrid engine, behind Ray's worker prefix
        '(WorkerDict pid=4242)   File "/opt/verl/verl/workers/rollout/vllm_rollout/'
        'vllm_rollout_spmd.py", line 157, in __init__\n(WorkerDict pid=4242)     '
        "self.inference_engine = LLM(\n",
    ],
)
def test_vllm_built_in_the_trainer_refusing_memory_is_the_colocate_budget(frame):
    assert readings(frame + _FREE)[0] == ("TRL_COLOCATE_MEMORY_BUDGET", "error")


def test_a_vllm_server_refusing_memory_stays_other_processes():
    log = "(APIServer pid=77) INFO 11-26 vllm serve /models/qwen --port 8000\n" + _FREE
    assert readings(log)[0][0] == "GPU_BUSY_OTHER_PROCESSES"


@pytest.mark.parametrize(
    "log",
    [
        "  Value error, World size (2) is larger than the number of available GPUs (1) in this"
        " node. If this is intentional and you are using:",
        "valueerror: world size (8) is larger than the number of available gpus (4) in this node.",
    ],
)
def test_vllm_parallel_over_more_gpus_than_visible(log):
    assert readings(log)[0][0] == "DEVICE_ORDINAL_OUT_OF_RANGE"


# --- ADDRESS_SPACE_LIMIT: CUDA's out-of-memory under `ulimit -v` -----------------------------


@pytest.mark.parametrize(
    "log",
    [
        "$ ulimit -v 16777216\n$ python train.py\ntorch.AcceleratorError: CUDA error: out of memory",
        "#$ -l h_vmem=32G\nRuntimeError: CUDA driver error: out of memory",
        "virtual memory (kbytes, -v) 33554432\ntorch.OutOfMemoryError: CUDA out of memory. Tried "
        "to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 78.1 GiB is free.",
    ],
)
def test_cuda_out_of_memory_under_an_address_space_limit(log):
    assert readings(log)[0] == ("ADDRESS_SPACE_LIMIT", "warning")


def test_cuda_out_of_memory_without_a_limit_stays_the_gpu():
    log = "virtual memory (kbytes, -v) unlimited\ntorch.AcceleratorError: CUDA error: out of memory"
    assert readings(log)[0][0] == "GPU_OUT_OF_MEMORY"
