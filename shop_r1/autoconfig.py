"""Turn the doctor's facts + the run config into concrete training settings, each with
the reason it was chosen. Pure: reads a snapshot dict (the doctor's contract) and a
`ModelShape`; imports no torch, so the decision table has golden tests on recorded
snapshots of several machines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from shop_r1 import packing
from shop_r1.config import GRPORunConfig, SFTRunConfig, _RunConfig
from shop_r1_doctor.api import (
    GIB,
    LOADER_SHM_MIN,
    NOT_PROBED,
    Facts,
    GpuFacts,
    ModelShape,
    accumulation_steps,
    estimate_training_memory,
    grpo_generation_unit,
    grpo_vllm_speedup,
    parse_version,
    round_up_to,
    shown,
    vllm_layout,
    vllm_memory_fraction,
)

# Below this learning rate most AdamW updates (~lr per step) are smaller than half a
# bf16 ulp of a typical weight (|w| ~ 0.02: ulp 2^-13 ~ 1.2e-4, half ~ 6e-5) and round
# away: keep fp32 master weights (bf16 autocast compute). The paper's SFT lr 2e-5 and
# GRPO lr 1e-7 are both far below it.
BF16_MIN_LR = 1e-4
MAX_MICRO_BATCH = 64
CPU_MEMORY_SHARE = 0.5  # of host RAM, when training on the CPU


@dataclass(frozen=True)
class Decision:
    setting: str
    value: Any
    reason: str


@dataclass
class AutoPlan:
    """Everything the trainer needs that the user may leave as 'auto'."""

    device: str = "cpu"
    attn_implementation: str = "sdpa"
    dtype: str = "fp32"
    master_weights: str = "fp32"
    # the stream between layers under autocast with fp32 masters: fp32 (autocast's
    # default, the embedding's dtype) or the compute dtype (shop_r1.precision)
    hidden_dtype: str = "fp32"
    micro_batch_size: int = 1
    gradient_accumulation_steps: int = 1
    gradient_checkpointing: bool = False
    chunked_loss: bool = True
    padding_free: bool = False
    liger_kernel: bool = False
    optim: str = "adamw_torch"
    dataloader_num_workers: int = 0
    # transformers' NaN-loss filter: a host read of every micro step's loss
    logging_nan_inf_filter: bool = True
    seq_len: int = 0
    # SFT: tokens per micro batch (one best-fit-decreasing bin of rows); None = whole rows
    token_budget: int | None = None
    predicted_peak_bytes: int = 0
    memory_budget_bytes: int = 0
    # GRPO
    generation_batch_size: int | None = None
    use_vllm: bool = False
    vllm_mode: Literal["server", "colocate"] | None = None
    vllm_gpu_memory_utilization: float | None = None
    # the frozen reference model's dtype (None: beta 0, no reference model)
    reference_dtype: str | None = None
    trim_padding: bool = False
    decisions: list[Decision] = field(default_factory=list)

    def note(self, setting: str, value: Any, reason: str) -> None:
        self.decisions.append(Decision(setting, value, reason))


def _gpu_free_bytes(gpu: GpuFacts) -> int:
    total = gpu.memory_total_bytes or 0
    used = gpu.memory_used_bytes or 0
    return max(total - used, 0)


def _cuda(facts: Facts) -> bool:
    torch = facts.torch
    if torch and torch.cuda_available is not NOT_PROBED:
        return bool(torch.cuda_available)
    return bool(facts.gpus)


def _first_line(error: str) -> str:
    """An import error's first line, cut at 80 characters, for a reason ('error' if none)."""
    lines = error.splitlines()
    return lines[0][:80] if lines else "error"


