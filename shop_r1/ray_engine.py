"""`shop-r1 train sft|grpo --ray ADDRESS`: the same training, run on a Ray cluster.

Ray Train's `TorchTrainer` places the workers (`ScalingConfig`) and sets up
torch.distributed on them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and the process
group: NCCL on GPUs, gloo on CPUs); each worker then runs the trainer's own preflight and
`train_sft.train` / `train_grpo.train` (`commands.train.run_here`), which TRL and
accelerate run as one process of a distributed job, exactly as under `accelerate launch`.
Only rank 0 writes the run's files (summary.json, checkpoints, the final model).

The driver (this process, on the head) learns where each worker runs and what it did
through a small Ray actor (`_Board`), so a worker that dies is named with its rank, node
and pid, and the run's summary lists every worker's steps. `FailureConfig(max_failures=0)`:
a dead worker ends the run (a restart would start training again from step 0).
ray is imported inside functions only: `shop-r1 --help` stays fast without it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shop_r1_doctor.errors import ToolError


class RayWorkerFailed(ToolError):
    """A Ray Train worker raised or died: the run ran and failed (exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class RayJob:
    """What each worker runs: `commands.train.run_here` with these arguments."""

    command: str  # "sft" | "grpo"
    cfg: Any  # the resolved SFTRunConfig / GRPORunConfig (num_processes set to the workers)
    source: Any  # where each value came from (render_config writes it next to the weights)
    resume: bool
    ignore: tuple[str, ...]
    snapshot: dict[str, Any] | None  # --snapshot: every worker plans from it (else probes)
    dry_run: bool


@dataclass(frozen=True)
class RayLayout:
    address: str  # "auto", "HOST:PORT" or "ray://HOST:PORT"
    workers: int | None  # None: one per GPU of the cluster, else one per alive node
    cpus_per_worker: float = 1.0


@dataclass(frozen=True)
class Placement:
    """How many workers, with what, and why (printed before the run)."""

    workers: int
    use_gpu: bool
    resources: dict[str, float]
    reason: str


def place(cluster: dict[str, float], alive_nodes: int, layout: RayLayout) -> Placement:
    """Workers from the cluster's resources: one per GPU when it has GPUs (NCCL), else one
    per node (gloo); `--ray-workers` fixes the count. Fails when the cluster cannot hold them."""
    gpus = int(cluster.get("GPU", 0))
    cpus = float(cluster.get("CPU", 0))
    use_gpu = gpus > 0
    if layout.workers is not None:
        workers, why = layout.workers, "--ray-workers"
    elif use_gpu:
        workers, why = gpus, "one per GPU of the cluster"
    else:
        workers, why = alive_nodes, "one per node: the cluster has no GPU"
    resources = {"CPU": layout.cpus_per_worker}
    if use_gpu:
        resources["GPU"] = 1.0
    if use_gpu and workers > gpus:
        raise ToolError(
            f"--ray-workers {workers}: the Ray cluster has {gpus} GPU(s), one per worker; "
            f"pass --ray-workers {gpus} or fewer"
        )
    if workers * layout.cpus_per_worker > cpus:
        raise ToolError(
            f"--ray-cpus-per-worker {layout.cpus_per_worker:g} x {workers} worker(s): the Ray "
            f"cluster has {cpus:g} CPU(s); lower either"
        )
    each = (
        f"1 GPU + {layout.cpus_per_worker:g} CPU" if use_gpu else f"{layout.cpus_per_worker:g} CPU"
    )
    backend = "NCCL" if use_gpu else "gloo"
    reason = f"{workers} worker(s) ({why}), {each} each, {backend}"
    return Placement(workers, use_gpu, resources, reason)


class _Board:
    """A Ray actor the workers tell where they run and what they did; the driver reads it."""

    def __init__(self) -> None:
        self.where: dict[int, dict[str, Any]] = {}
        self.done: dict[int, dict[str, Any]] = {}

    def joined(self, rank: int, info: dict[str, Any]) -> None:
        self.where[rank] = info

    def finished(self, rank: int, result: dict[str, Any]) -> None:
        self.done[rank] = result

    def read(self) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
        return self.where, self.done


def local_rank_for_device(local_rank: int, device: Any) -> int:
    """The LOCAL_RANK accelerate must use: the index of this worker's own GPU.

    Ray Train numbers local ranks by node IP. Two raylets on one host that split its GPUs
    (one `ray start` per GPU set, as a launch script per node does) share an IP: on a
    2x H200 the second worker got local rank 1 with one GPU visible, and accelerate's
    first barrier died with `CUDA error: invalid device ordinal`. Ray Train's
    `get_device()` knows the worker's GPU; on one raylet per host the two agree."""
    if getattr(device, "type", None) == "cuda" and getattr(device, "index", None) is not None:
        return int(device.index)
    return local_rank


def pin_local_rank(local_rank: int) -> None:
    from ray.train.torch import get_device

    want = local_rank_for_device(local_rank, get_device())
    if want != local_rank:
        os.environ["LOCAL_RANK"] = str(want)


def worker_loop(config: dict[str, Any]) -> None:
    """One Ray Train worker: the trainer's own preflight and training, as one process of
    the torch.distributed job Ray Train set up."""
    import ray
    import ray.train

    from shop_r1.commands.train import run_here
    from shop_r1_doctor.cli.output import Output

    job: RayJob = config["job"]
    board = config["board"]
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    pin_local_rank(ctx.get_local_rank())
    runtime = ray.get_runtime_context()
    ray.get(
        board.joined.remote(
            rank,
            {
                "node_id": runtime.get_node_id(),
                "node_ip": ray.util.get_node_ip_address(),
                "pid": os.getpid(),
                "local_rank": ctx.get_local_rank(),
            },
        )
    )
    # The driver writes the head's node summary; a raylet started by a launch script
    # may have passed its SHOP_R1_NODE_SUMMARY on to this worker.
    os.environ.pop("SHOP_R1_NODE_SUMMARY", None)
    summary = run_here(
        job.command,
        job.cfg,
        job.source,
        Output(),  # the preflight's findings print as on the driver
        resume=job.resume,
        ignore=list(job.ignore),
        snapshot=job.snapshot,
        dry_run=job.dry_run,
        # a snapshot of the whole machine shows GPUs beyond this worker's; the plan must
        # still colocate vLLM, since nothing starts a server under Ray
        ray=True,
    )
    mine: dict[str, Any] = {"steps": None, "last_loss": None}
    if summary is not None:
        mine = {"steps": summary.get("steps"), "last_loss": summary.get("last_loss")}
        if rank == 0:
            mine["summary"] = summary
    ray.get(board.finished.remote(rank, mine))


def _connect(address: str) -> Any:
    try:
        import ray
    except ImportError:
        raise ToolError(
            "--ray: ray is not installed in this environment: pip install 'shop-r1[ray]'"
        ) from None
    try:
        import ray.train.torch
    except ImportError as exc:
        raise ToolError(
            f"--ray: Ray Train does not import ({exc}): pip install 'ray[train]=={ray.__version__}'"
        ) from None
    _answers(address)
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=True)
    except (ConnectionError, RuntimeError) as exc:  # "auto" with no cluster, a dead head
        raise ToolError(f"--ray {address}: {_first_line(str(exc))}") from None
    return ray


