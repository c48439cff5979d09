"""Decide how a run uses the machine: GPU split, generation backend, launcher, env.

Pure: a `LaunchRequest` (task, profile, GPU count, what is installed) becomes a
`LaunchPlan` whose `decisions` say, in words, why each choice was made; the script
renderer only spells the plan out in bash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts, shown
from shop_r1_doctor.hardware import gpu_info
from shop_r1_doctor.knowledge import grpo_vllm_speedup
from shop_r1_doctor.profiles.model import Profile
from shop_r1_doctor.runplan import RunPlan
from shop_r1_doctor.trl_rules import vllm_layout

Task = Literal["sft", "grpo", "eval", "vllm-server"]
TASKS: tuple[str, ...] = ("sft", "grpo", "eval", "vllm-server")
Generation = Literal["vllm-colocate", "vllm-server", "transformers", "none"]
DEFAULT_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
SERVER_GPU_MEMORY_UTILIZATION = 0.9  # a dedicated vLLM server's default share of its GPU


@dataclass(frozen=True)
class LaunchRequest:
    """What to launch, and what is known of the target. `None` means "the target decides
    at run time": the GPU count (nvidia-smi there), vLLM (the preflight there)."""

    task: Task
    profile: Profile
    # the generating interpreter: named in the script's header, never run on the target
    python: str
    gpus: int | None  # GPUs per node; None: the target's count at run time
    nodes: int = 1
    model: str = DEFAULT_MODEL
    data: str | None = None
    output_dir: str | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the user's --config, already read
    ray: bool = False
    # on the target, from its facts (`target_machine`); None: unknown, the target decides
    vllm_available: bool | None = None
    consumer_gpus: bool = False  # GeForce cards: P2P over PCIe hangs NCCL
    target: str = ""  # whose facts these are ("this machine", "snapshot FILE"); "": none
    target_pip: str = "python3 -m pip"  # the target's pip, where its facts name it
    generated_in: str = ""  # the generating environment, e.g. "venv ~/envs/train"
    command_line: str = ""
    gpus_source: str = ""  # where a fixed GPU count came from ("--gpus", "snapshot FILE")
    vllm_port: int = 8000  # `launch vllm-server`: a port users know (GRPO's own: free at run time)
    main_port: int = 29500  # several nodes must agree on it (one node: free at run time)


@dataclass(frozen=True)
class LaunchPlan:
    request: LaunchRequest
    generation: Generation
    server_gpus: tuple[int, ...]
    train_gpus: tuple[int, ...]  # empty with a run-time GPU count
    processes_per_node: int | None  # None: the target's GPU count at run time
    use_accelerate: bool  # an accelerate launch is possible (always, at a run-time count > 1)
    decisions: tuple[str, ...]
    env: dict[str, str]
    run_config: dict[str, Any]  # written next to the script, passed as --config
    # The RunPlan written next to the script (`doctor --plan` reads it): what the launch
    # decides. Settings the trainer auto-configures on the target are left to `train`.
    doctor_plan: dict[str, Any]

    @property
    def total_processes(self) -> int | None:
        per_node = self.processes_per_node
        return None if per_node is None else per_node * self.request.nodes

    @property
    def gpus_at_run_time(self) -> bool:
        return self.processes_per_node is None

    @property
    def fixed(self) -> tuple[str, ...]:
        """What the script fixed at generation time, and from which source."""
        r = self.request
        source = f"the facts of {r.target}" if r.target else f"profile {r.profile.name}"
        out = [f"environment, image stack and dtype: profile {r.profile.name}"]
        if r.gpus is not None:
            out.append(f"{r.gpus} GPU(s) per node: {r.gpus_source or '--gpus'}")
        if r.task == "grpo":
            out.append(f"generation layout ({self.generation}): {source}")
        return tuple(out)

    @property
    def output_dir(self) -> str:
        return default_output_dir(self.request)


