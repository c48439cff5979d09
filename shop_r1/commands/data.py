"""`shop-r1 data`: make, convert, check and describe session files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

data_app = typer.Typer(
    help="Make, convert, validate and describe session files.", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    """Add the `data` group to the root app."""
    app.add_typer(data_app, name="data")


@data_app.command("synth")
def synth(
    sessions: int = typer.Option(..., "--sessions", min=1, help="Number of sessions."),
    seed: int = typer.Option(0, "--seed", help="Same seed, same sessions."),
    output: Path = typer.Option(..., "--output", "-o", help="Output .jsonl or .parquet."),
    mix: str = typer.Option(
        "", "--mix", help="Action-type weights, e.g. click=0.7,type_and_submit=0.2,terminate=0.1."
    ),
) -> None:
    """Generate synthetic shopping sessions."""
    import time

    from shop_r1.data.io import write_sessions
    from shop_r1.data.synth import generate_sessions, parse_mix
    from shop_r1_doctor.errors import ToolError

    try:
        weights = parse_mix(mix) if mix else None
    except ValueError as exc:
        raise ToolError(f"--mix: {exc}") from None
    start = time.perf_counter()
    made = generate_sessions(sessions, seed=seed, mix=weights)
    n = write_sessions(made, output)
    steps = sum(len(s.steps) for s in made)
    typer.echo(
        f"wrote {n} sessions ({steps} steps) to {output} in {time.perf_counter() - start:.1f}s"
    )


@data_app.command("convert")
def convert(
    source: str = typer.Argument(
        "NEU-HAI/OPeRA", help="Hub dataset id or local OPeRA .parquet/.jsonl file or folder."
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Output .jsonl or .parquet."),
    config: str = typer.Option("filtered_action", help="OPeRA config (Hub only)."),
    split: str = typer.Option("train", help="Split (Hub only)."),
) -> None:
    """Convert OPeRA action-level rows to the project's session format."""
    from shop_r1.data.io import write_sessions
    from shop_r1.data.opera import convert_rows, read_opera_rows
    from shop_r1_doctor.errors import ToolError

    sessions, report = convert_rows(read_opera_rows(source, config=config, split=split))
    if not sessions:
        raise ToolError(f"{source}: no usable OPeRA action rows (skipped: {report['skipped']})")
    write_sessions(sessions, output)
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report["skipped"].items())) or "none"
    typer.echo(
        f"wrote {report['sessions']} sessions ({report['steps']} steps) from {report['rows']} rows "
        f"to {output}; skipped rows: {skipped}; rationales filled from a template: "
        f"{report['rationale_filled']}"
    )


@data_app.command("validate")
def validate(
    files: list[Path] = typer.Argument(..., help="Session files (.jsonl or .parquet)."),
) -> None:
    """Check every row; print each problem as file:line: what is wrong. Exit 1 if any."""
    from shop_r1.data.io import check_sessions

    bad = 0
    for path in files:
        sessions, problems = check_sessions(path)
        for problem in problems:
            typer.echo(problem)
        bad += len(problems)
        status = "ok" if not problems else f"{len(problems)} bad row(s)"
        typer.echo(f"{path}: {len(sessions)} valid session(s), {status}", err=bool(problems))
    if bad:
        raise typer.Exit(1)


@data_app.command("stats")
def stats(
    file: Path = typer.Argument(..., help="Session file (.jsonl or .parquet)."),
    tokenizer: str = typer.Option(
        "", "--tokenizer", help="Tokenizer name or path for exact token counts."
    ),
    context: str = typer.Option("full", help="Context mode of the prompts: full or latest."),
    sample: int = typer.Option(
        2000, help="With --tokenizer: count at most this many prompts (evenly spaced)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Action-type mix, steps per session and prompt-length percentiles in tokens."""
    from shop_r1.data.io import load_sessions
    from shop_r1.data.stats import session_stats

    sessions = load_sessions(file)
    count, counter_name = _counter(tokenizer)
    report = session_stats(
        sessions, context=context, count_tokens=count, sample=sample if tokenizer else None
    )
    report["token_counter"] = counter_name
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _render_stats(file, report)


def _counter(name: str) -> tuple[Any, str]:
    from shop_r1.data.prompts import approx_tokens

    if not name:
        return (
            approx_tokens,
            "approximate (1 token per 4 characters; pass --tokenizer for exact counts)",
        )
    from shop_r1_doctor.errors import ToolError

    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name)
    except Exception as exc:  # missing package, bad path, no network: one line
        raise ToolError(f"--tokenizer {name}: cannot load ({exc})") from None

    def count(messages: Any) -> int:
        ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        return len(ids["input_ids"] if isinstance(ids, dict) else ids)

    count.chat = True  # type: ignore[attr-defined]
    return count, f"{name} (chat template applied)"


def _render_stats(file: Path, r: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{file}[/]: {r['sessions']} sessions, {r['steps']} steps")
    mix = Table(title="Action types")
    for col in ("type", "steps", "share"):
        mix.add_column(col, justify="left" if col == "type" else "right")
    for kind, n in r["action_types"].items():
        mix.add_row(kind, str(n), f"{100 * n / max(r['steps'], 1):.1f}%")
    console.print(mix)
    ends = ", ".join(f"{k}: {v}" for k, v in r["session_end"].items())
    sp = r["steps_per_session"]
    console.print(
        f"steps per session: mean {sp['mean']:.2f}, min {sp['min']}, p50 {sp['p50']}, "
        f"p90 {sp['p90']}, max {sp['max']}; last action: {ends}"
    )
    ctx = r["context_tokens"]
    t = Table(title=f"Prompt length in tokens ({r['context']} context, {ctx['counted']} prompts)")
    for col in ("p50", "p90", "p95", "p99", "max"):
        t.add_column(col, justify="right")
    t.add_row(*(str(ctx[c]) for c in ("p50", "p90", "p95", "p99", "max")))
    console.print(t)
    console.print(f"token counter: {r['token_counter']}")