def _answers(address: str) -> None:
    """A TCP connect first: `ray.init()` on a dead address waits for minutes."""
    import socket

    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=3).close()
    except (OSError, ValueError):
        raise ToolError(
            f"--ray {address}: no Ray cluster answers there (ray start --head, or pass the "
            "head's HOST:PORT)"
        ) from None


def run(job: RayJob, layout: RayLayout, console: Any) -> dict[str, Any] | None:
    """Train (or preflight, with --dry-run) on the Ray cluster; returns the run summary."""
    ray = _connect(layout.address)
    try:
        return _fit(ray, job, layout, console)
    finally:
        ray.shutdown()


def _fit(ray: Any, job: RayJob, layout: RayLayout, console: Any) -> dict[str, Any] | None:
    import dataclasses

    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    def say(line: str) -> None:  # one line whatever the terminal's width (logs are grepped)
        console.print(line, soft_wrap=True, highlight=False, markup=False)

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    placement = place(ray.cluster_resources(), len(nodes), layout)
    address = ray.get_runtime_context().gcs_address
    have = ray.cluster_resources()
    say(
        f"ray: cluster at {address}: {len(nodes)} node(s), {have.get('CPU', 0):g} CPU, "
        f"{have.get('GPU', 0):g} GPU; {placement.reason}"
    )
    # num_processes: the batch arithmetic (global = micro x accumulation x processes) of
    # every worker. Absolute paths: a Ray worker's working directory is not this one.
    cfg = dataclasses.replace(
        job.cfg, num_processes=placement.workers, **_absolute(job.cfg, ("data", "output_dir"))
    )
    if Path(cfg.model).expanduser().exists():
        cfg = dataclasses.replace(cfg, model=str(Path(cfg.model).expanduser().resolve()))
    job = dataclasses.replace(job, cfg=cfg)
    board = ray.remote(num_cpus=0)(_Board).remote()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    trainer = TorchTrainer(
        worker_loop,
        train_loop_config={"job": job, "board": board},
        scaling_config=ScalingConfig(
            num_workers=placement.workers,
            use_gpu=placement.use_gpu,
            resources_per_worker=placement.resources,
        ),
        run_config=RunConfig(
            name=f"shop-r1-{job.command}-{stamp}",
            # Ray Train's own run state, next to the run (shared like it on several nodes)
            storage_path=str(Path(cfg.output_dir, "ray-train").resolve()),
            failure_config=FailureConfig(max_failures=0),
        ),
    )
    start = time.monotonic()
    try:
        trainer.fit()
    except ray.train.TrainingFailedError as exc:
        where, _ = ray.get(board.read.remote())
        raise RayWorkerFailed(failure_line(exc, where, _alive_node_ids(ray))) from None
    where, done = ray.get(board.read.remote())
    elapsed = time.monotonic() - start
    return _outcome(job, placement.workers, where, done, elapsed, say)