def _doctor_plan(
    req: LaunchRequest, generation: Generation, processes: int | None, run_config: dict[str, Any]
) -> dict[str, Any]:
    """The RunPlan of what this launch fixes: layout, ports, model, data, output.

    Attention, dtype and batch sizes are the trainer's auto-configuration, decided on the
    target's own facts when `train` starts (the script's preflight for sft/grpo is
    `train --dry-run`): a profile's preferred attention is not what runs on a machine
    without flash-attn, so the plan claims it only when the run config fixes it.
    """
    fixed = {k: v for k, v in run_config.items() if v != "auto"}
    dtype = fixed.get("dtype")
    # TRL's client settings: only a GRPO trainer talks to a server (a bare `vllm-server`
    # launch has no trainer to share a GPU with)
    server = generation == "vllm-server" and req.task == "grpo"
    train = req.task in ("sft", "grpo")
    known = req.vllm_available is not None or req.task == "vllm-server"
    return RunPlan(
        task=req.task if req.task == "sft" or req.task == "grpo" else None,
        model=req.model,
        dataset=req.data,
        output_dir=default_output_dir(req),
        num_processes=processes,
        use_ray=req.ray,
        attn_implementation=fixed.get("attn_implementation") if train else None,
        bf16=dtype == "bf16" if train and dtype else None,
        fp16=dtype == "fp16" if train and dtype else None,
        # GRPO on a target whose vLLM is unknown: its preflight decides, the plan claims nothing
        use_vllm=generation != "transformers"
        if req.task in ("grpo", "vllm-server") and known
        else None,
        vllm_mode="server"
        if server
        else "colocate"
        if generation == "vllm-colocate" and known
        else None,
        vllm_server_host="127.0.0.1" if server else None,
        # the ports are chosen free on the target at run time
        vllm_server_port=None,
        vllm_group_port=None,
        # the bare server's share of its GPUs (the script's VLLM_GPU_MEMORY_UTILIZATION)
        vllm_gpu_memory_utilization=SERVER_GPU_MEMORY_UTILIZATION
        if req.task == "vllm-server"
        else None,
    ).to_dict()


def default_output_dir(req: LaunchRequest) -> str:
    return req.output_dir or f"runs/{req.task}"


def target_machine(facts: Facts) -> tuple[int, bool, bool]:
    """(GPU count, vLLM usable, consumer GPUs) of the machine the facts describe: what a
    launch plans for, so its preflight (`train --dry-run` there) passes where `train` runs."""
    vllm_ok = facts.installed("vllm") is True and facts.import_ok("vllm") is not False
    # cards whose PCIe P2P path hangs NCCL (knowledge/gpus.yaml `p2p: false`)
    consumer = any((info := gpu_info(g.name)) is not None and info.p2p is False for g in facts.gpus)
    return len(facts.gpus), vllm_ok, consumer


def layout_from_facts(facts: Facts) -> tuple[str, int, bool, bool]:
    """`launch --auto`: (profile, GPU count, vLLM usable, consumer GPUs) from the facts."""
    from shop_r1_doctor.profiles import match_profile

    match = match_profile(facts)
    if match is None:
        names = ", ".join(shown(g.name) for g in facts.gpus) or "unknown GPUs"
        raise ToolError(f"launch --auto: no profile matches this machine ({names}); pass --profile")
    return (match.name, *target_machine(facts))


