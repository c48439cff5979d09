"""Bad-snapshot cases for the check tests: (code, patch over the healthy H100 snapshot).

A patch is deep-merged into the healthy snapshot; a value of DELETE removes the key.
Each case must make its code fire; the healthy snapshot must fire none of them.
"""

from __future__ import annotations

import json
from typing import Any

from machines import snapshot_path
from snapshots import GIB, gpu, pkg, plain, proc

DELETE = object()


def healthy() -> dict[str, Any]:
    """The recorded H100 snapshot (the lead's real one when present)."""
    real = snapshot_path("h100")
    path = real if real.exists() else snapshot_path("h100-image")
    return json.loads(path.read_text(encoding="utf-8"))


def merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = plain(base)  # typed records (tests/snapshots.py) become the snapshot's JSON
    for key, value in patch.items():
        if value is DELETE:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = plain(value)
    return out


T4 = [gpu("Tesla T4", "7.5", total=16 * GIB, procs=[])]
V100 = [gpu("Tesla V100-SXM2-16GB", "7.0", total=16 * GIB, procs=[])]
P100 = [gpu("Tesla P100-PCIE-16GB", "6.0", total=16 * GIB, procs=[])]
RTX5090 = [gpu("NVIDIA GeForce RTX 5090", "12.0", total=32 * GIB, procs=[])]
RTX4090x2 = [gpu("NVIDIA GeForce RTX 4090", "8.9", i, 24 * GIB, procs=[]) for i in (0, 1)]
H100x2 = [gpu("NVIDIA H100 80GB HBM3", "9.0", i, 80 * GIB, procs=[]) for i in (0, 1)]
TORCH_26 = {
    "version": "2.6.0+cu124",
    "cuda": "12.4",
    "cuda_available": True,
    "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    "nccl": "2.21.5",
    "cxx11_abi": False,
}
WIN = {"host": {"os": "windows", "wsl": None, "container": None}}
WSL = {"host": {"wsl": 2}}
GRPO = {
    "task": "grpo",
    "model": "Qwen/Qwen2.5-0.5B-Instruct",
    "model_params": 494_000_000,
    "bf16": True,
    "max_length": 1024,
    "num_processes": 1,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "num_generations": 8,
    "dataset_rows": 1000,
}
SERVER = {**GRPO, "use_vllm": True, "vllm_mode": "server", "vllm_server_host": "127.0.0.1"}
COLOCATE = {**GRPO, "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}
VLLM_OK = {"packages": {"vllm": pkg("0.22.0", "torch==2.11.0")}}

CASES: list[tuple[str, dict[str, Any]]] = [
    # On bare metal (the recorded H100 VM carries /.dockerenv: a container case below).
    (
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
        {"host": {"container": None}, "driver": {"version": "550.54.14", "cuda_version": "12.4"}},
    ),
    (
        "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
        {"host": {"container": None}, "driver": {"version": "535.104.05", "cuda_version": DELETE}},
    ),
    (
        "CONTAINER_CUDA_GT_HOST_DRIVER",
        {
            "host": {"container": "docker"},
            "driver": {"version": "550.54.14", "cuda_version": "12.4"},
        },
    ),
    (
        "DOCKER_GPU_RUNTIME_MISSING",
        {
            "host": {"container": "docker"},
            "gpus": [],
            "driver": None,
            # without the runtime torch sees no device either (else torch's list is the GPU)
            "torch": {"cuda_available": False, "device_count": 0, "capabilities": []},
        },
    ),
    ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", {"env": {"CUDA_VISIBLE_DEVICES": ""}}),
    ("CUDA_VISIBLE_DEVICES_HIDES_GPUS", {"env": {"CUDA_VISIBLE_DEVICES": "3"}}),
    (
        "GPU_BUSY_OTHER_PROCESSES",
        {
            "gpus": [
                gpu(
                    "NVIDIA H100 80GB HBM3",
                    "9.0",
                    total=80 * GIB,
                    procs=[proc(7, "python", 40 * GIB)],
                )
            ]
        },
    ),
    (
        "VLLM_ORPHAN_WORKERS_HOLD_GPU",
        {
            "gpus": [
                gpu(
                    "NVIDIA H100 80GB HBM3",
                    "9.0",
                    total=80 * GIB,
                    procs=[proc(4242, "VLLM::EngineCore", 2 * GIB)],
                )
            ]
        },
    ),
    ("GPU_TOO_OLD_FOR_STACK", {"gpus": V100, **VLLM_OK}),
    ("GPU_TOO_OLD_FOR_STACK", {"gpus": V100}),  # torch cu130 needs cc 7.5
    (
        "TORCH_CPU_ONLY_BUILD",
        {
            "torch": {
                "version": "2.11.0+cpu",
                "cuda": None,
                "cuda_available": False,
                "arch_list": [],
            }
        },
    ),
    (
        "TORCH_NO_BLACKWELL_ARCH",
        {
            "gpus": RTX5090,
            "torch": TORCH_26,
            "driver": {"version": "575.51.03", "cuda_version": "12.9"},
        },
    ),
    (
        "TORCH_NO_BLACKWELL_ARCH",
        {
            "gpus": RTX5090,
            "torch": {**TORCH_26, "arch_list": DELETE},
            "driver": {"version": "575.51.03", "cuda_version": "12.9"},
        },
    ),
    ("TORCH_ARCH_UNSUPPORTED_GPU", {"gpus": P100}),
    (
        "TORCH_CUDA_UNAVAILABLE",
        {"torch": {"cuda_available": False, "error": "CUDA error: unknown"}},
    ),
    (
        "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD",
        {"cuda_toolkit": {"nvcc_version": "12.4"}, "packages": {"deepspeed": pkg("0.16.0")}},
    ),
    (
        "NVCC_TOO_OLD_FOR_ARCH",
        {
            "gpus": RTX5090,
            "cuda_toolkit": {"nvcc_version": "12.4"},
            "packages": {"deepspeed": pkg("0.16.0")},
            "torch": {"version": "2.7.1+cu128", "cuda": "12.8", "arch_list": ["sm_120"]},
        },
    ),
    (
        "NVCC_MULTIPLE_ON_PATH",
        {"cuda_toolkit": {"nvcc_on_path": ["/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"]}},
    ),
    (
        "CUDA_HOME_MISSING_DEEPSPEED",
        {
            "cuda_toolkit": {
                "cuda_home": None,
                "nvcc": None,
                "nvcc_version": None,
                "nvcc_on_path": [],
            },
            "packages": {"deepspeed": pkg("0.16.0")},
        },
    ),
    (
        "EXT_BUILD_ARCH_LIST_MISSES_GPU",
        {"gpus": RTX5090, "env": {"TORCH_CUDA_ARCH_LIST": "8.0;9.0"}},
    ),
    ("FA_REQUESTED_NOT_INSTALLED", {"plan": {"attn_implementation": "flash_attention_2"}}),
    (
        "GRPO_SELF_CERTAINTY_GROUP_SCALED",
        {"plan": {"task": "grpo", "self_certainty_weight": 0.005, "scale_rewards": "group"}},
    ),
    (
        "LIGER_REQUESTED_NOT_INSTALLED",
        {"plan": {"use_liger_kernel": True}, "packages": {"liger-kernel": None}},
    ),
    (
        "LIGER_REQUESTED_NOT_INSTALLED",
        {
            "plan": {"use_liger_kernel": True},
            "packages": {"liger-kernel": pkg("0.8.5")},
            "imports": {
                "liger_kernel.transformers": {
                    "ok": False,
                    "error": "ModuleNotFoundError: No module named 'triton'",
                }
            },
        },
    ),
    ("FA_REQUESTED_NOT_INSTALLED", {"plan": {"attn_implementation": "flash_attention_3"}}),
    (
        "FA_TORCH_ABI_UNDEFINED_SYMBOL",
        {
            "packages": {"flash-attn": pkg("2.8.3")},
            "imports": {
                "flash_attn": {
                    "ok": False,
                    "error": "ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
                }
            },
        },
    ),
    (
        "FA_CXX11_ABI_WHEEL_MISMATCH",
        {"packages": {"flash-attn": pkg("2.8.3+cu12torch2.11cxx11abiFALSE")}},
    ),
    ("FA_PRE_AMPERE_GPU", {"gpus": T4, "plan": {"attn_implementation": "flash_attention_2"}}),
    (
        "FA3_UNSUPPORTED_GPU",
        {"gpus": RTX4090x2, "plan": {"attn_implementation": "flash_attention_3"}},
    ),
    ("FA_NO_PREBUILT_WHEEL", {"plan": {"attn_implementation": "flash_attention_2"}}),
    (
        "FA_BUILD_OOM_NO_MAX_JOBS",
        {
            "host": {"ram_bytes": 32 * GIB, "cpu_count": 32},
            "plan": {"attn_implementation": "flash_attention_2"},
        },
    ),
    (
        "FA_WINDOWS_LONG_PATH",
        {
            **WIN,
            "host": {**WIN["host"], "windows_long_paths": False},
            "plan": {"attn_implementation": "flash_attention_2"},
        },
    ),
    (
        "FA_BLACKWELL_SM120_KERNELS",
        {"gpus": RTX5090, "packages": {"flash-attn": pkg("2.7.4.post1")}},
    ),
    ("BF16_PRE_AMPERE", {"gpus": T4, "plan": {"bf16": True}}),
    ("VLLM_REQUESTED_NOT_INSTALLED", {"plan": SERVER}),
    ("VLLM_INSTALL_SWAPS_TORCH", {"packages": {"vllm": pkg("0.10.1.1", "torch==2.7.1")}}),
    ("VLLM_INSTALL_SWAPS_TORCH", {"packages": {"vllm": pkg("0.10.1.1")}}),  # table fallback
    (
        "VLLM_WHEEL_NO_SM120",
        {
            "gpus": RTX5090,
            "torch": TORCH_26,
            "packages": {"vllm": pkg("0.8.5", "torch==2.6.0")},
            "driver": {"version": "575.51.03", "cuda_version": "12.9"},
        },
    ),
    (
        "VLLM_EXPANDABLE_SEGMENTS",
        {
            "packages": {"vllm": pkg("0.10.1.1")},
            "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        },
    ),
    (
        "VLLM_EXPANDABLE_SEGMENTS",
        {**VLLM_OK, "env": {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}},
    ),
    (
        "VLLM_KV_CACHE_NO_MEMORY",
        {
            **VLLM_OK,
            "plan": {
                **COLOCATE,
                "model": "Qwen/Qwen2.5-7B-Instruct",
                "model_params": 7_600_000_000,
                "vllm_gpu_memory_utilization": 0.1,
            },
        },
    ),
    (
        "VLLM_V1_DEFAULT_BREAKS_RL_INTEGRATION",
        {"packages": {"vllm": pkg("0.8.5", "torch==2.6.0"), "trl": pkg("0.16.1")}},
    ),
    (
        "VLLM_TURING_ATTENTION_BACKEND",
        {"gpus": T4, "packages": {"vllm": pkg("0.10.1.1")}, "torch": TORCH_26},
    ),
    ("VLLM_ATTENTION_BACKEND_IGNORED", {**VLLM_OK, "env": {"VLLM_ATTENTION_BACKEND": "XFORMERS"}}),
    ("XFORMERS_WHEEL_MISMATCH", {"packages": {"xformers": pkg("0.0.29", "torch==2.6.0")}}),
    ("VLLM_NATIVE_WINDOWS", {**WIN, "plan": SERVER}),
    ("VLLM_FORKED_CUDA_REINIT", {**VLLM_OK, "plan": {**SERVER, "vllm_tensor_parallel_size": 2}}),
    (
        "VLLM_IMPORT_FAILED",
        {
            **VLLM_OK,
            "imports": {
                "vllm._C": {"ok": False, "error": "ImportError: vllm/_C.abi3.so: undefined symbol"}
            },
        },
    ),
    (
        "TRL_VLLM_VERSION_SKEW",
        {"packages": {"vllm": pkg("0.20.0", "torch==2.11.0"), "trl": pkg("1.16.0")}},
    ),
    (
        "TRL_VLLM_VERSION_SKEW",
        {"packages": {"vllm": pkg("0.35.0"), "trl": pkg("1.2.0", "vllm>=0.10.2,<0.12")}},
    ),
    ("TRL_SERVER_MODE_SAME_GPU", {**VLLM_OK, "plan": SERVER}),
    (
        "TRL_COLOCATE_MEMORY_BUDGET",
        {
            **VLLM_OK,
            "plan": {
                **COLOCATE,
                "model_params": 3_090_000_000,
                "max_length": 4096,
                "vllm_gpu_memory_utilization": 0.7,
            },
        },
    ),
    (
        "TRL_GRPO_BATCH_NOT_DIVISIBLE",
        {"plan": {**GRPO, "per_device_train_batch_size": 1, "gradient_accumulation_steps": 2}},
    ),
    ("TRL_GRPO_BATCH_NOT_DIVISIBLE", {"plan": {**GRPO, "num_generations": 1}}),
    (
        "TRL_GRPO_BATCH_REFUSED",
        {"plan": {**GRPO, "generation_batch_size": 16, "steps_per_generation": 2}},
    ),
    (
        "TRL_GRPO_BATCH_REFUSED",
        {"plan": {**GRPO, "generation_batch_size": 12, "per_device_train_batch_size": 8}},
    ),
    (
        "TRL_GRPO_BATCH_REFUSED",
        {"plan": {**GRPO, "eval_strategy": "steps", "per_device_eval_batch_size": 3}},
    ),
    ("TRL_GRPO_BATCH_REFUSED", {"plan": {**GRPO, "auto_find_batch_size": True}}),
    (
        "TRAINER_ZERO_STEPS_TINY_DATASET",
        {
            "plan": {
                **GRPO,
                "per_device_train_batch_size": 16,
                "num_generations": 2,
                "dataset_rows": 7,
            }
        },
    ),
    (
        "TRAINER_ZERO_STEPS_TINY_DATASET",
        {
            "plan": {
                "task": "sft",
                "per_device_train_batch_size": 8,
                "gradient_accumulation_steps": 4,
                "dataset_rows": 8,
            }
        },
    ),
    (
        "TRL_VLLM_SERVER_UNREACHABLE",
        {**VLLM_OK, "gpus": H100x2, "plan": {**SERVER, "vllm_server_host": "0.0.0.0"}},
    ),
    (
        "TRL_VLLM_SERVER_UNREACHABLE",
        {**VLLM_OK, "gpus": H100x2, "plan": SERVER, "env": {"HTTPS_PROXY": "http://proxy:3128"}},
    ),
    (
        "TRAINER_ROWS_TRUNCATED",
        {"plan": {"task": "sft", "max_length": 1024, "longest_sample_tokens": 1500}},
    ),
    (
        "TRL_VLLM_GROUP_PORT_IN_USE",
        {
            **VLLM_OK,
            "gpus": H100x2,
            "plan": {**SERVER, "vllm_server_port": 8000, "vllm_group_port": 8000},
        },
    ),
    (
        "DATASET_PATH_NOT_FILES",
        {"plan": {"dataset": "hf://datasets/BytedTsinghua-SIA/DAPO-Math-17k"}},
    ),
    (
        "MODEL_TOO_LARGE_FOR_GPU",
        {"plan": {**GRPO, "model": "Qwen/Qwen3-30B-A3B", "model_params": 30_500_000_000}},
    ),
    (
        "OOM_LONG_SEQUENCE",
        {
            "plan": {
                **GRPO,
                "model": "Qwen/Qwen2.5-7B-Instruct",
                "model_params": 7_600_000_000,
                "max_length": 16384,
                "per_device_train_batch_size": 8,
            }
        },
    ),
    (
        "DISK_FULL_AT_CHECKPOINT",
        {
            "host": {"disk_free_bytes": {"/srv": 5 * GIB}},
            "plan": {**GRPO, "output_dir": "/srv/runs/grpo", "model_params": 3_090_000_000},
        },
    ),
    (
        "CFG_ENV_INTERPOLATION",
        {"env": {"ARNOLD_WORKER_GPU": ""}, "plan": {"env_refs": ["ARNOLD_WORKER_GPU"]}},
    ),
    (
        "MEGATRON_GRAD_ACCUM_FUSION_NO_APEX",
        {"packages": {"megatron-core": pkg("0.15.0"), "apex": None}},
    ),
    ("NCCL_LIB_SYMBOL_MISMATCH", {"packages": {"nvidia-nccl-cu12": pkg("2.21.5")}}),
    (
        "NCCL_LIB_SYMBOL_MISMATCH",
        {
            "packages": {
                "torch": pkg("2.11.0+cu130", "nvidia-nccl-cu13==2.28.9"),
                "nvidia-nccl-cu13": pkg("2.27.3"),
            }
        },
    ),
    (
        "NCCL_LD_LIBRARY_PATH_OVERRIDE",
        {"env": {"LD_LIBRARY_PATH": "/opt/nccl/lib:/usr/local/nvidia/lib64"}},
    ),
    ("NCCL_MISSING_ON_WINDOWS", {**WIN, "plan": {"num_processes": 2}}),
    (
        "NCCL_DOCKER_SHM_TOO_SMALL",
        {"host": {"container": "docker", "shm_bytes": 64 * 2**20}, "gpus": H100x2},
    ),
    ("NCCL_P2P_HANG_CONSUMER_GPUS", {"gpus": RTX4090x2}),
    (
        "NCCL_IB_UNUSABLE",
        {"gpus": H100x2, "host": {"infiniband": {"sys_devices": ["mlx5_0"], "dev_present": False}}},
    ),
    (
        "NCCL_CUMEM_WEIGHT_SYNC_MISMATCH",
        {
            "gpus": H100x2,
            "torch": {**TORCH_26, "nccl": "2.21.5"},
            "packages": {"torch": pkg("2.6.0+cu124"), "vllm": pkg("0.8.5", "torch==2.6.0")},
            "plan": SERVER,
        },
    ),
    (
        "DATALOADER_SHM_BUS_ERROR",
        {"host": {"shm_bytes": 64 * 2**20}, "plan": {"dataloader_num_workers": 4}},
    ),
    ("WSL_LIBCUDA_NOT_LINKABLE", {"host": {"wsl": 2, "libcuda_in_ldconfig": False}}),
    ("WSL_PINNED_MEMORY_LIMIT", {**WSL, "plan": GRPO}),
    ("WSL_CUDA_INIT_DOUBLE_FREE", {**WSL, "env": {"CUDA_VISIBLE_DEVICES": "-1"}}),
    (
        "WSL_CUDA_INIT_DOUBLE_FREE",
        {
            **WSL,
            "probes": {
                "torch": {
                    "status": "crash",
                    "detail": "SIGABRT: free(): double free detected in tcache 2",
                }
            },
        },
    ),
    ("WSL_MULTI_GPU_NCCL", {**WSL, "plan": {"num_processes": 2}}),
    (
        "WSL_VM_RAM_CAP",
        {"host": {"wsl": 2, "ram_bytes": 8 * GIB}, "plan": {"model_params": 3_090_000_000}},
    ),
    ("WIN_CONSOLE_GBK_ENCODING", {**WIN, "host": {**WIN["host"], "stdout_encoding": "gbk"}}),
    ("WRONG_PYTHON_INTERPRETER", {"host": {"python": {"which_python": "/usr/bin/python"}}}),
    (
        "WRONG_PYTHON_INTERPRETER",
        {
            "host": {
                "os": "windows",
                "python": {
                    "executable": "C:\\conda\\envs\\arpo\\python.exe",
                    "which_python": "C:\\Users\\u\\AppData\\Local\\Microsoft\\WindowsApps\\python.exe",
                },
            }
        },
    ),
    (
        "WIN_TORCH_COMPILE_NO_TRITON",
        {**WIN, "packages": {"triton": None}, "plan": {"torch_compile": True}},
    ),
    ("HF_XET_DOWNLOAD_STALL", {"packages": {"hf-xet": pkg("1.1.5")}}),
    (
        "LIGER_CUTEDSL_AUTOSELECTED",
        {"packages": {"liger-kernel": pkg("0.8.5"), "nvidia-cutlass-dsl": pkg("4.4.2")}},
    ),
    ("RAY_WINDOWS_AGENT_CRASH", {**WIN, "ray": {"version": "2.51.1", "cluster": "none"}}),
    (
        "RAY_OBJECT_STORE_SMALL_SHM",
        {
            "host": {"container": "docker", "shm_bytes": 64 * 2**20},
            "ray": {"version": "2.51.1", "cluster": "none"},
        },
    ),
    (
        "RAY_TMP_DISK_FULL",
        {
            "host": {"disk_free_bytes": {"/tmp": 2 * GIB}},
            "ray": {"version": "2.51.1", "cluster": "none"},
        },
    ),
    (
        "RAY_AF_UNIX_PATH_TOO_LONG",
        {
            "env": {"TMPDIR": "/scratch/slurm/job_123456789/user_abcdefghijklmnop/tmp"},
            "ray": {"version": "2.51.1"},
        },
    ),
    (
        "RAY_CLUSTER_UNREACHABLE",
        {
            "ray": {
                "version": "2.51.1",
                "cluster": "unreachable",
                "address": "10.0.0.1:6379",
                "error": "no answer",
            }
        },
    ),
    (
        "RAY_CLUSTER_STALE",
        {
            "ray": {
                "version": "2.60.0",
                "cluster": "stale",
                "address": "192.0.2.2:6379",
                "source": "cluster_file",
                "cluster_file": "/tmp/ray/ray_current_cluster",
                "error": "nothing answers at 192.0.2.2:6379 (GCS)",
                "client": {"ray_address": None, "action": "connect", "address": "192.0.2.2:6379"},
            }
        },
    ),
    (
        "RAY_ADDRESS_INVALID",
        {
            "ray": {
                "version": "2.60.0",
                "cluster": "none",
                "client": {
                    "ray_address": "http://127.0.0.1:8265",
                    "action": "fail",
                    "error": "RAY_ADDRESS=http://127.0.0.1:8265 is a dashboard / Jobs API URL",
                },
            }
        },
    ),
    (
        "RAY_INIT_MISSES_LOCAL_HEAD",
        {
            "ray": {
                "version": "2.60.0",
                "cluster": "running",
                "address": "192.0.2.2:6379",
                "source": "process",
                "temp_dir": "/tmp/rt",
                "local_heads": ["192.0.2.2:6379"],
                "client": {"ray_address": None, "action": "start-local", "address": None},
            }
        },
    ),
    (
        "RAY_VERSION_MISMATCH",
        {
            "ray": {
                "version": "2.60.0",
                "head_version": "2.51.1",
                "cluster": "running",
                "address": "10.0.0.1:6379",
            }
        },
    ),
    (
        "DOCKER_ENGINE_UNREACHABLE",
        {
            "docker": {
                "host": "unix:///var/run/docker.sock",
                "host_from": "socket",
                "reachable": False,
                "error": "Permission denied",
            }
        },
    ),
    (
        "DOCKER_NO_GPU_SUPPORT",
        {
            "host": {"container": None},
            "docker": {
                "host": "unix:///var/run/docker.sock",
                "reachable": True,
                "server_version": "28.2.2",
                "runtimes": ["runc"],
                "gpus_usable": False,
            },
        },
    ),
    ("REQUIREMENT_CONFLICT", {"packages": {"peft": pkg("0.17.1", "transformers>=6.0")}}),
    ("NUMPY2_BINARY_INCOMPAT", {"packages": {"verifiers": pkg("0.1.0", "numpy<2")}}),
    ("NUMPY2_BINARY_INCOMPAT", {"torch": DELETE, "packages": {"torch": pkg("2.2.2")}}),
    ("NUMPY2_MEGATRON_VS_OPENCV", {"packages": {"megatron-core": pkg("0.14.0", "numpy<2")}}),
    (
        "NUMPY2_MEGATRON_VS_OPENCV",
        {
            "packages": {
                "numpy": pkg("1.26.4"),
                "opencv-python-headless": pkg("4.12.0.88", "numpy<2.3.0,>=2"),
            }
        },
    ),
    ("DISK_LOW", {"host": {"disk_free_bytes": {"~/.cache/huggingface": 3 * GIB}}}),
    # the limits probe's section (rows: tests/shop_r1_doctor/checks/test_limits_rows.py)
    ("DATALOADER_FD_LIMIT", {"limits": {"rlimits": {"nofile": {"soft": 1024, "hard": 1024}}}}),
    (
        "PROCESS_LIMIT_REACHED",
        {"limits": {"pids_cgroup": {"version": "v2", "path": "/job", "max": 32, "current": 3}}},
    ),
    (
        "ADDRESS_SPACE_LIMIT",
        {"limits": {"rlimits": {"address_space": {"soft": 8 * GIB, "hard": -1}}}},
    ),
    (
        "CACHE_DIR_NOT_WRITABLE",
        {
            "limits": {
                "caches": [
                    {
                        "name": "HF_HOME",
                        "path": "/ro/hf",
                        "checked": "/ro/hf",
                        "writable": True,
                        "read_only_mount": True,
                    }
                ]
            }
        },
    ),
    (
        "NCCL_SOCKET_IFNAME_NO_MATCH",
        {"env": {"NCCL_SOCKET_IFNAME": "nosuch0"}, "limits": {"net_interfaces": ["eth0", "lo"]}},
    ),
    ("CUDA_ALLOC_CONF_INVALID", {"env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}}),
    ("PROBE_CRASH", {"probes": {"torch": {"status": "crash", "detail": "SIGSEGV"}}}),
    ("PROBE_TIMEOUT", {"probes": {"torch": {"status": "timeout", "detail": "no answer in 20 s"}}}),
    ("PROBE_ERROR", {"probes": {"gpu": {"status": "error", "detail": "NVMLError: Unknown"}}}),
    (
        "TORCH_IMPORT_FAILED",
        {
            "torch": {
                "version": DELETE,
                "error": "ImportError: libcudnn.so.9: cannot open shared object file",
            }
        },
    ),
]


# DOCKER_GPU_RUNTIME_MISSING warns only when something shows a GPU is expected; a CPU-only
# container (CPU torch, no GPU settings) gets an info line. (patch over CPU_DOCKER, severity)
CPU_DOCKER: dict[str, Any] = {
    "schema": "shop-r1.snapshot/1",
    "host": {"os": "linux", "container": "docker"},
    "gpus": [],
    "driver": None,
    "torch": {"version": "2.13.0+cpu", "cuda": None, "cuda_available": False, "arch_list": []},
    "env": {"PYTHONUNBUFFERED": "1"},
    "packages": {"torch": pkg("2.13.0+cpu"), "nvidia-ml-py": pkg("13.615.71"), "vllm": None},
}
GPU_EXPECTED_CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("cpu-only", {}, "info"),
    ("cuda-torch", {"torch": {"version": "2.11.0+cu130", "cuda": "13.0"}}, "warning"),
    (
        "cuda-torch-from-tag",
        {"torch": DELETE, "packages": {"torch": pkg("2.6.0+cu124")}},
        "warning",
    ),
    ("nvidia-visible-all", {"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "warning"),
    ("nvidia-visible-void", {"env": {"NVIDIA_VISIBLE_DEVICES": "void"}}, "info"),
    ("cuda-visible-0", {"env": {"CUDA_VISIBLE_DEVICES": "0"}}, "warning"),
    ("cuda-visible-hidden", {"env": {"CUDA_VISIBLE_DEVICES": "-1"}}, "info"),
    ("nvidia-nccl", {"packages": {"nvidia-nccl-cu13": pkg("2.28.9")}}, "warning"),
    ("vllm", {"packages": {"vllm": pkg("0.26.0", "torch==2.11.0")}}, "warning"),
    ("plan-vllm", {"plan": {"task": "grpo", "use_vllm": True}}, "warning"),
    ("plan-fa2", {"plan": {"attn_implementation": "flash_attention_2"}}, "warning"),
    ("plan-bf16", {"plan": {"task": "sft", "bf16": True}}, "warning"),
    ("plan-cpu", {"plan": {"task": "sft", "bf16": False, "attn_implementation": "sdpa"}}, "info"),
    ("not-in-container", {"host": {"container": None}}, None),
    ("gpu-visible", {"gpus": T4, "driver": {"version": "580.65.06"}}, None),
]
