"""`shop-r1 launch {sft,grpo,eval,vllm-server} -o FILE [--auto | --profile NAME] ...`."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import typer

from shop_r1_doctor.errors import ToolError


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("launch")(launch)


def launch(
    task: str = typer.Argument(..., help="sft, grpo, eval or vllm-server."),
    output: Path = typer.Option(
        ..., "--output", "-o", help="Script to write (siblings go next to it)."
    ),
    auto: bool = typer.Option(False, "--auto", help="Profile, GPUs and vLLM from this machine."),
    profile: str | None = typer.Option(None, "--profile", help="Profile name instead of --auto."),
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs per node (default: all / 1)."),
    nodes: int = typer.Option(1, "--nodes", help="Machines (multi-node through accelerate)."),
    model: str | None = typer.Option(None, "--model", help="Model id or path."),
    data: str | None = typer.Option(None, "--data", help="Sessions file (else $DATA at run time)."),
    output_dir: str | None = typer.Option(None, "--output-dir", help="Run output directory."),
    config: Path | None = typer.Option(
        None, "--config", help="Training config YAML to start from."
    ),
    ray: bool = typer.Option(False, "--ray", help="Start / join a Ray cluster first."),
) -> None:
    """Write a launch script that carries the doctor's fixes (interpreter, GPU split, env, ports)."""
    from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch
    from shop_r1_doctor.launch.plan import DEFAULT_MODEL, TASKS
    from shop_r1_doctor.profiles.model import get_profile

    if task not in TASKS:
        raise ToolError(f"launch {task}: unknown task; choose one of: {', '.join(TASKS)}")
    if auto == (profile is not None):
        raise ToolError("launch: pass exactly one of --auto or --profile NAME")
    if auto:
        prof_name, facts_gpus, vllm_ok, consumer = _from_facts()
        prof = get_profile(prof_name)
    else:
        assert profile is not None
        prof = get_profile(profile)
        facts_gpus, vllm_ok, consumer = (1 if prof.cuda else 0), prof.vllm is not None, False
    request = LaunchRequest(
        task=task,  # type: ignore[arg-type]
        profile=prof,
        python=sys.executable,
        gpus=facts_gpus if gpus is None else gpus,
        nodes=nodes,
        model=model or DEFAULT_MODEL,
        data=data,
        output_dir=output_dir,
        config=_read_config(config) if config else {},
        ray=ray,
        vllm_available=vllm_ok,
        consumer_gpus=consumer,
        command_line=shlex.join(["shop-r1", "launch", *sys.argv[2:]])
        if sys.argv[1:2] == ["launch"]
        else "shop-r1 launch",
    )
    plan = plan_launch(request)
    rendered = render_launch(plan, output.name)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.files.items():
            path = output.parent / name
            path.write_text(text, encoding="utf-8")
            typer.echo(f"wrote {path}")
        output.chmod(0o755)
    except OSError as exc:
        raise ToolError(f"{output}: cannot write: {exc.strerror}") from None
    for decision in plan.decisions:
        typer.echo(f"  - {decision}")
    typer.echo(f"run: bash {output}")


def _from_facts() -> tuple[str, int, bool, bool]:
    """(profile, GPU count, vLLM usable, consumer GPUs) from a fast doctor snapshot."""
    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.launch.plan import layout_from_facts
    from shop_r1_doctor.probes.collect import collect_snapshot

    return layout_from_facts(Facts(collect_snapshot(fast=True)))


def _read_config(path: Path) -> dict[str, Any]:
    from shop_r1_doctor.yamlio import read_yaml

    _, data = read_yaml(path, "config")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ToolError(f"{path}: a config must be a mapping of fields")
    return data
