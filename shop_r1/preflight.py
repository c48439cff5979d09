"""Everything checked before any GPU time: data, model shape, plan, doctor's checks.

Order: load + validate the data (cheap, most common mistake) -> read the model's
config -> decide the plan from the machine's facts -> run the doctor's checks on
snapshot + plan, plus the trainer's own (tiny dataset, free disk) -> stop on errors
unless `--ignore CODE`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop_r1.autoconfig import AutoPlan, decide
from shop_r1.config import GRPORunConfig, SFTRunConfig, _RunConfig
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.memory import GIB, ModelShape

# checkpoint = weights + optimizer state; keep this many + the final model on disk
DISK_BYTES_PER_PARAM = 2 + 12


@dataclass
class Prepared:
    cfg: _RunConfig
    plan: AutoPlan
    shape: ModelShape
    rows: list[dict[str, Any]]
    test_rows: list[dict[str, Any]]
    snapshot: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)

    def errors(self, ignore: Iterable[str] = ()) -> list[Finding]:
        skip = set(ignore)
        return [f for f in self.findings if f.severity == "error" and f.code not in skip]


def load_rows(cfg: _RunConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train rows, held-out rows) in the command's row format; bad data -> ToolError."""
    from shop_r1.data.io import load_sessions
    from shop_r1.data.prompts import rl_rows, sft_rows
    from shop_r1.data.split import split_by_session

    if not cfg.data:
        raise ToolError("--data: missing; give a sessions file (JSONL or parquet)")
    sessions = load_sessions(cfg.data)
    train, test = split_by_session(sessions, cfg.test_fraction, cfg.seed)
    make = rl_rows if isinstance(cfg, GRPORunConfig) else sft_rows
    kw = {"context": cfg.context, "max_tokens": cfg.max_prompt_tokens}
    return make(train, **kw), make(test, **kw)


def model_config_dict(model: str) -> dict[str, Any]:
    """config.json of a local directory, or from the Hub (config only, small)."""
    local = Path(model) / "config.json"
    if local.is_file():
        return json.loads(local.read_text(encoding="utf-8"))
    try:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(model).to_dict()
    except (OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ToolError(f"--model {model}: cannot read its config ({first[:160]})") from None


def longest_row_tokens(rows: list[dict[str, Any]], tokenizer: Any, sample: int = 256) -> int:
    """Longest prompt (+ completion for SFT) in tokens over the first `sample` rows."""
    longest = 0
    for row in rows[:sample]:
        messages = list(row["prompt"]) + list(row.get("completion", []))
        ids = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False)
        longest = max(longest, len(ids))
    return longest


def live_snapshot(cfg: _RunConfig | None = None) -> dict[str, Any]:
    """The doctor's full snapshot (torch facts cached; risky imports in children).

    Liger's import (~19 s on the H100) and vLLM's (~16 s) are asked for only when the plan
    may use them: SFT with liger_kernel auto/on, GRPO with use_vllm auto/on
    (auto-configuration turns them on when they import)."""
    from shop_r1_doctor.probes.collect import collect_snapshot

    want: tuple[str, ...] = ()
    if isinstance(cfg, SFTRunConfig) and cfg.liger_kernel != "off":
        want = ("liger_kernel",)
    if isinstance(cfg, GRPORunConfig) and cfg.use_vllm != "off":
        want = ("vllm",)  # use_vllm auto chooses vLLM only when it imports
    return collect_snapshot(fast=False, timeout=60.0, want_imports=want)


def plan_section(cfg: _RunConfig, plan: AutoPlan, shape: ModelShape, n_rows: int) -> dict[str, Any]:
    """The snapshot contract's `plan` fields, for the doctor's plan checks."""
    section = {
        "task": "grpo" if isinstance(cfg, GRPORunConfig) else "sft",
        "model": cfg.model,
        "model_params": shape.params,
        # the full shape, so the doctor's memory checks need not guess it from params
        "model_shape": dataclasses.asdict(shape),
        # the plan's own peak (memory.estimate_training_memory): the colocate check uses it
        "predicted_peak_bytes": plan.predicted_peak_bytes,
        "attn_implementation": plan.attn_implementation,
        "bf16": plan.dtype == "bf16",
        "fp16": plan.dtype == "fp16",
        "master_fp32": plan.master_weights == "fp32",
        "max_length": plan.seq_len,
        "gradient_checkpointing": plan.gradient_checkpointing,
        "chunked_loss": plan.chunked_loss,
        "use_liger_kernel": plan.liger_kernel,
        "num_processes": cfg.num_processes,
        "per_device_train_batch_size": plan.micro_batch_size,
        "gradient_accumulation_steps": plan.gradient_accumulation_steps,
        "dataset_rows": n_rows,
        "output_dir": cfg.output_dir,
        "use_vllm": plan.use_vllm,
    }
    if isinstance(cfg, GRPORunConfig):
        section["num_generations"] = cfg.num_generations
        section["scale_rewards"] = cfg.scale_rewards
        section["self_certainty_weight"] = cfg.self_certainty_weight
        section["generation_batch_size"] = plan.generation_batch_size
        if plan.use_vllm:
            section["vllm_mode"] = plan.vllm_mode
            section["vllm_gpu_memory_utilization"] = plan.vllm_gpu_memory_utilization
            if plan.vllm_mode == "server":  # the doctor checks the client's address
                section["vllm_server_host"] = cfg.vllm_server_host
                section["vllm_server_port"] = cfg.vllm_server_port
                section["vllm_group_port"] = cfg.vllm_group_port
    return section


