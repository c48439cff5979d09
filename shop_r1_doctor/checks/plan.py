"""Checks of what the user is about to run (the snapshot's `plan`) against the machine.

flash-attn plan rules live in flash_attn.py and memory rules in plan_memory.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from shop_r1_doctor.checks._base import (
    BUSY_FRACTION,
    bytes_gib,
    cc_text,
    env_set,
    finding,
    gpu_cc,
    gpu_index,
    gpu_name,
    gpu_names,
    uses_vllm,
    visible_gpus,
    vllm_engines,
)
from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, GpuProcess, shown
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.target_python import pip_command
from shop_r1_doctor.trl_rules import (
    TRL_DEFAULTS,
    GrpoBatch,
    grpo_batch,
    grpo_eval_groups,
    grpo_generation_unit,
    round_up_to,
    sft_effective_batch,
    steps_multiple_for,
    valid_num_generations,
    vllm_layout,
)

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
HF_DATASET_ROOT = re.compile(r"^hf://datasets/[^/]+/[^/@]+(@[^/]+)?/?$")
BIND_ALL = ("0.0.0.0", "::", "[::]")


def bf16_pre_ampere(facts: Facts) -> Iterator[Finding]:
    if facts.plan.bf16 is not True:
        return
    # a GPU without a known capability is not reported
    old = [(g, cc) for g in facts.gpus if (cc := gpu_cc(g)) is not None and cc < (8, 0)]
    if old:
        yield finding(
            "BF16_PRE_AMPERE",
            f"bf16 requested but {gpu_names(g for g, _ in old)} is cc {cc_text(old[0][1])} "
            "(bf16 needs 8.0)",
            detail="'Bfloat16 is only supported on GPUs with compute capability of at least 8.0.'",
            fix="bf16: false, fp16: true in the config (vLLM: --dtype half)",
        )


def liger_requested(facts: Facts) -> Iterator[Finding]:
    """`use_liger_kernel` makes transformers import liger_kernel at Trainer start."""
    if facts.plan.use_liger_kernel is not True:
        return
    installed = facts.installed("liger-kernel")
    ok = facts.import_ok("liger_kernel.transformers")
    if installed is False:
        problem = "liger-kernel is not installed"
        detail = (
            "transformers raises 'You need to install liger-kernel version ... to use this "
            "option' when the Trainer starts."
        )
    elif ok is False:
        version = facts.version("liger-kernel")
        problem = "liger_kernel does not import" + (f" (liger-kernel {version})" if version else "")
        detail = facts.import_error("liger_kernel.transformers")
    else:
        return
    yield finding(
        "LIGER_REQUESTED_NOT_INSTALLED",
        f"use_liger_kernel requested but {problem}",
        detail=detail,
        fix=f"{pip_command(facts)} install liger-kernel (Linux + CUDA: it needs Triton), or liger_kernel: off",
    )


def self_certainty_group_scaled(facts: Facts) -> Iterator[Finding]:
    """A small reward term under per-group std scaling becomes a unit-size advantage in
    every group whose task rewards tie: GRPO then trains that term (here: confidence)."""
    weight = facts.plan.self_certainty_weight
    scaling = facts.plan.scale_rewards or "group"  # TRL's default
    if facts.plan.task != "grpo" or not weight or scaling != "group":
        return
    yield finding(
        "GRPO_SELF_CERTAINTY_GROUP_SCALED",
        f"self_certainty_weight {weight:g} with scale_rewards=group: the confidence term alone "
        "sets the advantage in groups whose task rewards tie",
        detail=(
            "On an H100 (28M model, synthetic sessions) 38-65% of groups tied without it; "
            "with it GRPO sharpened the rationale and held-out exact match fell 3 points "
            "(16.1% -> 13.2%); without it the same SFT model rose to 19.7%."
        ),
        fix="self_certainty_weight: 0 (the trainer's default), or keep it and watch "
        "held-out exact match, not the training reward",
    )


def _grpo_batch(facts: Facts) -> GrpoBatch | None:
    """The generation batch of a GRPO plan, by TRL's rules (trl_rules.py)."""
    if facts.plan.task != "grpo":
        return None
    return grpo_batch(
        num_processes=facts.plan.num_processes,
        per_device=facts.plan.per_device_train_batch_size,
        gradient_accumulation_steps=facts.plan.gradient_accumulation_steps,
        steps_per_generation=facts.plan.steps_per_generation,
        generation_batch_size=facts.plan.generation_batch_size,
        num_generations=facts.plan.num_generations,
    )