def _choose_attention(facts: Facts, cfg: _RunConfig, cuda: bool, plan: AutoPlan) -> None:
    if cfg.attn_implementation != "auto":
        plan.attn_implementation = cfg.attn_implementation
        plan.note("attn_implementation", cfg.attn_implementation, "set in the config")
        return
    torch_version = parse_version(facts.torch.version if facts.torch else None)
    if torch_version is not None and torch_version.release < (2, 1, 1):
        plan.attn_implementation = "eager"
        plan.note("attn_implementation", "eager", f"torch {torch_version} has no usable sdpa")
        return
    if not cuda:
        plan.attn_implementation = "sdpa"
        plan.note("attn_implementation", "sdpa", "no CUDA GPU: FlashAttention needs one")
        return
    cc = min(facts.ccs(), default=None)
    cc_text = ".".join(map(str, cc or ()))  # printed only when the cc is known
    if cc and cc[0] == 9 and facts.import_ok("flash_attn_interface"):
        plan.attn_implementation = "flash_attention_3"
        plan.note(
            "attn_implementation",
            "flash_attention_3",
            f"Hopper (cc {cc_text}), flash_attn_interface imports",
        )
        return
    fa2 = facts.import_ok("flash_attn")
    if cc and cc >= (8, 0) and fa2:
        plan.attn_implementation = "flash_attention_2"
        plan.note(
            "attn_implementation", "flash_attention_2", f"cc {cc_text} >= 8.0, flash_attn imports"
        )
        return
    if cc and cc < (8, 0):
        why = f"cc {cc_text} < 8.0: FlashAttention 2 needs Ampere or newer"
    elif fa2 is False:
        why = f"flash_attn import fails ({_first_line(facts.import_error('flash_attn'))})"
    elif facts.installed("flash-attn") is False:
        why = "flash-attn is not installed (pip install flash-attn for ~1.5-2x with padding-free)"
    else:
        why = "flash_attn import health unknown"
    plan.attn_implementation = "sdpa"
    plan.note("attn_implementation", "sdpa", why)


def _choose_hidden_dtype(cfg: _RunConfig, plan: AutoPlan) -> None:
    """Only fp32 masters under bf16 autocast have a choice: pure bf16 weights make bf16
    hidden states anyway, fp32 compute fp32 ones, and fp16's narrow range is why its
    loss is scaled (a fp16 residual stream would add overflow to that)."""
    if plan.master_weights != "fp32" or plan.dtype != "bf16":
        plan.hidden_dtype = plan.dtype if plan.master_weights != "fp32" else "fp32"
        return
    if cfg.hidden_dtype != "auto":
        plan.hidden_dtype, why = cfg.hidden_dtype, "set in the config"
    else:
        plan.hidden_dtype = "bf16"
        why = (
            "the stream between layers in bf16, as a bf16 model keeps it; weights, grads "
            "and AdamW stay fp32 (+8% and +23% tokens/s over the fp32 stream, 0.5B, H100)"
        )
    plan.note("hidden_dtype", plan.hidden_dtype, why)


def _choose_dtype(facts: Facts, cfg: _RunConfig, cuda: bool, plan: AutoPlan) -> None:
    bf16_ok = bool(facts.torch and facts.torch.bf16_supported) or any(
        c >= (8, 0) for c in facts.ccs()
    )
    if cfg.dtype != "auto":
        plan.dtype, why = cfg.dtype, "set in the config"
    elif not cuda:
        plan.dtype, why = "fp32", "CPU: bf16 matmuls are slow or emulated there"
    elif bf16_ok:
        plan.dtype, why = "bf16", "the GPU supports bf16"
    else:
        plan.dtype, why = "fp16", "no bf16 on this GPU: fp16 autocast with loss scaling"
    plan.note("dtype", plan.dtype, why)
    if plan.dtype != "bf16":
        plan.master_weights = "fp32"
        why = "fp32 compute" if plan.dtype == "fp32" else "fp16 needs fp32 masters for loss scaling"
    elif cfg.master_weights != "auto":
        plan.master_weights, why = cfg.master_weights, "set in the config"
    elif cfg.learning_rate < BF16_MIN_LR:
        plan.master_weights = "fp32"
        why = f"lr {cfg.learning_rate:g} < {BF16_MIN_LR:g}: updates would vanish in bf16 weights"
    else:
        plan.master_weights = "bf16"
        why = "pure bf16: 8 instead of 18 bytes/param, ~11% faster (measured, 0.5B)"
    plan.note("master_weights", plan.master_weights, why)
    _choose_hidden_dtype(cfg, plan)
    plan.optim = (
        cfg.optim if cfg.optim != "auto" else ("adamw_torch_fused" if cuda else "adamw_torch")
    )
    plan.note(
        "optim",
        plan.optim,
        "set in the config" if cfg.optim != "auto" else ("fused AdamW kernel" if cuda else "CPU"),
    )