def _absolute(cfg: Any, fields: tuple[str, ...]) -> dict[str, str]:
    return {f: str(Path(getattr(cfg, f)).expanduser().resolve()) for f in fields}


def _alive_node_ids(ray: Any) -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}


def failure_line(exc: Exception, where: dict[int, dict[str, Any]], alive: set[str]) -> str:
    """One line for a failed Ray Train run: the worker (rank, node, pid) that failed first
    in cause, and how. A worker whose process or node died is the cause; the others'
    errors (a collective whose peer vanished) are its consequences."""
    failures: dict[int, Exception] = dict(getattr(exc, "worker_failures", None) or {})
    if not failures:  # the controller itself failed (placement, startup)
        cause = getattr(exc, "controller_failure", None) or exc
        return f"ray: training failed: {type(cause).__name__}: {_first_line(str(cause))}"
    died = [r for r, e in failures.items() if _died(e)]
    rank = min(died) if died else min(failures)
    error = failures[rank]
    info = where.get(rank, {})
    node = info.get("node_id", "")
    at = (
        f"on node {node[:12]} ({info.get('node_ip', '?')}), pid {info.get('pid', '?')}"
        if node
        else "before it reported its node"
    )
    if died:
        how = (
            "died with its node (the node left the cluster)"
            if node and node not in alive
            else "died: its process exited (killed, out of memory or crashed)"
        )
    elif isinstance(error, ToolError):  # ours: the message names what to change
        how = f"failed: {_first_line(str(error))}"
    else:
        name = type(error).__name__
        how = f"raised {name}: {_first_line(str(error)).removeprefix(f'{name}: ')}"
    others = len(failures) - 1
    tail = f"; {others} other worker(s) failed with it" if others else ""
    return f"ray worker rank {rank} {at} {how}{tail}"


def _died(error: BaseException) -> bool:
    """A worker whose process or node is gone (Ray's health check found its actor dead),
    not one that raised."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

    dead = (ActorDiedError, ActorUnavailableError, RayActorError)
    # Ray Train wraps the dead actor's error in its health-check failure
    cause = getattr(error, "health_check_failure", error)
    return isinstance(cause, dead) or isinstance(error, dead)


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    # a traceback's last line is the exception itself
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def _outcome(
    job: RayJob,
    workers: int,
    where: dict[int, dict[str, Any]],
    done: dict[int, dict[str, Any]],
    elapsed: float,
    say: Callable[[str], None],
) -> dict[str, Any] | None:
    missing = sorted(set(range(workers)) - set(done))
    if missing:
        raise RayWorkerFailed(
            f"ray: Ray Train ended but worker rank(s) {missing} never finished; see the log"
        )
    if job.dry_run:
        say(f"ray: preflight ok on all {workers} worker(s)")
        return None
    rows = []
    for rank in range(workers):
        info, result = where.get(rank, {}), done[rank]
        rows.append(
            {
                "rank": rank,
                "node_id": info.get("node_id"),
                "node_ip": info.get("node_ip"),
                "pid": info.get("pid"),
                "steps": result.get("steps"),
                "last_loss": result.get("last_loss"),
            }
        )
        say(
            f"ray worker rank {rank} on node {str(info.get('node_id'))[:12]} "
            f"({info.get('node_ip')}): {result.get('steps')} optimizer step(s)"
        )
    idle = [r["rank"] for r in rows if not r["steps"]]
    if idle:
        raise RayWorkerFailed(f"ray worker rank(s) {idle} ran 0 optimizer steps; see the log")
    summary = {
        **done[0]["summary"],
        "engine": "ray",
        "wall_seconds": round(elapsed, 1),
        "workers": rows,
    }
    from shop_r1.callbacks import render_summary
    from shop_r1.commands.train import _write_node_summary

    _write_node_summary(summary)
    shown = {k: v for k, v in summary.items() if k != "workers"}  # one line each, above
    say(f"saved to {job.cfg.output_dir} (by rank 0)\n" + render_summary(shown))
    return summary
