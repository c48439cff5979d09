"""Decide how a run uses the machine: GPU split, generation backend, launcher, env.

Pure: a `LaunchRequest` (task, profile, GPU count, what is installed) becomes a
`LaunchPlan` whose `decisions` say, in words, why each choice was made; the script
renderer only spells the plan out in bash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.hardware import gpu_info
from shop_r1_doctor.knowledge import grpo_vllm_speedup
from shop_r1_doctor.profiles.model import Profile
from shop_r1_doctor.runplan import RunPlan

Task = Literal["sft", "grpo", "eval", "vllm-server"]
TASKS: tuple[str, ...] = ("sft", "grpo", "eval", "vllm-server")
Generation = Literal["vllm-colocate", "vllm-server", "transformers", "none"]
DEFAULT_MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
SERVER_GPU_MEMORY_UTILIZATION = 0.9  # a dedicated vLLM server's default share of its GPU


@dataclass(frozen=True)
class LaunchRequest:
    task: Task
    profile: Profile
    python: str  # sys.executable of the generating process: never a bare `python`
    gpus: int
    nodes: int = 1
    model: str = DEFAULT_MODEL
    data: str | None = None
    output_dir: str | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the user's --config, already read
    ray: bool = False
    vllm_available: bool = True  # on the target: from its facts (`target_machine`)
    consumer_gpus: bool = False  # GeForce cards: P2P over PCIe hangs NCCL
    target: str = ""  # whose facts these are ("this machine", "snapshot FILE"), for decisions
    command_line: str = ""
    vllm_port: int = 8000
    group_port: int = 51216
    main_port: int = 29500


@dataclass(frozen=True)
class LaunchPlan:
    request: LaunchRequest
    generation: Generation
    server_gpus: tuple[int, ...]
    train_gpus: tuple[int, ...]
    processes_per_node: int
    use_accelerate: bool
    decisions: tuple[str, ...]
    env: dict[str, str]
    run_config: dict[str, Any]  # written next to the script, passed as --config
    # The RunPlan written next to the script (`doctor --plan` reads it): what the launch
    # decides. Settings the trainer auto-configures on the target are left to `train`.
    doctor_plan: dict[str, Any]

    @property
    def total_processes(self) -> int:
        return self.processes_per_node * self.request.nodes

    @property
    def output_dir(self) -> str:
        return default_output_dir(self.request)


def _doctor_plan(
    req: LaunchRequest, generation: Generation, processes: int, run_config: dict[str, Any]
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
    return RunPlan(
        task=req.task if train else None,
        model=req.model,
        dataset=req.data,
        output_dir=default_output_dir(req),
        num_processes=processes,
        use_ray=req.ray,
        attn_implementation=fixed.get("attn_implementation") if train else None,
        bf16=dtype == "bf16" if train and dtype else None,
        fp16=dtype == "fp16" if train and dtype else None,
        use_vllm=generation != "transformers" if req.task in ("grpo", "vllm-server") else None,
        vllm_mode="server" if server else "colocate" if generation == "vllm-colocate" else None,
        vllm_server_host="127.0.0.1" if server else None,
        vllm_server_port=req.vllm_port if server else None,
        vllm_group_port=req.group_port if server else None,
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
    consumer = any(
        (info := gpu_info(g.get("name"))) is not None and info.p2p is False for g in facts.gpus
    )
    return len(facts.gpus), vllm_ok, consumer


def layout_from_facts(facts: Facts) -> tuple[str, int, bool, bool]:
    """`launch --auto`: (profile, GPU count, vLLM usable, consumer GPUs) from the facts."""
    from shop_r1_doctor.profiles import match_profile

    match = match_profile(facts)
    if match is None:
        names = ", ".join(str(g.get("name", "?")) for g in facts.gpus) or "unknown GPUs"
        raise ToolError(f"launch --auto: no profile matches this machine ({names}); pass --profile")
    return (match.name, *target_machine(facts))


def plan_launch(req: LaunchRequest) -> LaunchPlan:
    p = req.profile
    if req.gpus < 0 or req.nodes < 1:
        raise ToolError(f"--gpus {req.gpus} --nodes {req.nodes}: need gpus >= 0 and nodes >= 1")
    if req.gpus == 0 and p.cuda is not None:
        raise ToolError(f"--gpus 0 with GPU profile {p.name}: use --profile cpu or --gpus >= 1")
    if req.gpus > 0 and p.cuda is None:
        raise ToolError(
            f"--gpus {req.gpus} with profile cpu: pick a GPU profile (shop-r1 profiles list)"
        )
    vllm = req.vllm_available and p.vllm is not None
    gpus = tuple(range(req.gpus))
    decisions: list[str] = [f"profile {p.name}: {p.summary}"]
    if req.target:
        decisions.append(
            f"planned on the facts of {req.target}: vLLM "
            + ("installed" if req.vllm_available else "not installed")
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
                f"GRPO generation by transformers: {why} (vLLM: {grpo_vllm_speedup()})"
            )
        elif req.gpus <= 1 or req.nodes > 1:
            generation = "vllm-colocate"
            why = (
                "one GPU: vLLM shares it with the trainer (a server on the same GPU fails NCCL "
                "with 'Duplicate GPU detected')"
                if req.nodes == 1
                else "several nodes: each process colocates vLLM (no cross-node weight sync "
                "through a loopback server)"
            )
            decisions.append(f"GRPO generation by vLLM colocated: {why}")
        else:
            generation = "vllm-server"
            server, train = gpus[:1], gpus[1:]
            decisions.append(
                f"GRPO on {req.gpus} GPUs: `trl vllm-serve` on GPU {server[0]}, trainer on GPU(s) "
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
                f"install it there: {req.python} -m pip install vllm=={p.vllm}"
            )
        generation = "vllm-server"
        server, train = gpus, ()
        decisions.append(f"vLLM server on GPU(s) {','.join(map(str, gpus))} (data parallel)")

    per_node = max(len(train), 1) if req.task in ("sft", "grpo") else 1
    use_accelerate = req.task in ("sft", "grpo") and (per_node > 1 or req.nodes > 1)
    if use_accelerate:
        decisions.append(
            f"accelerate launch with FSDP: {per_node} process(es) x {req.nodes} node(s)"
        )

    env = dict(p.env)
    if req.consumer_gpus and (len(train) > 1 or req.nodes > 1):
        env.update(p.env_consumer_multi_gpu)
        if p.env_consumer_multi_gpu:
            decisions.append("GeForce GPUs: NCCL P2P/IB off (all_reduce hangs on consumer P2P)")

    run_config: dict[str, Any] = dict(req.config)
    if req.task in ("sft", "grpo"):
        run_config["num_processes"] = per_node * req.nodes
    if req.task == "grpo":
        run_config["use_vllm"] = "off" if generation == "transformers" else "on"
        if generation == "vllm-colocate":
            run_config["vllm_mode"] = "colocate"
        elif generation == "vllm-server":
            run_config.update(
                vllm_mode="server",
                vllm_server_host="127.0.0.1",
                vllm_server_port=req.vllm_port,
                vllm_group_port=req.group_port,
            )

    doctor_plan = _doctor_plan(req, generation, per_node * req.nodes, run_config)
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
