"""Everything checked before any GPU time: data, model shape, plan, doctor's checks.

Order: load + validate the data (cheap, most common mistake) -> read the model's
config -> decide the plan from the machine's facts -> run the doctor's checks on
snapshot + plan, plus the trainer's own (tiny dataset, free disk) -> stop on errors
unless `--ignore CODE`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop_r1.autoconfig import AutoPlan, decide
from shop_r1.config import GRPORunConfig, SFTRunConfig, _RunConfig
from shop_r1_doctor.api import Finding, ModelShape, PlanShape, RunPlan, trl_plan_fields
from shop_r1_doctor.errors import ToolError


@dataclass
class Prepared:
    cfg: _RunConfig
    plan: AutoPlan
    shape: ModelShape
    rows: list[dict[str, Any]]
    test_rows: list[dict[str, Any]]
    snapshot: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    # the run's TRL config with the plan's decisions (`shop_r1.trl_config`), TRL's own
    # checks not yet run: the RunPlan the checks judged was read from it
    args: Any = None

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


def row_token_lengths(rows: list[dict[str, Any]], tokenizer: Any, sample: int = 256) -> list[int]:
    """Prompt (+ completion for SFT) lengths in tokens of the first `sample` rows."""
    lengths = []
    for row in rows[:sample]:
        messages = list(row["prompt"]) + list(row.get("completion", []))
        ids = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False)
        lengths.append(len(ids))
    return lengths


def longest_row_tokens(rows: list[dict[str, Any]], tokenizer: Any, sample: int = 256) -> int:
    """Longest prompt (+ completion for SFT) in tokens over the first `sample` rows."""
    return max(row_token_lengths(rows, tokenizer, sample), default=0)


def live_snapshot(cfg: _RunConfig | None = None, output_dir: str | None = None) -> dict[str, Any]:
    """The doctor's full snapshot (torch facts cached; risky imports in children), with
    the free disk under `output_dir` for the doctor's checkpoint check.

    Liger's import (~19 s on the H100) and vLLM's (~16 s) are asked for only when the plan
    may use them: liger_kernel auto/on, GRPO with use_vllm auto/on (auto-configuration
    turns them on when they import)."""
    from shop_r1_doctor.api import collect_snapshot

    return collect_snapshot(
        fast=False, timeout=60.0, output_dir=output_dir, want_imports=wanted_imports(cfg)
    )


def wanted_imports(cfg: _RunConfig | None) -> tuple[str, ...]:
    """The optional imports the plan for `cfg` decides on. A snapshot without one plans
    as if it failed: GRPO on the H100 planned `liger_kernel False` ("not installed")
    where Liger imports, once GRPO took Liger by default."""
    want: list[str] = []
    if isinstance(cfg, SFTRunConfig | GRPORunConfig) and cfg.liger_kernel != "off":
        want.append("liger_kernel")
    if isinstance(cfg, GRPORunConfig) and cfg.use_vllm != "off":
        want.append("vllm")  # use_vllm auto chooses vLLM only when it imports
    return tuple(want)


def plan_section(
    cfg: _RunConfig,
    plan: AutoPlan,
    shape: ModelShape,
    n_rows: int,
    longest_sample_tokens: int | None = None,
    trl_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The RunPlan of this run after auto-configuration: what will actually run. The
    fields TRL's config holds come from `trl_settings`, the TRL fields the plan or the
    user chose on the run's TRL config (`ShopSFTConfig.settings()`), so a TRL field set in
    YAML or with --set (fsdp, torch_compile, save_only_model, vllm_tensor_parallel_size,
    ...) reaches the checks that read it."""
    g = cfg if isinstance(cfg, GRPORunConfig) else None
    vllm = g is not None and plan.use_vllm
    server = vllm and plan.vllm_mode == "server"
    ours: dict[str, Any] = dict(
        task="grpo" if g else "sft",
        model=cfg.model,
        model_params=shape.params,
        # the full shape, so the doctor's memory checks need not guess it from params
        model_shape=PlanShape(**dataclasses.asdict(shape)),
        # the plan's own peak (memory.estimate_training_memory): the colocate check uses it
        predicted_peak_bytes=plan.predicted_peak_bytes,
        attn_implementation=plan.attn_implementation,
        bf16=plan.dtype == "bf16",
        fp16=plan.dtype == "fp16",
        master_fp32=plan.master_weights == "fp32",
        fp32_hidden=plan.hidden_dtype == "fp32",
        # SFT: the configured limit and the longest row (the doctor warns when rows are
        # cut and sizes memory by the shorter); GRPO: prompt + completion tokens
        max_length=cfg.max_length if isinstance(cfg, SFTRunConfig) else plan.seq_len,
        longest_sample_tokens=longest_sample_tokens if isinstance(cfg, SFTRunConfig) else None,
        gradient_checkpointing=plan.gradient_checkpointing,
        chunked_loss=plan.chunked_loss,
        use_liger_kernel=plan.liger_kernel,
        num_processes=cfg.num_processes,
        per_device_train_batch_size=plan.micro_batch_size,
        dataloader_num_workers=plan.dataloader_num_workers,
        gradient_accumulation_steps=plan.gradient_accumulation_steps,
        dataset_rows=n_rows,
        output_dir=cfg.output_dir,
        save_total_limit=cfg.save_total_limit,
        use_vllm=plan.use_vllm,
        num_generations=g.num_generations if g else None,
        scale_rewards=g.scale_rewards if g else None,
        self_certainty_weight=g.self_certainty_weight if g else None,
        generation_batch_size=plan.generation_batch_size if g else None,
        vllm_mode=plan.vllm_mode if vllm else None,
        vllm_gpu_memory_utilization=plan.vllm_gpu_memory_utilization if vllm else None,
        # the doctor checks the client's address
        vllm_server_host=g.vllm_server_host if g and server else None,
        vllm_server_port=g.vllm_server_port if g and server else None,
        vllm_group_port=g.vllm_group_port if g and server else None,
    )
    return RunPlan(**{**ours, **trl_plan_fields(trl_settings or {})}).to_dict()