def _choose_kernels(facts: Facts, cfg: _RunConfig, cuda: bool, plan: AutoPlan) -> None:
    """Liger's Triton kernels for the decoder layers (TRL keeps its own fused LM head)."""
    ok = facts.import_ok("liger_kernel.transformers")
    if cfg.liger_kernel != "auto":
        plan.liger_kernel, why = cfg.liger_kernel == "on", "set in the config"
    elif not cuda:
        plan.liger_kernel, why = False, "no CUDA GPU: Liger's kernels are Triton (GPU) kernels"
    elif ok:
        version = facts.import_version("liger_kernel")
        plan.liger_kernel = True
        gain = (
            "GRPO step 1.34x at 1.5B with vLLM (less memory: micro batch 8 fits)"
            if isinstance(cfg, GRPORunConfig)
            else "+13% (fp32 masters) to +36% (bf16) tokens/s on 0.5B"
        )
        why = (
            f"liger-kernel{f' {version}' if version else ''} imports: fused RMSNorm/SwiGLU/"
            f"RoPE, {gain}, H100"
        )
    elif facts.installed("liger-kernel") and ok is False:
        plan.liger_kernel = False
        error = _first_line(facts.import_error("liger_kernel.transformers"))
        why = f"liger_kernel import fails ({error})"
    else:
        plan.liger_kernel = False
        why = "liger-kernel is not installed (pip install 'shop-r1[liger]': up to +36% tokens/s at 0.5B)"
    plan.note("liger_kernel", plan.liger_kernel, why)


LOADER_WORKERS = 2


def _choose_loader(facts: Facts, cuda: bool, plan: AutoPlan) -> None:
    """DataLoader workers: on a GPU, fetching and collating the next batch in worker
    processes overlaps the step instead of leaving the GPU idle while the main process
    does it (TRL's padding-free collator builds position ids and cu_seq_lens on the CPU);
    they need /dev/shm to hand batches over."""
    shm = facts.host.shm_bytes
    if not cuda:
        plan.dataloader_num_workers, why = 0, "no CUDA GPU: the main process is not waiting on one"
    elif not isinstance(shm, int):
        plan.dataloader_num_workers, why = 0, "/dev/shm's size is unknown (workers need it)"
    elif shm < LOADER_SHM_MIN:
        plan.dataloader_num_workers = 0
        why = f"/dev/shm is {shm // 2**20} MiB: workers would die with 'Bus error' (docker --shm-size=8g)"
    else:
        plan.dataloader_num_workers = LOADER_WORKERS
        why = f"batches prepared while the GPU computes (/dev/shm {shm / GIB:.0f} GiB)"
    plan.note("dataloader_num_workers", plan.dataloader_num_workers, why)


def _choose_loss_filter(cuda: bool, plan: AutoPlan) -> None:
    """transformers' `logging_nan_inf_filter` tests every micro step's loss for NaN as a
    Python bool: the host waits for the GPU's forward and backward before it may launch
    the next micro step. On a GPU the non-finite guard already drops NaN updates (on the
    device, with fused AdamW), and a NaN in the logged loss is worth seeing, not hiding."""
    plan.logging_nan_inf_filter = not cuda
    plan.note(
        "logging_nan_inf_filter",
        plan.logging_nan_inf_filter,
        "NaN updates are dropped by the guard; the filter made the host wait for the GPU "
        "every micro step"
        if cuda
        else "no GPU to wait for",
    )


def _memory_budget(facts: Facts, cfg: _RunConfig, cuda: bool) -> int:
    if cuda and facts.gpus:
        return int(cfg.gpu_memory_headroom * min(_gpu_free_bytes(g) for g in facts.gpus))
    ram = facts.host.ram_bytes or 16 * GIB
    return int(CPU_MEMORY_SHARE * ram)


def _divisors_desc(n: int, cap: int) -> list[int]:
    return [d for d in range(min(n, cap), 0, -1) if n % d == 0]