def trainer_findings(
    cfg: _RunConfig, plan: AutoPlan, shape: ModelShape, n_rows: int
) -> list[Finding]:
    """The trainer's own checks (the doctor's cover the environment and the plan)."""
    # A dataset smaller than one batch (TRAINER_ZERO_STEPS_TINY_DATASET) is the doctor's
    # plan check: it reads dataset_rows and the batch sizes from plan_section, for SFT
    # (one effective batch) and GRPO (prompts per generation batch: TRL's sampler drops
    # an incomplete one). Checking it here too printed the same error twice.
    found = []
    out = Path(cfg.output_dir).resolve()
    probe = next((p for p in [out, *out.parents] if p.exists()), None)
    if probe is not None:
        free = shutil.disk_usage(probe).free
        need = shape.params * DISK_BYTES_PER_PARAM * (cfg.save_total_limit + 1)
        if free < need:
            found.append(
                Finding(
                    code="TRAINER_DISK_FULL",
                    severity="error",
                    title=f"{free / GIB:.1f} GiB free under {probe}, checkpoints need ~{need / GIB:.1f} GiB",
                    fix="free disk space, lower save_total_limit, or choose another --output-dir",
                    subject="trainer",
                )
            )
    if plan.predicted_peak_bytes > plan.memory_budget_bytes and plan.device == "cuda":
        found.append(
            Finding(
                code="MODEL_TOO_LARGE_FOR_GPU",
                severity="error",
                title=f"predicted peak {plan.predicted_peak_bytes / GIB:.1f} GiB > "
                f"{plan.memory_budget_bytes / GIB:.1f} GiB usable on the GPU",
                fix="--set master_weights=bf16, a shorter max_length / max_prompt_tokens, "
                "or a smaller model",
                subject="trainer",
            )
        )
    return found


def prepare(
    cfg: _RunConfig,
    *,
    snapshot: dict[str, Any] | None = None,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
    shape: ModelShape | None = None,
    seq_len: int | None = None,
    tokenizer_loader: Callable[[str], Any] | None = None,
) -> Prepared:
    """Data -> shape -> plan -> findings. Tests inject snapshot/rows/shape/seq_len."""
    train_rows, test_rows = rows if rows is not None else load_rows(cfg)
    if shape is None:
        shape = ModelShape.from_config_dict(model_config_dict(cfg.model), name=cfg.model)
    if seq_len is None:
        if tokenizer_loader is None:
            from transformers import AutoTokenizer

            tokenizer_loader = AutoTokenizer.from_pretrained
        seq_len = max(longest_row_tokens(train_rows, tokenizer_loader(cfg.model)), 16)
    snapshot = dict(snapshot if snapshot is not None else live_snapshot(cfg))
    from shop_r1._compat import trl_has_fused_lm_head

    plan = decide(snapshot, cfg, shape, seq_len=seq_len, trl_fused_lm_head=trl_has_fused_lm_head())
    snapshot["plan"] = plan_section(cfg, plan, shape, len(train_rows))
    from shop_r1_doctor.checks import run_checks

    findings = trainer_findings(cfg, plan, shape, len(train_rows)) + run_checks(snapshot)
    if isinstance(cfg, SFTRunConfig) and seq_len > cfg.max_length:
        findings.append(
            Finding(
                code="TRAINER_ROWS_TRUNCATED",
                severity="warning",
                title=f"longest row is {seq_len} tokens > max_length {cfg.max_length}",
                detail="Completions past max_length are cut; fully cut rows are dropped by TRL.",
                fix="raise max_length or set max_prompt_tokens",
                subject="trainer",
            )
        )
    return Prepared(cfg, plan, shape, train_rows, test_rows, snapshot, findings)