def grpo_batch_divisible(facts: Facts) -> Iterator[Finding]:
    batch = _grpo_batch(facts)
    if batch is None or batch.whole_groups:
        return
    size, gens = batch.size, batch.num_generations
    valid = valid_num_generations(size)
    fixes = [f"num_generations: one of {', '.join(map(str, valid))}"] if valid else []
    if gens >= 2 and not batch.explicit:
        steps = facts.plan.steps_per_generation or facts.plan.gradient_accumulation_steps or 1
        multiple = steps_multiple_for(gens, size // max(steps, 1))
        fixes.append(
            f"or keep num_generations={gens} with steps_per_generation a multiple of {multiple}"
        )
    yield finding(
        "TRL_GRPO_BATCH_NOT_DIVISIBLE",
        f"GRPO generation batch {size} ({batch.how}) is not divisible by num_generations={gens}"
        if gens >= 2
        else f"num_generations={gens}: GRPO needs at least 2 completions per prompt",
        detail="'The global train batch size must be evenly divisible by the number of "
        "generations per prompt': each prompt's group of completions must be complete.",
        fix="; ".join(fixes)
        or "num_generations: 2 or more, and a generation batch that it divides",
    )


def grpo_batch_refused(facts: Facts) -> Iterator[Finding]:
    """The batch settings GRPOConfig.__post_init__ raises on before any step (TRL 1.16)."""
    if facts.plan.task != "grpo":
        return
    yield from _generation_batch_refused(facts)
    yield from _eval_batch_refused(facts)
    if facts.plan.auto_find_batch_size is True:
        yield finding(
            "TRL_GRPO_BATCH_REFUSED",
            "auto_find_batch_size with GRPO: TRL's GRPOConfig refuses it",
            detail="'auto_find_batch_size is not supported by GRPO': halving the batch on "
            "out-of-memory would split the groups of num_generations completions.",
            fix="auto_find_batch_size: false, and a smaller per_device_train_batch_size",
        )


def _eval_batch_refused(facts: Facts) -> Iterator[Finding]:
    refused = grpo_eval_groups(
        eval_strategy=facts.plan.eval_strategy,
        num_processes=facts.plan.num_processes,
        per_device_eval=facts.plan.per_device_eval_batch_size,
        num_generations=facts.plan.num_generations,
        num_generations_eval=facts.plan.num_generations_eval,
    )
    if refused is None:
        return
    size, gens = refused
    procs = facts.plan.num_processes or TRL_DEFAULTS["num_processes"]
    per = size // procs
    step = steps_multiple_for(gens, procs)  # per-device eval batches that make whole groups
    valid = [g for g in valid_num_generations(size) if g <= gens]
    yield finding(
        "TRL_GRPO_BATCH_REFUSED",
        f"the global eval batch {size} (per_device_eval_batch_size {per} x {procs} "
        f"process(es)) is not divisible by {gens} generations per eval prompt",
        detail=f"TRL's GRPOConfig raises 'The global eval batch size ({per} * {procs}) must be "
        f"divisible by the number of generations used for evaluation ({gens}).' before the "
        f"first step (eval_strategy {facts.plan.eval_strategy}).",
        fix=f"per_device_eval_batch_size: {step} or {2 * step} (a multiple of {step})"
        + (f", or num_generations_eval: {' or '.join(map(str, valid[-2:]))}" if valid else "")
        + ', or eval_strategy: "no"',
    )


def _generation_batch_refused(facts: Facts) -> Iterator[Finding]:
    batch = _grpo_batch(facts)
    if batch is None or batch.refused is None:
        return
    size, micro = batch.size, batch.global_micro
    procs = facts.plan.num_processes or TRL_DEFAULTS["num_processes"]
    per = facts.plan.per_device_train_batch_size or TRL_DEFAULTS["per_device_train_batch_size"]
    global_batch = f"{micro} (per_device_train_batch_size {per} x {procs} process(es))"
    if batch.refused == "both_set":
        steps = facts.plan.steps_per_generation or 0
        yield finding(
            "TRL_GRPO_BATCH_REFUSED",
            f"generation_batch_size {size} and steps_per_generation {steps} are both set",
            detail="TRL's GRPOConfig raises \"'generation_batch_size' and "
            "'steps_per_generation' can not be both configured at the same time\" before "
            "the first step.",
            fix=f"keep one: steps_per_generation: {steps} alone (a generation batch of "
            f"{micro * steps} = {micro} x {steps})"
            + (
                f", or generation_batch_size: {size} alone (steps_per_generation {size // micro})"
                if size % micro == 0
                else ""
            ),
        )
        return
    # whole groups too, so the value does not trade this error for the divisibility one
    unit = grpo_generation_unit(max(batch.num_generations, 1), procs, per)
    below = size // unit * unit
    values = [v for v in (below, round_up_to(size, unit)) if v > 0]
    # or keep the size: the per-device batches whose global batch divides it (when the
    # size holds whole groups; otherwise grpo_batch_divisible asks for another size too)
    pers = [d for d in range(per - 1, 0, -1) if size % (d * procs) == 0][:3]
    pers = pers if batch.whole_groups else []
    yield finding(
        "TRL_GRPO_BATCH_REFUSED",
        f"generation_batch_size {size} is not a multiple of the global batch {global_batch}",
        detail=f"TRL's GRPOConfig raises 'generation_batch_size ({size}) must be divisible by "
        f"the global batch size ({micro}).' before the first step.",
        fix=f"generation_batch_size: {' or '.join(map(str, values))} (multiples of {unit}: "
        f"the global batch {micro} and whole groups of {batch.num_generations})"
        + (f", or per_device_train_batch_size: {' or '.join(map(str, pers))}" if pers else ""),
    )


def tiny_dataset(facts: Facts) -> Iterator[Finding]:
    rows = facts.plan.dataset_rows
    if rows is None:
        return
    batch = _grpo_batch(facts)
    if batch is not None:
        if not batch.whole_groups:
            return  # grpo_batch_divisible reports the batch first
        size, gens, prompts = batch.size, batch.num_generations, batch.prompts
        if rows >= prompts:
            return
        procs = facts.plan.num_processes or TRL_DEFAULTS["num_processes"]
        yield finding(
            "TRAINER_ZERO_STEPS_TINY_DATASET",
            f"{rows} dataset rows < {prompts} prompts per GRPO generation batch ({size} completions / {gens})",
            detail="The sampler drops incomplete batches: 'There seems to be not a single sample "
            "in your epoch_iterator, stopping training at step 0!', then an untrained model is saved.",
            fix=f"use >= {prompts} rows, or "
            + (
                f"generation_batch_size: {rows * gens} or less"
                if batch.explicit
                # the generation batch is global: each process brings per-device x steps
                else f"a generation batch of at most {rows * gens} completions "
                f"(per_device_train_batch_size x steps_per_generation <= {rows * gens // procs} "
                f"on {procs} process(es))"
            ),
        )
        return
    procs = facts.plan.num_processes or TRL_DEFAULTS["num_processes"]
    per_device = (
        facts.plan.per_device_train_batch_size or TRL_DEFAULTS["per_device_train_batch_size"]
    )
    accum = facts.plan.gradient_accumulation_steps or TRL_DEFAULTS["gradient_accumulation_steps"]
    effective = sft_effective_batch(procs, per_device, accum)
    if rows < effective:
        yield finding(
            "TRAINER_ZERO_STEPS_TINY_DATASET",
            f"{rows} dataset rows < one effective batch of {effective} "
            f"({procs} x {per_device} x {accum} accumulation steps)",
            detail="The trainer may run zero optimizer steps and save an untrained model.",
            fix=f"more rows, or per_device_train_batch_size x gradient_accumulation_steps <= {rows // procs or 1}",
        )


def rows_truncated(facts: Facts) -> Iterator[Finding]:
    limit = facts.plan.max_length
    longest = facts.plan.longest_sample_tokens
    if facts.plan.task != "sft" or not limit or not longest or longest <= limit:
        return
    yield finding(
        "TRAINER_ROWS_TRUNCATED",
        f"the longest sample is {longest} tokens > max_length {limit}",
        detail="Completions past max_length are cut; fully cut rows are dropped by TRL.",
    )


SAME_GPU_DETAIL = (
    "Weight sync builds an NCCL group across server and trainer: 'Duplicate GPU detected : "
    "rank 1 and rank 0 both on CUDA device' -> NCCL error: invalid usage."
)


def server_same_gpu(facts: Facts) -> Iterator[Finding]:
    if not uses_vllm(facts) or facts.plan.vllm_mode != "server" or facts.listed_gpus is NOT_PROBED:
        return
    host = facts.plan.vllm_server_host
    url = facts.plan.vllm_server_base_url
    if (url and not any(h in url for h in (*LOCAL_HOSTS, *BIND_ALL))) or (
        not url and host and host not in (*LOCAL_HOSTS, *BIND_ALL)
    ):
        return  # a server on another machine takes none of this machine's GPUs
    gpus = visible_gpus(facts)
    procs = facts.plan.num_processes or 1
    if not gpus:
        return
    # A vLLM engine already on a GPU the trainer takes: the server was started there.
    for gpu in gpus[:procs]:
        engines = vllm_engines(gpu)
        if engines:
            yield finding(
                "TRL_SERVER_MODE_SAME_GPU",
                f"a vLLM engine (pid {', '.join(str(p.pid) for p in engines)}) "
                f"already runs on {gpu_name(gpu)} (GPU {gpu_index(gpu)}), which the "
                "trainer would use",
                detail=SAME_GPU_DETAIL,
                fix="start `trl vllm-serve` with CUDA_VISIBLE_DEVICES on another GPU than the "
                "trainer's (a launch script does: shop-r1 launch grpo --gpus 2)",
            )
            return
    # A GPU the trainer does not use is left for the server: a spare visible one, or one
    # that CUDA_VISIBLE_DEVICES hides from the trainer (how a launch script splits them:
    # the trainer sees only GPU 1 while `trl vllm-serve` runs on GPU 0), unless another
    # program holds it. The count is the auto-configuration's rule (trl_rules.vllm_layout).
    hidden = [g for g in facts.gpus if g not in gpus]
    held = [(g, others) for g in hidden if (others := _held_by_others(g))]
    free_hidden = len(hidden) - len(held)
    if vllm_layout(gpus=len(gpus) + free_hidden, processes=procs).mode == "server":
        return
    title = (
        f"`trl vllm-serve` and {procs} training process(es) would share {gpu_names(gpus)} "
        f"({len(gpus)} GPU visible)"
    )
    if held:
        title += "; the GPU(s) CUDA_VISIBLE_DEVICES hides are held by other programs: " + (
            ", ".join(f"GPU {gpu_index(g)} ({_pids(others)})" for g, others in held)
        )
    yield finding(
        "TRL_SERVER_MODE_SAME_GPU",
        title,
        detail=SAME_GPU_DETAIL,
        fix='vllm_mode: "colocate" (one GPU), or CUDA_VISIBLE_DEVICES=0 trl vllm-serve ... and '
        "CUDA_VISIBLE_DEVICES=1 for the trainer"
        + (" on GPUs no other program holds" if held else ""),
    )


def _held_by_others(gpu: GpuFacts) -> list[GpuProcess]:
    """The listed processes that hold more than BUSY_FRACTION of a GPU hidden from the
    trainer: it is not free for the server. A vLLM engine there is the server itself;
    memory in use with no process listed is not counted (the server may run in another
    container, and a guess is no error)."""
    if vllm_engines(gpu):
        return []  # the server already runs there
    total = gpu.memory_total_bytes
    others = list(gpu.processes or ())
    used = sum(p.used_bytes for p in others if isinstance(p.used_bytes, int))
    busy = isinstance(total, int) and total > 0 and used > BUSY_FRACTION * total
    return others if busy else []


def _pids(procs: list[GpuProcess]) -> str:
    return ", ".join(f"{shown(p.name, 'None')} pid {shown(p.pid, 'None')}" for p in procs)


def server_unreachable(facts: Facts) -> Iterator[Finding]:
    if not uses_vllm(facts) or facts.plan.vllm_mode != "server":
        return
    host = facts.plan.vllm_server_host
    url = facts.plan.vllm_server_base_url or ""
    bind = host in BIND_ALL or any(f"//{b}" in url for b in BIND_ALL)
    if bind:
        yield finding(
            "TRL_VLLM_SERVER_UNREACHABLE",
            f"the trainer would connect to {url or host}, a bind address, not a server address",
            detail="'Server is not up yet. Retrying...' forever; the weight-sync TCP store on "
            "0.0.0.0 times out.",
            fix='vllm_server_host: "127.0.0.1" (or the server machine\'s address)',
        )
    proxy = next(
        (
            facts.env_value(n)
            for n in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy")
            if facts.env_value(n)
        ),
        None,
    )
    no_proxy = [v for v in (facts.env_value("NO_PROXY"), facts.env_value("no_proxy")) if v]
    # a bind address is read as this machine (the fix above points it at 127.0.0.1)
    local = bind or (host or "127.0.0.1") in LOCAL_HOSTS or any(h in url for h in LOCAL_HOSTS)
    if proxy and local and not any(h in v for v in no_proxy for h in LOCAL_HOSTS):
        # A proxy on another machine cannot reach this machine's 127.0.0.1: certain failure.
        # A local one (a desktop VPN client, say) often forwards loopback: a warning.
        # the host only: the proxy's URL may carry a password
        proxy_host = urlsplit(proxy if "//" in proxy else f"//{proxy}").hostname
        remote = proxy_host not in LOCAL_HOSTS
        yield finding(
            "TRL_VLLM_SERVER_UNREACHABLE",
            "HTTP(S)_PROXY is set without NO_PROXY for localhost: requests to the vLLM server go to "
            + (f"the proxy at {proxy_host}" if proxy_host and remote else "the proxy")
            + (", which cannot reach this machine's 127.0.0.1" if remote else ""),
            severity="error" if remote else "warning",
            fix="export NO_PROXY=localhost,127.0.0.1 no_proxy=localhost,127.0.0.1",
        )


def server_ports_clash(facts: Facts) -> Iterator[Finding]:
    """The weight-sync group port is a second listener next to the server's HTTP port."""
    if not uses_vllm(facts) or facts.plan.vllm_mode != "server":
        return
    http, group = facts.plan.vllm_server_port, facts.plan.vllm_group_port
    if http is None or http != group:
        return
    yield finding(
        "TRL_VLLM_GROUP_PORT_IN_USE",
        f"vllm_group_port {group} is the server's HTTP port: the weight-sync group cannot bind it",
        detail="`trl vllm-serve` listens on vllm_server_port; the NCCL weight-sync store then "
        "fails with EADDRINUSE or hangs at the first sync.",
        fix=f"vllm_group_port: {51216 if http != 51216 else 51217} (any other free port)",
    )


def dataset_path(facts: Facts) -> Iterator[Finding]:
    # the RunPlan's one dataset field (TRL's own names map onto it when a plan is written)
    key = "dataset"
    path = facts.plan.dataset
    if path and HF_DATASET_ROOT.match(path):
        yield finding(
            "DATASET_PATH_NOT_FILES",
            f"{key}={path} is a dataset repository root, not data files",
            detail="load_dataset('parquet', data_files=...) needs files: a repo root fails "
            "to resolve.",
            fix=f"{key}: {path.removesuffix('/')}/data/<file>.parquet (or load_dataset('{path[len('hf://datasets/') :].removesuffix('/')}'))",
        )


def env_references(facts: Facts) -> Iterator[Finding]:
    refs = facts.plan.env_refs or []
    for name in refs:
        # unknown when the env section was not collected, or a pasted dump omits the name
        if not isinstance(name, str) or env_set(facts, name) is None:
            continue
        value = facts.env_value(name)
        if not isinstance(value, str) or not value:
            state = "empty" if value == "" else "unset"
            yield finding(
                "CFG_ENV_INTERPOLATION",
                f"the config reads ${{{name}}}, which is {state}",
                detail="An empty value becomes None and fails config validation with a TypeError.",
                fix=f"export {name}=<value> (or give the config a default: ${{oc.env:{name},<default>}})",
            )


def disk_at_checkpoint(facts: Facts) -> Iterator[Finding]:
    params = facts.plan.model_params
    free = _free_at_output(facts)
    if not params or free is None:
        return
    from shop_r1_doctor.memory import checkpoint_bytes

    only_model = facts.plan.save_only_model is True
    # weights (and AdamW's moments) in the training dtype: fp32 unless the plan says pure
    # bf16/fp16 (master_fp32: false); transformers loads fp32 weights under bf16 autocast
    pure_half = facts.plan.master_fp32 is False and (
        facts.plan.bf16 is True or facts.plan.fp16 is True
    )
    per_ckpt, final = checkpoint_bytes(
        params, weight_bytes=2 if pure_half else 4, optimizer=not only_model
    )
    keep = facts.plan.save_total_limit or 1
    need = per_ckpt * keep + final  # kept checkpoints + the final model
    if need <= free:
        return
    yield finding(
        "DISK_FULL_AT_CHECKPOINT",
        f"checkpoints need ~{bytes_gib(need)}; {bytes_gib(free)} free at {facts.plan.output_dir or 'the output dir'}",
        detail=f"{keep} checkpoint(s) of ~{bytes_gib(per_ckpt)} (weights"
        + ("" if only_model else " + optimizer state")
        + ") plus the final model: 'No space left on device' hours into the run.",
        fix="free disk space, save_total_limit: 1, save_only_model: true, or another output_dir",
    )


def _free_at_output(facts: Facts) -> int | None:
    free = facts.host.disk_free_bytes
    if free is NOT_PROBED:
        return None
    out = facts.probed_path(facts.plan.output_dir or "")
    if out in free:
        return free[out]
    if out:
        # the host probe records a relative output_dir under the cwd it resolved it against
        # (an absolute one gives a tail with "//" that no recorded path has)
        tail = "/" + out.removeprefix("./").rstrip("/")
        resolved = [f for p, f in free.items() if p.endswith(tail)]
        if resolved:
            return resolved[0]
    # else the longest recorded path holding it (the first listed of equal length)
    covering = [
        p
        for p in free
        if p in (".", "cwd", "output_dir") or (out and PurePosixPath(out).is_relative_to(p))
    ]
    return free[max(covering, key=len)] if covering else None


CHECKS = (
    bf16_pre_ampere,
    liger_requested,
    self_certainty_group_scaled,
    grpo_batch_divisible,
    grpo_batch_refused,
    tiny_dataset,
    rows_truncated,
    server_same_gpu,
    server_unreachable,
    server_ports_clash,
    dataset_path,
    env_references,
    disk_at_checkpoint,
)
