"""`shop-r1 launch {sft,grpo,eval,vllm-server} -o FILE [--auto | --profile NAME] ...`."""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer

from shop_r1_doctor.errors import ToolError

# Checks a `--config` against the training config's types, so a launch script is never
# written for a config that `shop-r1 train` would reject. The trainer owns the config and
# the doctor does not import it: the entry point passes the checks to `register`.
ConfigCheck = Callable[[Path, dict[str, Any]], None]
MAX_GPUS_PER_NODE = 64  # more than any single host sold; a typo guard
MAX_NODES = 4096


def register(app: typer.Typer, config_checks: Mapping[str, ConfigCheck] | None = None) -> None:
    """Add `launch` to the root app; `config_checks` (task -> check) reach the command as
    its context's `obj`."""
    app.command("launch", context_settings={"obj": dict(config_checks or {})})(launch)


def launch(
    ctx: typer.Context,
    task: str = typer.Argument(..., help="sft, grpo, eval or vllm-server."),
    output: Path = typer.Option(
        ..., "--output", "-o", help="Script to write (siblings go next to it)."
    ),
    auto: bool = typer.Option(False, "--auto", help="Profile, GPUs and vLLM from this machine."),
    profile: str | None = typer.Option(
        None,
        "--profile",
        help="Profile, GPU name or compute capability (hopper, H100, sm_120) instead of --auto.",
    ),
    gpus: int | None = typer.Option(
        None, "--gpus", help="GPUs per node (default: the target's count, at run time)."
    ),
    nodes: int = typer.Option(1, "--nodes", help="Machines (multi-node through accelerate)."),
    model: str | None = typer.Option(None, "--model", help="Model id or path."),
    data: str | None = typer.Option(None, "--data", help="Sessions file (else $DATA at run time)."),
    output_dir: str | None = typer.Option(None, "--output-dir", help="Run output directory."),
    config: Path | None = typer.Option(
        None, "--config", help="Training config YAML to start from."
    ),
    snapshot: Path | None = typer.Option(
        None,
        "--snapshot",
        help="Plan for the machine a `shop-r1 doctor --save` snapshot recorded "
        "(default: this machine's facts).",
    ),
    ray: bool = typer.Option(
        False,
        "--ray",
        help="Train on a Ray cluster (sft, grpo): the main node starts or joins it and runs "
        "`train --ray` (Ray Train places the workers); other nodes only join it.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print shop-r1.launch/1 JSON."),
) -> None:
    """Write a launch script that carries the doctor's fixes (interpreter, GPU split, env, ports)."""
    from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch
    from shop_r1_doctor.launch.plan import DEFAULT_MODEL, TASKS, layout_from_facts, target_machine
    from shop_r1_doctor.profiles.lookup import resolve_profile
    from shop_r1_doctor.profiles.model import get_profile
    from shop_r1_doctor.target_python import pip_command

    if task not in TASKS:
        raise ToolError(f"launch {task}: unknown task; choose one of: {', '.join(TASKS)}")
    if auto == (profile is not None):
        raise ToolError("launch: pass exactly one of --auto or --profile NAME")
    if gpus is not None and not 0 <= gpus <= MAX_GPUS_PER_NODE:
        raise ToolError(f"--gpus {gpus}: GPUs per node must be 0 to {MAX_GPUS_PER_NODE}")
    if not 1 <= nodes <= MAX_NODES:
        raise ToolError(f"--nodes {nodes}: must be 1 to {MAX_NODES}")
    if output.is_dir():
        raise ToolError(f"-o {output}: is a directory; give the script's file name")
    run_config = _read_config(config, task, ctx.obj or {}) if config else {}
    resolved = ""
    if auto:
        # this machine is the target: its facts fix the profile, GPU count and vLLM
        facts, target = _target_facts(snapshot)
        prof_name, facts_gpus, vllm_ok, consumer = layout_from_facts(facts)
        prof = get_profile(prof_name)
        if gpus is not None and gpus > facts_gpus:
            raise ToolError(
                f"--gpus {gpus}: {target} has {facts_gpus} GPU(s); pass at most that, "
                "or --profile NAME to write a script for another machine"
            )
        known: int | None = facts_gpus
        vllm: bool | None = vllm_ok
    else:
        assert profile is not None
        found = resolve_profile(profile)
        prof, resolved = found.profile, found.how
        if snapshot is not None:  # the target's recorded facts
            facts, target = _target_facts(snapshot)
            facts_gpus, vllm, consumer = target_machine(facts)
            known = facts_gpus or None  # a snapshot without GPUs fixes no count
        else:
            # this machine (a login node, a laptop) is not the target: what only the
            # target knows is decided there, at run time
            facts, target, known, vllm, consumer = None, "", None, None, False
    if prof.cuda is None:
        known = 0
    count = gpus if gpus is not None else known
    gpus_source = "--gpus" if gpus is not None else (target if count else "")
    request = LaunchRequest(
        task=task,  # type: ignore[arg-type]
        profile=prof,
        python=sys.executable,
        gpus=count,
        nodes=nodes,
        model=model or DEFAULT_MODEL,
        data=data,
        output_dir=output_dir,
        config=run_config,
        ray=ray,
        vllm_available=vllm,
        consumer_gpus=consumer,
        target=target,
        target_pip=pip_command(facts) if facts is not None else "python3 -m pip",
        generated_in=generating_environment(),
        gpus_source=gpus_source,
        command_line=shlex.join(["shop-r1", "launch", *sys.argv[2:]])
        if sys.argv[1:2] == ["launch"]
        else "shop-r1 launch",
    )
    plan = plan_launch(request)
    if resolved:
        plan = dataclasses.replace(
            plan, decisions=(f"--profile {resolved}: profile {prof.name}", *plan.decisions)
        )
    rendered = render_launch(plan, output.name)
    from shop_r1_doctor.atomic import write_text
    from shop_r1_doctor.cli.output import Output

    written = []
    for name, text in rendered.files.items():  # each file whole or not at all
        path = output.parent / name
        write_text(path, text)
        written.append(str(path))
    output.chmod(0o755)
    payload = {"files": written, "decisions": list(plan.decisions), "run": f"bash {output}"}
    out = Output(as_json)

    def human(_: Any) -> None:
        for path_text in written:
            out.line(f"wrote {path_text}")
        for decision in plan.decisions:
            out.line(f"  - {decision}")
        out.line(f"run: bash {output}")

    out.emit("shop-r1.launch/1", payload, human)