def prepare(
    cfg: _RunConfig,
    *,
    snapshot: dict[str, Any] | None = None,
    rows: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
    shape: ModelShape | None = None,
    seq_len: int | None = None,
    mean_tokens: float | None = None,
    tokenizer_loader: Callable[[str], Any] | None = None,
    ray: bool = False,
) -> Prepared:
    """Data -> shape -> plan -> findings. Tests inject snapshot/rows/shape/seq_len
    (and mean_tokens, the rows' mean length, which sizes SFT's token budget). `ray`: this
    process is a Ray Train worker (vLLM colocates: nothing starts a server under Ray)."""
    train_rows, test_rows = rows if rows is not None else load_rows(cfg)
    if shape is None:
        shape = ModelShape.from_config_dict(model_config_dict(cfg.model), name=cfg.model)
    if seq_len is None:
        if tokenizer_loader is None:
            from transformers import AutoTokenizer

            tokenizer_loader = AutoTokenizer.from_pretrained
        lengths = row_token_lengths(train_rows, tokenizer_loader(cfg.model))
        seq_len = max(max(lengths, default=0), 16)
        if lengths and isinstance(cfg, SFTRunConfig):  # rows are cut at max_length
            mean_tokens = sum(min(n, cfg.max_length) for n in lengths) / len(lengths)
    snapshot = dict(snapshot if snapshot is not None else live_snapshot(cfg, cfg.output_dir))
    from shop_r1._compat import trl_has_fused_lm_head

    plan = decide(
        snapshot,
        cfg,
        shape,
        seq_len=seq_len,
        trl_fused_lm_head=trl_has_fused_lm_head(),
        mean_tokens=mean_tokens,
        ray=ray,
    )
    from shop_r1 import trl_config

    args = trl_config.build(cfg, plan)
    # the RunPlan's use_ray stays unset: it makes the checks of ray.init() errors, and a
    # worker joined its cluster before this preflight ran
    snapshot["plan"] = plan_section(cfg, plan, shape, len(train_rows), seq_len, args.settings())
    from shop_r1_doctor.api import run_checks

    # The doctor's checks are the trainer's preflight: one disk check, one model-fit
    # check and one truncation check, fed by the plan above and one memory model.
    findings = run_checks(snapshot)
    return Prepared(cfg, plan, shape, train_rows, test_rows, snapshot, findings, args)
