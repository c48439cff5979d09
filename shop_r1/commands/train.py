"""`shop-r1 train sft|grpo`: config -> preflight (data, plan, doctor's checks) -> train,
in this process (or several under accelerate) or on a Ray cluster (`--ray`).

Only typer is imported at module level; the trainer loads inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from shop_r1_doctor.errors import ToolError

train_app = typer.Typer(
    help="Train: SFT cold start, then GRPO on the Shop-R1 reward.", no_args_is_help=True
)

# Options both commands take, declared once.
DATA_OPT = typer.Option(None, "--data", help="Sessions file (JSONL or parquet).")
OUTPUT_OPT = typer.Option(None, "--output-dir", help="Checkpoints, logs, final model.")
LR_OPT = typer.Option(None, "--learning-rate")
MAX_STEPS_OPT = typer.Option(None, "--max-steps")
BATCH_OPT = typer.Option(None, "--global-batch-size")
REPORT_OPT = typer.Option(None, "--report-to", help="tensorboard, wandb, none.")
PRINT_OPT = typer.Option(False, "--print-config", help="Print the resolved config and exit.")
DRY_RUN_OPT = typer.Option(False, "--dry-run", help="Plan and preflight only.")
JSON_OPT = typer.Option(
    False, "--json", help="With --dry-run: print the plan as shop-r1.train-plan/1 JSON."
)
RESUME_OPT = typer.Option(
    False, "--resume", help="Continue from the last checkpoint in --output-dir."
)
CONFIG_OPT = typer.Option(None, "--config", help="YAML file of config values (see --print-config).")
SET_OPT = typer.Option(
    [],
    "--set",
    help="Override any config field: --set learning_rate=1e-5 (repeatable). Every field of "
    "the config and of TRL's SFTConfig/GRPOConfig is also a flag: --top_p 0.9.",
)
IGNORE_OPT = typer.Option(
    [], "--ignore", help="Run despite this preflight error code (repeatable)."
)
RAY_OPT = typer.Option(
    None,
    "--ray",
    metavar="ADDRESS",
    help="Train on the Ray cluster at ADDRESS ('auto': the one running here) with Ray "
    "Train: one worker per GPU of the cluster (one per node without GPUs).",
)
RAY_WORKERS_OPT = typer.Option(
    None, "--ray-workers", min=1, help="With --ray: how many training workers Ray places."
)
RAY_CPUS_OPT = typer.Option(
    1.0, "--ray-cpus-per-worker", min=0.0, help="With --ray: CPUs Ray reserves per worker."
)
SNAPSHOT_OPT = typer.Option(
    None,
    "--snapshot",
    help="Plan from a saved `shop-r1 doctor --save` snapshot instead of probing.",
)


# Every config field is also a flag (`--top_p 0.9`, `--per_device_train_batch_size 4`), as
# TRL's parser offers them: typer keeps the options declared here and hands the rest over.
SETTINGS_AS_FLAGS = {"allow_extra_args": True, "ignore_unknown_options": True}


def _run(
    command: str,
    flags: dict[str, Any],
    args: list[str],
    config: Path | None,
    sets: list[str],
    print_config: bool,
    dry_run: bool,
    resume: bool,
    ignore: list[str],
    snapshot: Path | None,
    as_json: bool = False,
    ray: str | None = None,
    ray_workers: int | None = None,
    ray_cpus_per_worker: float = 1.0,
) -> None:
    from shop_r1.config import load_config, render_config
    from shop_r1_doctor.cli.output import Output

    console = Output(as_json)  # --json: stdout holds only the JSON, the rest goes to stderr
    cfg, source = load_config(command, yaml_path=config, flags=flags, sets=sets, args=args)
    if print_config:
        Output().line(render_config(cfg, source), nl=False)
        raise typer.Exit()
    from shop_r1.commands._common import require_train_extra

    # --dry-run too: the plan needs the model's tokenizer and TRL's config rules
    require_train_extra(f"train {command}" + (" --dry-run" if dry_run else ""))
    if as_json and not dry_run:
        raise ToolError("--json: needs --dry-run (training itself prints a summary, not JSON)")
    for name in ("model", "data"):
        if not getattr(cfg, name):
            raise ToolError(f"--{name}: missing (or set `{name}:` in --config)")
    _check_before_loading(cfg, resume)
    if ray is None and ray_workers is not None:
        raise ToolError("--ray-workers: needs --ray ADDRESS (the cluster the workers run on)")
    if ray is not None and as_json:
        raise ToolError("--json: not with --ray (each Ray worker plans on its own machine)")
    from shop_r1_doctor.api import load_snapshot

    if ray is not None:
        from shop_r1 import ray_engine

        snap = load_snapshot(snapshot) if snapshot else None
        job = ray_engine.RayJob(command, cfg, source, resume, tuple(ignore), snap, dry_run)
        ray_engine.run(job, ray_engine.RayLayout(ray, ray_workers, ray_cpus_per_worker), console)
        return
    try:
        run_here(
            command,
            cfg,
            source,
            console,
            resume=resume,
            ignore=ignore,
            snapshot=load_snapshot(snapshot) if snapshot else None,
            dry_run=dry_run,
            as_json=as_json,
        )
    except PreflightErrors as exc:
        console.print(
            f"[red]preflight: {len(exc.codes)} error(s); fix them or pass --ignore CODE[/red]"
        )
        raise typer.Exit(1) from None


class PreflightErrors(ToolError):
    """The preflight found errors (exit 1: it ran and found problems)."""

    exit_code = 1

    def __init__(self, codes: list[str]) -> None:
        super().__init__(
            f"preflight: {len(codes)} error(s) ({', '.join(codes)}); fix them or pass --ignore CODE"
        )
        self.codes = codes

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        # rebuilt from its codes, not its message: a Ray worker's error is pickled to the
        # driver, and unpickling calls the class with `args` (the message)
        return (type(self), (self.codes,))


def run_here(
    command: str,
    cfg: Any,
    source: Any,
    console: Any,
    *,
    resume: bool,
    ignore: list[str],
    snapshot: dict[str, Any] | None,
    dry_run: bool,
    as_json: bool = False,
    ray: bool = False,
) -> dict[str, Any] | None:
    """Preflight on this machine, then train in this process (one of several under
    accelerate or Ray Train: torch.distributed's environment says which; `ray`: a Ray
    Train worker). Returns the run summary; None after a dry run. Preflight errors raise
    `PreflightErrors`."""
    import dataclasses

    from shop_r1.models import resolve_model

    # A .gguf file becomes its cached safetensors folder here, once, so the plan, TRL's
    # policy and reference model and vLLM all load the same weights.
    resolved = resolve_model(cfg.model, log=lambda m: console.print(m))
    if resolved != cfg.model:
        cfg = dataclasses.replace(cfg, model=resolved)

    from shop_r1.autoconfig import render_table
    from shop_r1.preflight import prepare

    prepared = prepare(cfg, snapshot=snapshot, ray=ray)
    console.print(render_table(prepared.plan, title=f"shop-r1 train {command}: auto-configuration"))
    # the doctor's finding blocks; infos (a guess, a note) stay in `doctor` and --json
    console.findings([f for f in prepared.findings if f.severity != "info"], ignored=ignore)
    errors = prepared.errors(ignore)
    if as_json:
        from shop_r1.config import config_values
        from shop_r1_doctor.api import finding_json
        from shop_r1_doctor.cli.output import Output

        Output(True).emit(
            "shop-r1.train-plan/1",
            {
                "command": command,
                "config": config_values(cfg),
                "plan": dataclasses.asdict(prepared.plan),
                "findings": [finding_json(f) for f in prepared.findings],
                "errors": [f.code for f in errors],
                "training_rows": len(prepared.rows),
                "held_out_rows": len(prepared.test_rows),
            },
        )
    if errors:
        raise PreflightErrors([f.code for f in errors])
    from shop_r1 import train_grpo, train_sft

    module = train_sft if command == "sft" else train_grpo
    checked, note = trl_check_plan(prepared.plan, snapshot is not None)
    if note:
        console.print(note)
    # built once by the preflight, validated by TRL before any model is loaded; the
    # trainer gets it
    args = prepared.args
    if checked is not prepared.plan:
        import copy

        args = copy.deepcopy(args).decide(checked)
    try:
        args.validate()
    except (ValueError, TypeError) as exc:
        from shop_r1.config import trl_rejection

        user = set(args.user) | set(source)
        raise ToolError(trl_rejection(command, exc, args.settings(), user)) from None
    console.print(
        f"preflight ok: {len(prepared.rows)} training rows, {len(prepared.test_rows)} held out"
    )
    if dry_run:
        return None
    import os

    from shop_r1.callbacks import render_summary
    from shop_r1.config import RUN_CONFIG, render_config

    # The resolved config goes next to the weights before training starts: `--config` takes
    # it back, and `shop-r1 eval --model <output_dir>` reads the split and prompt settings
    # from it so held-out prompts are built the way training built them.
    from shop_r1_doctor.api import write_text

    # one writer per file: on several processes (and nodes sharing a file system) only the
    # first process writes what belongs to the run
    first = os.environ.get("RANK", "0") == "0"
    if first:
        write_text(Path(cfg.output_dir) / RUN_CONFIG, render_config(cfg, source))

    model, tokenizer = train_sft.load_model_and_tokenizer(cfg.model, prepared.plan)
    gpus = prepared.snapshot.get("gpus") or []
    gpu_name = gpus[0].get("name") if gpus and prepared.plan.device == "cuda" else None
    summary: dict[str, Any] = module.train(
        cfg,
        prepared.plan,
        prepared.rows,
        model=model,
        tokenizer=tokenizer,
        shape=prepared.shape,
        resume=resume,
        gpu_name=gpu_name,
        # checked without device and precision (planned elsewhere): TRL's config for this
        # machine is built from the plan itself, and says what this machine cannot do
        args=args if checked is prepared.plan else None,
    )
    _write_node_summary(summary)
    console.print(f"saved to {cfg.output_dir}\n" + render_summary(summary))
    return summary


def _write_node_summary(summary: dict[str, Any]) -> None:
    """This node's summary, for the launch script that judges each node by what it did:
    `SHOP_R1_NODE_SUMMARY` names a per-node file, written by the node's first process (the
    run's `summary.json` comes from the run's first process, on one node only)."""
    import json
    import os

    path = os.environ.get("SHOP_R1_NODE_SUMMARY")
    if not path or os.environ.get("LOCAL_RANK", "0") != "0":
        return
    from shop_r1_doctor.api import write_text

    node = {"node_rank": os.environ.get("NODE_RANK") or os.environ.get("GROUP_RANK"), **summary}
    write_text(Path(path), json.dumps(node, indent=2, default=str) + "\n")


def trl_check_plan(plan: Any, planned_elsewhere: bool) -> tuple[Any, str]:
    """The plan TRL's config is validated with here, and a note when it differs.

    TRL's config checks the device it is built on ("Your setup doesn't support bf16/gpu"
    on a CPU). A dry run with `--snapshot` of a GPU machine, on a machine without one, plans
    for the snapshot's GPU: everything TRL checks is checked except device and precision,
    which only the target can pass (its own preflight, `train --dry-run` there, checks them).
    """
    if not planned_elsewhere or plan.device != "cuda":
        return plan, ""
    import dataclasses

    import torch

    if torch.cuda.is_available():
        return plan, ""
    as_cpu = dataclasses.replace(plan, device="cpu", dtype="fp32")
    return as_cpu, (
        f"TRL's config checked without device and precision (cuda, {plan.dtype}): this "
        "machine has no GPU; the target's own preflight checks them"
    )


# report_to name -> module that must import (transformers' integrations need them)
REPORT_BACKENDS = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "mlflow": ("mlflow",),
    "comet_ml": ("comet_ml",),
    "clearml": ("clearml",),
    "dvclive": ("dvclive",),
    "trackio": ("trackio",),
    "swanlab": ("swanlab",),
    "neptune": ("neptune",),
    "codecarbon": ("codecarbon",),
    "azure_ml": ("azureml",),
}


def _check_before_loading(cfg: Any, resume: bool) -> None:
    """What would fail at step 0, checked before the model loads: a logging backend
    that is not installed, an output directory that is a file, --resume without a
    checkpoint."""
    import importlib.util

    from shop_r1.commands._common import check_local_ref

    check_local_ref(cfg.model, "--model")
    data = Path(cfg.data)
    if not data.is_file():
        what = "is a directory" if data.is_dir() else "no such file"
        raise ToolError(f"--data {data}: {what}; give a sessions JSONL or parquet file")
    out = Path(cfg.output_dir)
    if out.exists() and not out.is_dir():
        raise ToolError(f"--output-dir {out}: is a file; give a directory")
    for name in [r.strip() for r in str(cfg.report_to).split(",") if r.strip()]:
        if name in ("none", "all"):
            continue
        modules = REPORT_BACKENDS.get(name)
        if modules is None:
            known = ", ".join(["none", *REPORT_BACKENDS])
            raise ToolError(f"--report-to {name}: unknown backend; use one of {known}")
        if not any(importlib.util.find_spec(m) for m in modules):
            raise ToolError(
                f"--report-to {name}: {modules[0]} is not installed; pip install {modules[0]} "
                "or pass --report-to none"
            )
    if resume:
        from shop_r1.train_sft import last_checkpoint

        found = last_checkpoint(str(out))
        if found is None:
            raise ToolError(
                f"--resume: no checkpoint-N directory in {out}; run without --resume to start "
                "fresh, or point --output-dir at the earlier run"
            )
        from shop_r1_doctor.cli.output import Output

        Output().note(f"resuming from {found}")


def _common_flags(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


@train_app.command("sft", context_settings=SETTINGS_AS_FLAGS)
def sft(
    ctx: typer.Context,
    model: str = typer.Option(None, "--model", help="Hub id, local directory or .gguf file."),
    data: str = DATA_OPT,
    output_dir: str = OUTPUT_OPT,
    config: Path = CONFIG_OPT,
    learning_rate: float = LR_OPT,
    epochs: float = typer.Option(None, "--epochs"),
    max_steps: int = MAX_STEPS_OPT,
    global_batch_size: int = BATCH_OPT,
    max_length: int = typer.Option(None, "--max-length"),
    attn: str = typer.Option(None, "--attn", help="auto, sdpa, eager, flash_attention_2/3."),
    report_to: str = REPORT_OPT,
    sets: list[str] = SET_OPT,
    print_config: bool = PRINT_OPT,
    dry_run: bool = DRY_RUN_OPT,
    resume: bool = RESUME_OPT,
    ignore: list[str] = IGNORE_OPT,
    snapshot: Path = SNAPSHOT_OPT,
    as_json: bool = JSON_OPT,
    ray: str = RAY_OPT,
    ray_workers: int = RAY_WORKERS_OPT,
    ray_cpus_per_worker: float = RAY_CPUS_OPT,
) -> None:
    """Supervised fine-tuning on (prompt, rationale + action) rows."""
    flags = _common_flags(
        model=model,
        data=data,
        output_dir=output_dir,
        learning_rate=learning_rate,
        num_train_epochs=epochs,
        max_steps=max_steps,
        global_batch_size=global_batch_size,
        max_length=max_length,
        attn_implementation=attn,
        report_to=report_to,
    )
    _run(
        "sft",
        flags,
        ctx.args,
        config,
        sets,
        print_config,
        dry_run,
        resume,
        ignore,
        snapshot,
        as_json,
        ray,
        ray_workers,
        ray_cpus_per_worker,
    )


@train_app.command("grpo", context_settings=SETTINGS_AS_FLAGS)
def grpo(
    ctx: typer.Context,
    model: str = typer.Option(
        None, "--model", help="Hub id, local directory or .gguf file (usually the SFT output)."
    ),
    data: str = DATA_OPT,
    output_dir: str = OUTPUT_OPT,
    config: Path = CONFIG_OPT,
    learning_rate: float = LR_OPT,
    max_steps: int = MAX_STEPS_OPT,
    global_batch_size: int = BATCH_OPT,
    num_generations: int = typer.Option(None, "--num-generations"),
    max_completion_length: int = typer.Option(None, "--max-completion-length"),
    use_vllm: str = typer.Option(None, "--use-vllm", help="auto, on, off."),
    report_to: str = REPORT_OPT,
    sets: list[str] = SET_OPT,
    print_config: bool = PRINT_OPT,
    dry_run: bool = DRY_RUN_OPT,
    resume: bool = RESUME_OPT,
    ignore: list[str] = IGNORE_OPT,
    snapshot: Path = SNAPSHOT_OPT,
    as_json: bool = JSON_OPT,
    ray: str = RAY_OPT,
    ray_workers: int = RAY_WORKERS_OPT,
    ray_cpus_per_worker: float = RAY_CPUS_OPT,
) -> None:
    """GRPO with the hierarchical Shop-R1 reward (+ rationale self-certainty)."""
    flags = _common_flags(
        model=model,
        data=data,
        output_dir=output_dir,
        learning_rate=learning_rate,
        max_steps=max_steps,
        global_batch_size=global_batch_size,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        use_vllm=use_vllm,
        report_to=report_to,
    )
    _run(
        "grpo",
        flags,
        ctx.args,
        config,
        sets,
        print_config,
        dry_run,
        resume,
        ignore,
        snapshot,
        as_json,
        ray,
        ray_workers,
        ray_cpus_per_worker,
    )


def register(app: typer.Typer) -> None:
    """Add `shop-r1 train sft|grpo`."""
    app.add_typer(train_app, name="train")


def launch_config_checks() -> dict[str, Any]:
    """`launch --config` is checked like `train --config` (wired by `shop_r1.cli`)."""
    return {"sft": _launch_config_check("sft"), "grpo": _launch_config_check("grpo")}


def _launch_config_check(command: str) -> Any:
    def check(path: Path, data: dict[str, Any]) -> None:
        from shop_r1.config import load_config

        load_config(command, yaml_path=path)  # file:line: field: what is wrong

    return check
