"""Plan checks that need a memory estimate: model size vs GPU, colocated vLLM, KV cache.

The estimates come from `shop_r1_doctor.memory` (pure Python), imported inside the
functions so a problem there shows up as one CHECK_FAILED, not a broken doctor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from shop_r1_doctor.checks._base import (
    bytes_gib,
    finding,
    gpu_free_bytes,
    gpu_name,
    uses_vllm,
    visible_gpus,
)
from shop_r1_doctor.facts import Facts, GpuFacts
from shop_r1_doctor.findings import Finding

TRL_COLOCATE_UTIL = 0.3  # GRPOConfig.vllm_gpu_memory_utilization default
VLLM_SERVE_UTIL = 0.9  # `trl vllm-serve --gpu_memory_utilization` default
DEFAULT_SEQ = 1024


def _setup(facts: Facts) -> tuple[Any, dict[str, Any], int] | None:
    """(model shape, training settings, smallest visible GPU memory) or None if unknown."""
    params = facts.plan.model_params
    gpus = _sized(facts)
    if not params or not gpus or facts.plan.use_peft is True:
        return None
    shape = _shape(facts, params)
    shards = facts.plan.num_processes or 1 if facts.plan.fsdp else 1
    settings = {
        "seq_len": seq_len(facts),
        "micro_batch": facts.plan.per_device_train_batch_size or 1,
        "dtype": "fp16" if facts.plan.fp16 else "bf16" if facts.plan.bf16 is not False else "fp32",
        "master_fp32": facts.plan.master_fp32 is True,
        "fp32_hidden": facts.plan.fp32_hidden,
        "grad_checkpointing": facts.plan.gradient_checkpointing is True,
        "chunked_loss": facts.plan.chunked_loss is True,
        "fused_kernels": facts.plan.use_liger_kernel is True,
        "shards": shards,
    }
    return shape, settings, min(_total(g) for g in gpus)


def seq_len(facts: Facts) -> int:
    """Tokens per sample: max_length, or the longest sample when it is shorter (the
    trainer's plan says both; a batch is padded to its longest row, not to max_length)."""
    limit = facts.plan.max_length
    longest = facts.plan.longest_sample_tokens
    if limit and longest:
        return min(limit, longest)
    return limit or longest or DEFAULT_SEQ


def _shape(facts: Facts, params: int) -> Any:
    """The plan's full model shape when it carries one (`train` does), else the known
    Qwen2.5 shape nearest to `params` with its parameter count."""
    from shop_r1_doctor import memory

    given = facts.plan.model_shape
    if given is not None and given.tied_embeddings is not None:
        # a shape without tied_embeddings falls back to the nearest known one, as before
        # the plan was typed (the seven documented numbers alone never sized memory)
        extras = {k: v for k in ("head_dim", "name") if (v := getattr(given, k)) is not None}
        return memory.ModelShape(
            params=given.params,
            layers=given.layers,
            hidden=given.hidden,
            heads=given.heads,
            kv_heads=given.kv_heads,
            intermediate=given.intermediate,
            vocab=given.vocab,
            tied_embeddings=given.tied_embeddings,
            **extras,
        )
    return dataclasses.replace(memory.shape_for_params(params), params=params)


def _sized(facts: Facts) -> list[GpuFacts]:
    """Visible GPUs whose size is known (the estimates need it)."""
    return [g for g in visible_gpus(facts) if isinstance(g.memory_total_bytes, int)]


def _total(gpu: GpuFacts) -> int:
    """Bytes of a GPU of known size (see `_sized`)."""
    return gpu.memory_total_bytes if isinstance(gpu.memory_total_bytes, int) else 0


def _free(gpu: GpuFacts) -> int:
    """Free bytes of a GPU of known size (never None there)."""
    return gpu_free_bytes(gpu) or 0


def _gpu(facts: Facts) -> GpuFacts:
    """The smallest GPU of known size (a GPU of unknown size is not the one that is short)."""
    return min(_sized(facts), key=_total)


def model_fits(facts: Facts) -> Iterator[Finding]:
    setup = _setup(facts)
    if setup is None:
        return
    from shop_r1_doctor import memory

    shape, settings, total = setup
    colocate = uses_vllm(facts) and facts.plan.vllm_mode == "colocate"
    # memory already in use (other jobs, unseen from a container) is not there for training;
    # the GPU with the least free memory is the budget, and the one the title names
    fullest = min(_sized(facts), key=_free)
    free = _free(fullest)
    budget = (
        free - total * (facts.plan.vllm_gpu_memory_utilization or TRL_COLOCATE_UTIL)
        if colocate
        else free
    )
    best = memory.estimate_training_memory(
        shape, **{**settings, "micro_batch": 1, "grad_checkpointing": True, "chunked_loss": True}
    )
    name = facts.plan.model or f"a {shape.params / 1e9:.1f}B model"
    where = gpu_name(fullest) + (" (after vLLM's share)" if colocate else "")
    if best.total > budget:
        yield finding(
            "MODEL_TOO_LARGE_FOR_GPU",
            f"training {name} needs >= {bytes_gib(best.total)} per GPU even with gradient checkpointing and micro-batch 1; {where} has {bytes_gib(budget)}",
            detail=f"weights {bytes_gib(best.weights)}, grads {bytes_gib(best.grads)}, optimizer "
            f"{bytes_gib(best.optimizer)} (AdamW), activations {bytes_gib(best.activations)}.",
            fix="a smaller model (e.g. Qwen/Qwen2.5-0.5B-Instruct), LoRA (use_peft: true), or "
            "several GPUs with FSDP",
        )
        return
    planned = memory.estimate_training_memory(shape, **settings)
    if planned.total > budget and not colocate:
        levers = []
        if not settings["grad_checkpointing"]:
            levers.append("gradient_checkpointing: true")
        levers.append(f"max_length below {settings['seq_len']}")
        if settings["micro_batch"] > 1:
            levers.append("per_device_train_batch_size: 1 (raise gradient_accumulation_steps)")
        yield finding(
            "OOM_LONG_SEQUENCE",
            f"{name} at max_length {settings['seq_len']} x batch {settings['micro_batch']} needs ~{bytes_gib(planned.total)}; {where} has {bytes_gib(budget)}",
            detail=f"activations {bytes_gib(planned.activations)}, logits {bytes_gib(planned.logits)}: "
            "'CUDA out of memory' when the longest sample arrives.",
            fix=", ".join(levers),
        )


def colocate_budget(facts: Facts) -> Iterator[Finding]:
    if not uses_vllm(facts) or facts.plan.vllm_mode != "colocate":
        return
    setup = _setup(facts)
    if setup is None:
        return
    from shop_r1_doctor import memory

    shape, settings, total = setup
    util = facts.plan.vllm_gpu_memory_utilization or TRL_COLOCATE_UTIL
    # One memory model: the trainer's plan already predicted its peak with
    # memory.estimate_training_memory (the exact loss tokens and attention it will use);
    # re-estimating here from fewer settings gave a second, different figure.
    train = facts.plan.predicted_peak_bytes or (
        memory.estimate_training_memory(shape, **settings).total
    )
    if util * total + train <= total:
        return
    fits = int((total - train) / total * 20) / 20  # round down to 0.05
    fix = (
        f"vllm_gpu_memory_utilization: {fits:.2f}"
        if fits >= 0.1
        else "vllm_enable_sleep_mode: true, a smaller per_device_train_batch_size, or gradient_checkpointing: true"
    )
    yield finding(
        "TRL_COLOCATE_MEMORY_BUDGET",
        f"vLLM takes {util:.2f} x {bytes_gib(total)} and training needs ~{bytes_gib(train)} on one {gpu_name(_gpu(facts))}",
        detail="vLLM reserves its share at start; the optimizer state arrives after step 1: "
        "OOM at vLLM init or at step 2-3.",
        fix=fix,
    )


def kv_cache(facts: Facts) -> Iterator[Finding]:
    if not uses_vllm(facts):
        return
    params = facts.plan.model_params
    gpus = visible_gpus(facts)
    if not params or not gpus or not isinstance(gpus[0].memory_total_bytes, int):
        return
    from shop_r1_doctor import memory

    gpu = gpus[0]
    total = _total(gpu)
    server = facts.plan.vllm_mode == "server"
    util = facts.plan.vllm_gpu_memory_utilization or (
        VLLM_SERVE_UTIL if server else TRL_COLOCATE_UTIL
    )
    tp = facts.plan.vllm_tensor_parallel_size or 1
    shape = _shape(facts, params)
    seq = seq_len(facts)
    # weights and KV cache split across tensor-parallel ranks
    need = (
        memory.vllm_memory_fraction(shape, total, max_seq_len=seq, concurrent_seqs=1) * total / tp
    )
    others = sum(p.used_bytes for p in gpu.processes or () if isinstance(p.used_bytes, int))
    share = util * total
    if share >= need and share <= total - others:
        return
    why = (
        f"{util:.2f} x {bytes_gib(total)} = {bytes_gib(share)} < ~{bytes_gib(need)} for weights, one "
        f"{seq}-token sequence and overhead"
        if share < need
        else f"other processes already hold {bytes_gib(others)}, leaving less than {bytes_gib(share)}"
    )
    wanted = min(0.95, (need / total) + 0.05)
    yield finding(
        "VLLM_KV_CACHE_NO_MEMORY",
        f"vLLM cannot fit {facts.plan.model or 'the model'} on {gpu_name(gpu)}: {why}",
        detail="'No available memory for the cache blocks. Try increasing gpu_memory_utilization'.",
        fix=(
            f"vllm_gpu_memory_utilization: {wanted:.2f}"
            if share < need
            else "free the GPU (see GPU_BUSY_OTHER_PROCESSES) or lower vllm_gpu_memory_utilization"
        ),
    )


CHECKS = (model_fits, colocate_budget, kv_cache)
