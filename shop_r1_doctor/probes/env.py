"""Environment variables that change how training runs, by allowlist, redacted.

An allowlist, not a blocklist: vLLM's own env list includes S3_SECRET_ACCESS_KEY, and
reports get pasted into public issues. Values whose names look secret become
`<redacted>`; the others go through `redact.redact_text` (tokens in URLs, home -> ~).
"""

from __future__ import annotations

from typing import Any

from shop_r1_doctor.probes.deps import ProbeDeps
from shop_r1_doctor.redact import redact_env, redact_home

PREFIXES = (
    "CUDA",
    "NCCL",
    "TORCH",
    "PYTORCH",
    "VLLM",
    "HF_",
    "HUGGING_FACE",
    "TRANSFORMERS",
    "TOKENIZERS",
    "RAY_",
    "OMP_",
    "MKL_",
    "NVIDIA_",
    "NVCC",
    "FLASH_ATTN",
    "PYTHON",
    "WANDB_",
    "ACCELERATE_",
    "CONDA_",
    "WSL",
    "ARNOLD_",
    "SHOP_R1_",
    "TRITON_",
    "XLA_",
    "DS_",
    "MASTER_",
    "SLURM_",
    "UV_",
    "LIGER_",
)
NAMES = frozenset(
    {
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "PATH",
        "MAX_JOBS",
        "VIRTUAL_ENV",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "ALL_PROXY",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "TMPDIR",
        "TEMP",
        "TMP",
        "XDG_CACHE_HOME",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "LANG",
        "LC_ALL",
        "PYTHONUTF8",
        "container",
        "KUBERNETES_SERVICE_HOST",
        "GLOO_SOCKET_IFNAME",
    }
)


def relevant(name: str) -> bool:
    return name in NAMES or name.upper().startswith(PREFIXES)


def probe_env(deps: ProbeDeps) -> dict[str, Any]:
    picked = {k: v for k, v in deps.environ.items() if relevant(k)}
    redacted = redact_env(picked)
    # redact_env strips the real home; deps.home may differ in tests and saved snapshots.
    return {"env": {k: redact_home(v, deps.home) for k, v in sorted(redacted.items())}}