def _choose_batch(
    cfg: _RunConfig,
    shape: ModelShape,
    plan: AutoPlan,
    *,
    seq_len: int,
    loss_tokens_per_row: int | None,
    reserved: int,
    explicit_mask: bool = False,
) -> None:
    """Largest micro batch that fits; gradient checkpointing only if nothing fits without it."""
    per_gpu = cfg.global_batch_size // cfg.num_processes
    budget = plan.memory_budget_bytes - reserved
    # GRPO's peak already ran above its estimate (1.5B, mb 4: 52.0 GiB predicted, 55.3
    # measured); counting the bf16 stream's smaller activations there picked mb 8 at a
    # predicted 70.1 GiB, which ran out of the H100's 79 GiB in the backward pass
    # (benchmarks/results/h100_bf16_hidden_993be1b/). GRPO keeps the fp32 stream's
    # estimate, so the smaller activations are headroom, until its estimate is re-fit.
    fp32_hidden = plan.hidden_dtype == "fp32" or isinstance(cfg, GRPORunConfig)

    def estimate(mb: int, ckpt: bool) -> int:
        # padding-free: one row of mb x the longest row, the worst draw (never an OOM)
        rows, length = (1, mb * seq_len) if plan.padding_free else (mb, seq_len)
        return estimate_training_memory(
            shape,
            seq_len=length,
            micro_batch=rows,
            dtype=plan.dtype,
            master_fp32=plan.master_weights == "fp32",
            fp32_hidden=fp32_hidden,
            grad_checkpointing=ckpt,
            chunked_loss=plan.chunked_loss,
            loss_tokens=None if loss_tokens_per_row is None else loss_tokens_per_row * mb,
            attention="eager" if plan.attn_implementation == "eager" else "sdpa",
            fused_kernels=plan.liger_kernel,
            # sdpa under a padding or block-diagonal mask keeps a bias per layer
            explicit_mask=explicit_mask and plan.attn_implementation == "sdpa",
        ).total

    fixed_mb = cfg.micro_batch_size if cfg.micro_batch_size != "auto" else None
    fixed_ga = cfg.gradient_accumulation_steps if cfg.gradient_accumulation_steps != "auto" else 1
    # with accumulation fixed, a micro batch is a share of rows/GPU / accumulation steps
    # (not of rows/GPU: that multiplied the effective batch by the accumulation steps)
    rows_per_step = max(per_gpu // fixed_ga, 1)
    candidates = [fixed_mb] if fixed_mb else _divisors_desc(rows_per_step, MAX_MICRO_BATCH)
    ckpt_options = {"on": [True], "off": [False], "auto": [False, True]}[cfg.gradient_checkpointing]
    choice = None
    for ckpt in ckpt_options:
        for mb in candidates:
            if estimate(mb, ckpt) <= budget:
                choice = (mb, ckpt)
                break
        if choice:
            break
    fits = choice is not None
    if choice is None:  # nothing fits: plan the smallest footprint; preflight reports it
        choice = (candidates[-1], ckpt_options[-1])
    mb, ckpt = choice
    plan.micro_batch_size, plan.gradient_checkpointing = mb, ckpt
    plan.predicted_peak_bytes = estimate(mb, ckpt) + reserved
    if cfg.gradient_accumulation_steps != "auto":
        plan.gradient_accumulation_steps = cfg.gradient_accumulation_steps
    else:
        plan.gradient_accumulation_steps = accumulation_steps(
            cfg.global_batch_size, mb, cfg.num_processes
        )
    gib = lambda b: f"{b / GIB:.1f} GiB"  # noqa: E731
    fit_text = (
        f"predicted peak {gib(plan.predicted_peak_bytes)} of {gib(plan.memory_budget_bytes)} budget"
        if fits
        else f"does NOT fit: {gib(plan.predicted_peak_bytes)} > {gib(plan.memory_budget_bytes)}"
    )
    per_step = " per accumulation step" if fixed_ga > 1 else ""
    plan.note(
        "micro_batch_size",
        mb,
        (
            "set in the config; "
            if fixed_mb
            else f"largest divisor of {rows_per_step} rows/GPU{per_step} that fits; "
        )
        + f"seq {seq_len}: {fit_text}",
    )
    plan.note(
        "gradient_accumulation_steps",
        plan.gradient_accumulation_steps,
        f"global batch {cfg.global_batch_size} = {mb} x {plan.gradient_accumulation_steps} x "
        f"{cfg.num_processes} GPU(s)",
    )
    if cfg.gradient_checkpointing != "auto":
        why = "set in the config"
    elif ckpt:
        why = "no micro batch fits without it (costs ~20% speed)"
    else:
        why = "not needed: activations fit (saves ~20% time)"
    plan.note("gradient_checkpointing", ckpt, why)


def decide(
    snapshot: dict[str, Any],
    cfg: _RunConfig,
    shape: ModelShape,
    *,
    seq_len: int,
    completion_len: int | None = None,
    trl_fused_lm_head: bool = True,
    mean_tokens: float | None = None,
    ray: bool = False,
) -> AutoPlan:
    """The settings for this run on this machine. `seq_len`: longest prompt+completion
    in tokens (SFT) or longest prompt (GRPO, completion_len added from the config);
    `mean_tokens`: the rows' mean length (SFT; sizes token-budget micro batches); `ray`:
    a Ray Train worker (Ray places the processes and starts no vLLM server)."""
    facts = Facts(snapshot)
    cuda = _cuda(facts)
    plan = AutoPlan(device="cuda" if cuda else "cpu")
    gpu_names = sorted({shown(g.name, "None") for g in facts.gpus}) if cuda else []
    plan.note("device", plan.device, ", ".join(gpu_names) or "no CUDA GPU visible to torch")
    _choose_attention(facts, cfg, cuda, plan)
    _choose_dtype(facts, cfg, cuda, plan)
    _choose_kernels(facts, cfg, cuda, plan)
    plan.chunked_loss = trl_fused_lm_head
    plan.note(
        "chunked_loss",
        trl_fused_lm_head,
        f"TRL's fused LM head scores tokens in tiles, never the full {shape.vocab}-vocab logits"
        if trl_fused_lm_head
        else "this TRL has no fused LM head: full logits (~13 B x tokens x vocab)",
    )
    plan.memory_budget_bytes = _memory_budget(facts, cfg, cuda)
    _choose_loader(facts, cuda, plan)
    _choose_loss_filter(cuda, plan)
    if isinstance(cfg, GRPORunConfig):
        _decide_grpo(facts, cfg, shape, plan, cuda, prompt_len=seq_len, ray=ray)
    else:
        assert isinstance(cfg, SFTRunConfig)
        plan.seq_len = min(seq_len, cfg.max_length)
        _choose_packing(facts, cfg, cuda, plan)
        # SFT rows differ in length: padded batches carry a padding mask
        _choose_batch(
            cfg,
            shape,
            plan,
            seq_len=plan.seq_len,
            loss_tokens_per_row=None,
            reserved=0,
            explicit_mask=plan.attn_implementation == "sdpa",
        )
        _choose_token_budget(cfg, shape, plan, mean_tokens=mean_tokens)
    return plan


def _choose_packing(facts: Facts, cfg: SFTRunConfig, cuda: bool, plan: AutoPlan) -> None:
    """Padding-free batches: flash-attn's varlen kernel when it imports, else torch's own
    varlen flash kernel (`shop_r1.packing`, registered as `sdpa_varlen`)."""
    attn = plan.attn_implementation
    if cfg.packing != "auto":
        plan.padding_free = cfg.packing == "on"
        why = "set in the config"
        if plan.padding_free and attn == "sdpa":
            why += (
                "; sdpa gets a (tokens x tokens) block-diagonal mask and computes every tile "
                f"(attn_implementation: {packing.NAME} skips them)"
            )
    elif attn.startswith("flash_attention") or attn in (packing.NAME, "flex_attention"):
        plan.padding_free = True
        why = f"{attn}: examples concatenated without padding, never attending across"
    elif cfg.attn_implementation == "auto" and attn == "sdpa" and cuda:
        torch_version = parse_version(facts.torch.version if facts.torch else None)
        cc = min(facts.ccs(), default=None)
        if torch_version is None:
            plan.padding_free = False
            why = "torch's version is unknown (the snapshot did not probe torch): padded batches"
        elif torch_version.release < packing.MIN_TORCH:
            plan.padding_free = False
            why = f"torch {torch_version} has no varlen kernel (>= 2.9) and no flash-attn"
        elif cc is None or cc < (8, 0):
            plan.padding_free = False
            why = "torch's varlen flash kernel needs cc >= 8.0"
        else:
            plan.padding_free = True
            plan.attn_implementation = packing.NAME
            # the sdpa row's reason (why not flash-attn) stays; the value changes
            plan.decisions = [
                Decision(
                    d.setting,
                    packing.NAME,
                    f"{d.reason}; torch {torch_version}'s own "
                    "varlen flash kernel instead (torch.nn.attention.varlen)",
                )
                if d.setting == "attn_implementation"
                else d
                for d in plan.decisions
            ]
            why = (
                f"{packing.NAME}: examples concatenated without padding, never attending across"
                " (0.5B on real rows, H100: 5.3x TRL defaults' real tokens/s; FlexAttention "
                "compiled > 170 s)"
            )
    elif not cuda:
        plan.padding_free = False
        why = "no CUDA GPU: the varlen attention kernels are GPU kernels"
    else:
        plan.padding_free = False
        why = f"{attn} would attend across packed examples or compute every tile"
    plan.note("padding_free", plan.padding_free, why)


# kernels that read packed boundaries (cu_seq_lens): a bin costs its rows, not its square
BIN_KERNELS = ("flash_attention_2", "flash_attention_3", packing.NAME)
BIN_ROUND = 256  # bin sizes in multiples of this many tokens
MAX_BIN_TOKENS = 262144


def _choose_token_budget(
    cfg: SFTRunConfig, shape: ModelShape, plan: AutoPlan, *, mean_tokens: float | None
) -> None:
    """Token-budget micro batches for padding-free SFT: one bin of rows (TRL's
    best-fit-decreasing packing) per forward, sized to fill the memory budget, with
    accumulation making `global_batch_size` rows per step on average.

    Row micro batches must fit the worst draw (mb x the longest row), so on real rows
    (p50 1.6k, max 6k tokens) each forward carries a fraction of what memory allows and
    pays its host-side costs per small forward: measured on the H100 (0.5B shape, real
    rows) 67k real tokens/s with rows against 117k with bins."""
    why_not = None
    if cfg.token_budget == "off":
        why_not = "set in the config: micro batches of whole rows"
    elif not plan.padding_free:
        why_not = "batches are padded (no padding-free kernel)"
    elif plan.attn_implementation not in BIN_KERNELS:
        why_not = f"{plan.attn_implementation} does not read packed boundaries"
    elif cfg.micro_batch_size != "auto" and cfg.token_budget == "auto":
        why_not = "micro_batch_size is set in the config: whole rows"
    if why_not is not None:
        _note_before(plan, "micro_batch_size", Decision("token_budget", "off", why_not))
        return

    def peak(tokens: int) -> int:
        return estimate_training_memory(
            shape,
            seq_len=tokens,
            micro_batch=1,
            dtype=plan.dtype,
            master_fp32=plan.master_weights == "fp32",
            fp32_hidden=plan.hidden_dtype == "fp32",
            chunked_loss=plan.chunked_loss,
            fused_kernels=plan.liger_kernel,
        ).total

    longest = plan.seq_len
    per_gpu = cfg.global_batch_size // cfg.num_processes
    mean = mean_tokens if mean_tokens else longest / 2  # unknown: assume half the longest
    step_tokens = max(int(per_gpu * mean), longest)
    if isinstance(cfg.token_budget, int):
        budget, ga = cfg.token_budget, max(round(step_tokens / cfg.token_budget), 1)
        if cfg.gradient_accumulation_steps != "auto":
            ga = cfg.gradient_accumulation_steps
        why = f"set in the config; ~{step_tokens:,} tokens per step"
    else:
        # the largest bin that fits without checkpointing
        fits = [
            t
            for t in range(BIN_ROUND, MAX_BIN_TOKENS + 1, BIN_ROUND)
            if peak(t) <= plan.memory_budget_bytes
        ]
        largest = max(fits, default=0)
        if largest < longest:
            why_not = (
                f"a bin of the longest row ({longest} tokens) does not fit without "
                "checkpointing: micro batches of whole rows"
            )
            _note_before(plan, "micro_batch_size", Decision("token_budget", "off", why_not))
            return
        if cfg.gradient_accumulation_steps != "auto":
            ga = cfg.gradient_accumulation_steps
        else:
            ga = -(-step_tokens // largest)  # fewest forwards that hold a step's tokens
        # split the step's tokens evenly over the forwards; a bin holds any row up to
        # max_length (BFD would cut a longer one at the bin), memory allowing
        even = -(-step_tokens // ga)
        floor = max(longest, min(cfg.max_length, largest))
        budget = min(max(-(-even // BIN_ROUND) * BIN_ROUND, floor), largest)
        why = (
            f"{per_gpu} rows/GPU x ~{mean:,.0f} tokens{'' if mean_tokens else ' (assumed)'} "
            f"= ~{step_tokens:,} tokens per step in {ga} bin(s); the largest bin that fits "
            f"is {largest:,}"
        )
    plan.token_budget = budget
    plan.micro_batch_size = 1
    plan.gradient_accumulation_steps = ga
    plan.gradient_checkpointing = False
    plan.predicted_peak_bytes = peak(budget)
    gib = plan.predicted_peak_bytes / GIB
    plan.note(
        "token_budget",
        budget,
        f"{why}; predicted peak {gib:.1f} GiB of {plan.memory_budget_bytes / GIB:.1f} GiB "
        "(H100, 0.5B, real rows: 1.7x the tokens/s of row micro batches)",
    )
    plan.decisions = [
        d
        for d in plan.decisions
        if d.setting
        not in ("micro_batch_size", "gradient_accumulation_steps", "gradient_checkpointing")
    ]
    plan.note("micro_batch_size", 1, f"one bin of up to {budget:,} tokens per forward")
    plan.note(
        "gradient_accumulation_steps",
        ga,
        f"~{cfg.global_batch_size} rows per step = {ga} bin(s) x {cfg.num_processes} GPU(s)",
    )
    plan.note("gradient_checkpointing", False, "not needed: the bin is sized to fit without it")


def _note_before(plan: AutoPlan, setting: str, decision: Decision) -> None:
    """Insert `decision` before `setting`'s row (the table reads in the order decided)."""
    at = next((i for i, d in enumerate(plan.decisions) if d.setting == setting), None)
    plan.decisions.insert(len(plan.decisions) if at is None else at, decision)


def _decide_grpo(
    facts: Facts,
    cfg: GRPORunConfig,
    shape: ModelShape,
    plan: AutoPlan,
    cuda: bool,
    *,
    prompt_len: int,
    ray: bool = False,
) -> None:
    n_gpus = int((facts.torch.device_count if facts.torch else None) or len(facts.gpus))
    vllm_ok = facts.import_ok("vllm")
    if vllm_ok and facts.import_ok("vllm._custom_ops") is False:
        vllm_ok = False  # the package imports but its compiled kernels do not load
    if cfg.use_vllm != "auto":
        plan.use_vllm, why = cfg.use_vllm == "on", "set in the config"
    elif not cuda:
        plan.use_vllm, why = False, "no CUDA GPU: transformers generate()"
    elif vllm_ok:
        plan.use_vllm, why = True, f"vLLM imports: {grpo_vllm_speedup()} over generate()"
    elif facts.installed("vllm") is False or vllm_ok is None:
        plan.use_vllm, why = False, "vLLM is not installed: transformers generate() (slower)"
    else:
        plan.use_vllm, why = (
            False,
            "vLLM import fails (see `shop-r1 doctor`): transformers generate()",
        )
    plan.note("use_vllm", plan.use_vllm, why)

    reserved = 0
    seq = prompt_len + cfg.max_completion_length
    plan.seq_len = seq
    if plan.use_vllm:
        # the doctor's rule (trl_rules.vllm_layout), as `launch` applies it; GPUs torch
        # cannot use are not spare. A Ray worker planning from a snapshot of the whole
        # machine sees its spare GPUs too, but nothing starts a server under Ray.
        layout = vllm_layout(gpus=n_gpus if cuda else 0, processes=cfg.num_processes, ray=ray)
        if cfg.vllm_mode != "auto":
            plan.vllm_mode, why = cfg.vllm_mode, "set in the config"
        else:
            plan.vllm_mode = layout.mode
            why = {
                "spare_gpu": f"{layout.spare} GPU(s) beyond the {cfg.num_processes} training "
                "one(s): `trl vllm-serve` there",
                "nodes": f"{cfg.num_processes} processes > {n_gpus} GPU(s) here: the run spans "
                "machines, each process colocates (a loopback server serves one machine)",
                "ray": "Ray places the training workers and starts no `trl vllm-serve`: "
                "each worker colocates",
            }.get(
                layout.cause,
                "one GPU per trainer: a server on the same GPU fails (NCCL 'Duplicate GPU')",
            )
        plan.note("vllm_mode", plan.vllm_mode, why)
    # The rollout batch: one optimizer step's worth, full groups of num_generations
    if cfg.generation_batch_size == "auto":
        gen = cfg.global_batch_size
        why = f"one optimizer step of completions ({gen // cfg.num_generations} prompts x {cfg.num_generations})"
    else:
        gen = cfg.generation_batch_size
        why = "set in the config"
    if plan.use_vllm and plan.vllm_mode == "colocate":
        gpu_bytes = min((g.memory_total_bytes or 0) for g in facts.gpus) or 80 * GIB
        per_gpu_seqs = max(gen // cfg.num_processes, 1)
        if cfg.vllm_gpu_memory_utilization == "auto":
            need = vllm_memory_fraction(
                shape, gpu_bytes, max_seq_len=seq, concurrent_seqs=per_gpu_seqs
            )
            frac = min(max(math.ceil(need * 20) / 20, 0.1), 0.9)
            vwhy = (
                f"weights + KV cache for {per_gpu_seqs} seqs x {seq} tokens "
                f"({need:.0%} of {gpu_bytes / GIB:.0f} GiB), rounded up"
            )
        else:
            frac, vwhy = cfg.vllm_gpu_memory_utilization, "set in the config"
        plan.vllm_gpu_memory_utilization = frac
        plan.note("vllm_gpu_memory_utilization", frac, vwhy)
        reserved = int(frac * gpu_bytes)
    _choose_reference(cfg, plan)
    if plan.reference_dtype is not None:
        reserved += shape.params * (4 if plan.reference_dtype == "fp32" else 2)
    _choose_batch(
        cfg,
        shape,
        plan,
        seq_len=seq,
        loss_tokens_per_row=cfg.max_completion_length,
        reserved=reserved,
    )
    # TRL's rules (shop_r1_doctor.trl_rules, as the doctor's checks apply them)
    unit = grpo_generation_unit(cfg.num_generations, cfg.num_processes, plan.micro_batch_size)
    if gen % unit:
        fixed = round_up_to(gen, unit)
        why = (
            f"{gen} is not a multiple of num_generations {cfg.num_generations} and micro batch "
            f"{plan.micro_batch_size} x {cfg.num_processes} GPU(s): using {fixed}"
        )
        gen = fixed
    plan.generation_batch_size = gen
    plan.note("generation_batch_size", gen, why)
    if cfg.trim_padding != "auto":
        plan.trim_padding, why = cfg.trim_padding == "on", "set in the config"
    else:
        plan.trim_padding = True
        why = (
            "prompts are left-padded to the rollout's longest: each micro batch is scored "
            "from its own longest (positions shift together, RoPE scores are unchanged)"
        )
    plan.note("trim_padding", plan.trim_padding, why)


def _choose_reference(cfg: GRPORunConfig, plan: AutoPlan) -> None:
    """TRL loads the reference model like the policy: in fp32 when the policy holds fp32
    masters. It is frozen and only read under autocast, which casts its weights to the
    compute dtype at every forward, so a copy in that dtype gives the same products with
    half the memory and no casts."""
    if cfg.beta <= 0:
        plan.reference_dtype = None
        return
    if cfg.reference_dtype != "auto":
        plan.reference_dtype, why = cfg.reference_dtype, "set in the config"
    elif plan.dtype == "fp32":
        plan.reference_dtype, why = "fp32", "fp32 compute"
    elif plan.master_weights == "fp32":
        plan.reference_dtype = plan.dtype
        why = (
            f"frozen, read under {plan.dtype} autocast only: {plan.dtype} weights instead of "
            "fp32 copies cast down at every forward (half the memory)"
        )
    else:
        plan.reference_dtype, why = plan.dtype, f"as the policy ({plan.dtype} weights)"
    plan.note("reference_dtype", plan.reference_dtype, why)


def render_table(plan: AutoPlan, title: str = "auto-configuration") -> Any:
    """A rich Table: setting | value | reason."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title)
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_column("reason")
    for d in plan.decisions:
        # reasons quote import errors and pip extras ("[Errno 2]", "shop-r1[liger]"):
        # plain text, not rich markup
        table.add_row(d.setting, escape(str(d.value)), escape(d.reason))
    return table


def render_text(plan: AutoPlan, width: int = 140) -> str:
    """The table as plain text (golden tests, logs)."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    # no colour codes, even under FORCE_COLOR (a terminal is forced, colours never)
    Console(file=buffer, width=width, color_system=None).print(render_table(plan))
    return buffer.getvalue()