def plan_launch(req: LaunchRequest) -> LaunchPlan:
    p = req.profile
    if (req.gpus is not None and req.gpus < 0) or req.nodes < 1:
        raise ToolError(f"--gpus {req.gpus} --nodes {req.nodes}: need gpus >= 0 and nodes >= 1")
    if req.gpus == 0 and p.cuda is not None:
        raise ToolError(f"--gpus 0 with GPU profile {p.name}: use --profile cpu or --gpus >= 1")
    if req.gpus and p.cuda is None:
        raise ToolError(
            f"--gpus {req.gpus} with profile cpu: pick a GPU profile (shop-r1 profiles list)"
        )
    if req.ray and req.task not in ("sft", "grpo"):
        raise ToolError(
            f"--ray with launch {req.task}: only sft and grpo train on a Ray cluster; drop --ray"
        )
    if req.nodes > 1 and p.cuda is None and req.task in ("sft", "grpo"):
        # a login node without GPUs matches `cpu`: one CPU process per node is never the
        # multi-node run that was meant
        raise ToolError(
            f"--nodes {req.nodes} with profile cpu: several nodes train on GPUs; pass "
            "--profile NAME (the nodes' GPUs, e.g. hopper or H100) or --snapshot of a node"
        )
    # the GPU count: --gpus, the target's facts, else the target's own count at run time
    # (eval uses one GPU whatever the count)
    count: int | None = req.gpus
    if p.cuda is None:
        count = 0
    elif count is None and req.task == "eval":
        count = 1
    vllm = req.vllm_available is not False and p.vllm is not None
    gpus = tuple(range(count or 0))
    decisions: list[str] = [f"profile {p.name}: {p.summary}"]
    if req.target:
        have = {True: "installed", False: "not installed", None: "unknown"}[req.vllm_available]
        decisions.append(f"planned on the facts of {req.target}: vLLM {have}")
    if count is None:
        decisions.append(
            "GPUs per node: the target's count at run time (nvidia-smi -L, or "
            "CUDA_VISIBLE_DEVICES; TRAIN_GPUS overrides); pass --gpus N to fix it"
        )
    generation: Generation = "none"
    server: tuple[int, ...] = ()
    train = gpus

    if req.task == "grpo":
        if not vllm:
            generation = "transformers"
            on = f" on {req.target}" if req.target else ""
            why = (
                f"vLLM is not installed{on}"
                if p.vllm is not None
                else f"profile {p.name} has no vLLM"
            )
            decisions.append(
                f"GRPO generation by transformers: {why} (vLLM: {grpo_vllm_speedup()}); "
                "use_vllm: auto lets the target's preflight use vLLM if it has it by then"
            )
        elif (
            layout := vllm_layout(
                gpus=count,
                processes=None,  # this plan places them: every GPU but the server's
                nodes=req.nodes,
                ray=req.ray,
                vllm_known=req.vllm_available is not None,
            )
        ).mode == "colocate":
            generation = "vllm-colocate"
            why = {
                "ray": "Ray Train places the workers: each one's vLLM shares its GPU",
                "one_gpu_per_trainer": "one GPU: vLLM shares it with the trainer (a server on "
                "the same GPU fails NCCL with 'Duplicate GPU detected')",
                "nodes": "several nodes: each process colocates vLLM (no cross-node weight sync "
                "through a loopback server)",
                "count_unknown": "a dedicated server GPU needs a fixed count (--gpus N)",
                "vllm_unknown": "vLLM on the target is not known (a server GPU needs --snapshot "
                "of it)",
            }[layout.cause]
            decisions.append(
                f"GRPO generation by vLLM colocated, if the target has it ({why}); "
                "use_vllm: auto, decided by the preflight on the target"
            )
        else:
            generation = "vllm-server"
            server, train = gpus[:1], gpus[1:]
            decisions.append(
                f"GRPO on {count} GPUs: `trl vllm-serve` on GPU {server[0]}, trainer on GPU(s) "
                f"{','.join(map(str, train))} (disjoint CUDA_VISIBLE_DEVICES), client at 127.0.0.1"
            )
    elif req.task == "vllm-server":
        if p.vllm is None:
            raise ToolError(
                f"launch vllm-server: vLLM is not available (profile {p.name} has no vLLM); "
                "pick a GPU profile (shop-r1 profiles list)"
            )
        if not vllm:
            on = req.target or "the target"
            raise ToolError(
                f"launch vllm-server: vLLM is not available (not installed on {on}); "
                f"install it there: {req.target_pip} install vllm=={p.vllm}"
            )
        generation = "vllm-server"
        server, train = gpus, ()
        where = ",".join(map(str, gpus)) if count is not None else "every GPU of the target"
        decisions.append(f"vLLM server on GPU(s) {where} (data parallel)")

    training = req.task in ("sft", "grpo")
    per_node: int | None = (max(len(train), 1) if count is not None else None) if training else 1
    if training and req.ray:
        use_accelerate = False
        workers = (
            f"{per_node * req.nodes} worker(s)"
            if per_node is not None
            else "one worker per GPU of the cluster"
        )
        decisions.append(
            f"Ray Train on the cluster: `train --ray` on the main node places {workers} "
            f"(TorchTrainer, {'NCCL' if p.cuda else 'gloo'}); the other node(s) only join it"
        )
    elif training and per_node is None:
        use_accelerate = p.cuda is not None
        decisions.append(
            f"accelerate launch with FSDP when the target has 2+ GPUs or nodes: one process "
            f"per GPU x {req.nodes} node(s)"
        )
    else:
        use_accelerate = training and ((per_node or 1) > 1 or req.nodes > 1)
        if use_accelerate:
            decisions.append(
                f"accelerate launch with FSDP: {per_node} process(es) x {req.nodes} node(s)"
            )

    env = dict(p.env)
    several = len(train) > 1 or req.nodes > 1 or per_node is None
    if req.consumer_gpus and several:
        env.update(p.env_consumer_multi_gpu)
        if p.env_consumer_multi_gpu:
            decisions.append("GeForce GPUs: NCCL P2P/IB off (all_reduce hangs on consumer P2P)")

    run_config: dict[str, Any] = dict(req.config)
    if training and per_node is not None:
        run_config["num_processes"] = per_node * req.nodes
    if req.task == "grpo":
        # the target's preflight resolves auto (installed and healthy there), never the
        # generating machine: a login node without vLLM must not turn it off on the GPU node
        run_config.setdefault("use_vllm", "auto")
        if generation == "vllm-colocate":
            run_config["vllm_mode"] = "colocate"
        elif generation == "vllm-server":
            # ports: chosen free on the target at run time, passed to train as --set
            run_config.update(vllm_mode="server", vllm_server_host="127.0.0.1")

    total = per_node * req.nodes if per_node is not None else None
    doctor_plan = _doctor_plan(req, generation, total, run_config)
    return LaunchPlan(
        request=req,
        generation=generation,
        server_gpus=server,
        train_gpus=train,
        processes_per_node=per_node,
        use_accelerate=use_accelerate,
        decisions=tuple(decisions),
        env=env,
        run_config=run_config,
        doctor_plan=doctor_plan,
    )