def generating_environment() -> str:
    """The environment this command runs in, for the script's header (not assumed there)."""
    if os.environ.get("CONDA_PREFIX") and sys.prefix == os.environ["CONDA_PREFIX"]:
        return f"conda env {os.environ.get('CONDA_DEFAULT_ENV') or sys.prefix}"
    if sys.prefix != sys.base_prefix:
        return f"virtualenv {sys.prefix}"
    return "the system Python"


def _target_facts(snapshot: Path | None) -> tuple[Any, str]:
    """(facts, their name in decisions): a saved snapshot of the target, or a fast
    snapshot of this machine."""
    from shop_r1_doctor.facts import Facts

    if snapshot is not None:
        from shop_r1_doctor.snapshot import load_snapshot

        return Facts(load_snapshot(snapshot)), f"snapshot {snapshot}"
    from shop_r1_doctor.probes.collect import collect_snapshot

    return Facts(collect_snapshot(fast=True)), "this machine"


def _read_config(path: Path, task: str, checks: Mapping[str, ConfigCheck]) -> dict[str, Any]:
    """The `--config` file on the one schema reader: every error `FILE:LINE: FIELD: ...`.
    The trainer's check (passed to `register`) checks fields, types and ranges like `train`."""
    from shop_r1_doctor.schema import Reader

    if task not in ("sft", "grpo"):
        raise ToolError(f"--config {path}: only sft and grpo take a training config")
    check = checks.get(task)
    if check is None:  # never a script from a config nobody checked
        raise ToolError(
            f"--config {path}: the training config is checked by the trainer; "
            "run `shop-r1 launch` (python -m shop_r1.cli), not the doctor alone"
        )
    reader, data = Reader.read(path, "config")
    if data is None:
        return {}
    if not isinstance(data, dict):  # the same words as `train --config`
        raise reader.fail("", "a config file must be a mapping of setting: value")
    check(path, data)
    return data
