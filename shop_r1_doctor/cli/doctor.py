"""`shop-r1 doctor`: probe this machine (or read a saved snapshot), check it, report.

Only typer is imported at module level; probing, checks and rendering are imported
inside the command so `shop-r1 --help` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def run_doctor(
    *,
    as_json: bool = False,
    save: Path | None = None,
    snapshot_file: Path | None = None,
    dump_file: str | None = None,
    plan_file: Path | None = None,
    fast: bool = False,
    verbose: bool = False,
    timeout: float = 20.0,
) -> int:
    """The whole command; returns the exit status (0 healthy, 1 errors found)."""
    from shop_r1_doctor.diagnose import diagnose, warm_up
    from shop_r1_doctor.snapshot import load_snapshot, save_snapshot

    plan = None
    if plan_file is not None:
        from shop_r1_doctor.plan import load_plan  # yaml: only when a plan is given

        plan = load_plan(plan_file)
    if snapshot_file is not None and dump_file is not None:
        from shop_r1_doctor.errors import ToolError

        raise ToolError("--snapshot and --from both name the facts to check: give one")
    if snapshot_file is not None:
        snapshot = load_snapshot(snapshot_file)
    elif dump_file is not None:
        from shop_r1_doctor.ingest import read_dump, snapshot_from_dump

        snapshot = snapshot_from_dump(*read_dump(dump_file))
    else:
        from shop_r1_doctor.probes.collect import ProbeDeps, collect_snapshot

        deps = ProbeDeps(output_dir=plan.get("output_dir") if plan else None)
        # The checks' knowledge (YAML) loads while the torch child runs.
        # Optional kernels are imported only when the plan uses them (probes/imports.py).
        uses = {"liger_kernel": "use_liger_kernel", "vllm": "use_vllm"}
        want = [key for key, flag in uses.items() if plan and plan.get(flag) is True]
        snapshot = collect_snapshot(
            fast=fast, deps=deps, timeout=timeout, on_started=warm_up, want_imports=want
        )
    if plan is not None:
        if snapshot_file is None and isinstance(plan.get("output_dir"), str):
            # the probes key disk facts by home-redacted paths: compare like with like
            from shop_r1_doctor.redact import redact_home

            plan = {**plan, "output_dir": redact_home(plan["output_dir"])}
        snapshot["plan"] = plan
    if save is not None:
        save_snapshot(snapshot, save)
    diagnosis = diagnose(snapshot)
    from shop_r1_doctor.cli.output import Output

    out = Output(as_json)

    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    if as_json:
        from shop_r1_doctor.render.json import render_json
        from shop_r1_doctor.render.terminal import UNICODE, symbols_for

        text = render_json(diagnosis, ascii_only=symbols_for(encoding) is not UNICODE)
    else:
        import os

        from shop_r1_doctor.render.terminal import render_terminal

        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        text = render_terminal(diagnosis, verbose=verbose, encoding=encoding, color=color)
    out.write(text)
    if save is not None and not as_json:
        out.note(f"snapshot saved to {save}")
    return diagnosis.exit_code


def register(app: typer.Typer) -> None:
    """Add `doctor` to the root app."""

    @app.command("doctor")
    def doctor(
        as_json: bool = typer.Option(
            False, "--json", help="Print the report as JSON (shop-r1.report/1)."
        ),
        save: Path | None = typer.Option(
            None, "--save", help="Write the snapshot to FILE.", metavar="FILE"
        ),
        snapshot: Path | None = typer.Option(
            None, "--snapshot", help="Check a saved snapshot instead of probing.", metavar="FILE"
        ),
        dump: str | None = typer.Option(
            None,
            "--from",
            help="Check a pasted environment dump (collect_env, vllm collect-env, trl/"
            "transformers/accelerate env, nvidia-smi, pip list; FILE or - for stdin). "
            "What it does not say stays unknown.",
            metavar="FILE",
        ),
        plan: Path | None = typer.Option(
            None,
            "--plan",
            help="YAML/JSON of what you are about to run (see docs/doctor.md).",
            metavar="FILE",
        ),
        fast: bool = typer.Option(
            False, "--fast", help="No child process that imports torch or extensions."
        ),
        verbose: bool = typer.Option(
            False, "-v", "--verbose", help="Every fact and each probe's timing."
        ),
        timeout: float = typer.Option(
            20.0, "--timeout", min=0.1, help="Seconds each child probe may take."
        ),
    ) -> None:
        """Check whether this machine can train: GPUs, driver, torch, extensions, plan."""
        # a ToolError is formatted by the CLI's one error boundary (cli/output.py)
        code = run_doctor(
            as_json=as_json,
            save=save,
            snapshot_file=snapshot,
            dump_file=dump,
            plan_file=plan,
            fast=fast,
            verbose=verbose,
            timeout=timeout,
        )
        raise typer.Exit(code)
