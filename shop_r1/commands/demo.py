"""`shop-r1 demo`: the whole pipeline on synthetic data, on a CPU, in minutes."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("demo")(demo_command)


def demo_command(
    output_dir: Path = typer.Option(
        Path("runs/demo"), "--output-dir", help="Where everything goes."
    ),
    sessions: int = typer.Option(240, "--sessions", help="Synthetic sessions (10% held out)."),
    seed: int = typer.Option(0, "--seed", help="Seed for data, split and initialisation."),
    sft_steps: int = typer.Option(800, "--sft-steps", help="SFT optimizer steps."),
    grpo_steps: int = typer.Option(20, "--grpo-steps", help="GRPO optimizer steps."),
    threads: int = typer.Option(2, "--threads", help="CPU threads for torch."),
) -> None:
    """Synthetic sessions -> tokenizer -> tiny random-init model -> SFT -> GRPO -> eval.

    Ends with the before-SFT / SFT / SFT+GRPO table (exact match, type accuracy,
    macro-F1, per type). Runs on a CPU in under 10 minutes on 2 cores; nothing is
    downloaded. The tiny model learns the output format, not much more: see
    benchmarks/learning.py for a model that learns the task on a GPU.
    """
    from shop_r1.commands._common import require_train_extra

    require_train_extra("demo")  # before shop_r1.demo, which imports torch
    from shop_r1.demo import PipelineConfig, run_pipeline
    from shop_r1_doctor.errors import ToolError

    if sessions < 10:
        raise ToolError(f"--sessions: {sessions} is too few; use >= 10 (1 in 10 is held out)")
    for flag, value, least in (
        ("--sft-steps", sft_steps, 0),
        ("--grpo-steps", grpo_steps, 0),
        ("--threads", threads, 1),
    ):
        if value < least:
            raise ToolError(f"{flag}: {value} must be >= {least}")
    if output_dir.exists() and not output_dir.is_dir():
        raise ToolError(f"--output-dir {output_dir}: is a file; give a directory")
    cfg = PipelineConfig(
        output_dir=str(output_dir),
        sessions=sessions,
        seed=seed,
        sft_steps=sft_steps,
        grpo_steps=grpo_steps,
        threads=threads,
    )
    results = run_pipeline(cfg)
    from shop_r1.demo import render_table
    from shop_r1_doctor.cli.output import Output

    out = Output()
    out.line("")
    out.line(render_table(results))
    out.line(f"\nwrote {output_dir}/results.json, report.md and eval-*/ (predictions, metrics)")
