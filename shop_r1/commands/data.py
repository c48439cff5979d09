"""`shop-r1 data`: make, convert, check and describe session files."""

from __future__ import annotations

from collections.abc import Sized
from pathlib import Path
from typing import Any

import typer

MAX_SESSIONS = 100_000_000  # a typo guard: 10^8 sessions is ~100 GB of JSONL

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
    from shop_r1.data.synth import iter_sessions, parse_mix
    from shop_r1_doctor.cli.output import Output, progress
    from shop_r1_doctor.errors import ToolError

    if sessions > MAX_SESSIONS:
        raise ToolError(f"--sessions: {sessions} is more than {MAX_SESSIONS:,}; split the job")
    try:
        weights = parse_mix(mix) if mix else None
    except ValueError as exc:
        raise ToolError(f"--mix: {exc}") from None
    start = time.perf_counter()
    steps = 0
    # streamed: one session in memory at a time, written to a temporary file then renamed
    with progress("synth", total=sessions, unit="sessions") as advance:

        def counted(s: Any) -> None:
            nonlocal steps
            steps += len(s.steps)
            advance()

        n = write_sessions(iter_sessions(sessions, seed=seed, mix=weights), output, counted)
    Output().line(
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
    from shop_r1_doctor.cli.output import Output, progress
    from shop_r1_doctor.errors import ToolError

    rows = read_opera_rows(source, config=config, split=split)
    total = len(rows) if isinstance(rows, Sized) else None
    with progress("reading rows", total=total, unit="rows") as advance:

        def counted(it: Any) -> Any:
            for row in it:
                advance()
                yield row

        sessions, report = convert_rows(counted(rows))
    if not sessions:
        raise ToolError(f"{source}: no usable OPeRA action rows (skipped: {report['skipped']})")
    with progress("writing", total=len(sessions), unit="sessions") as advance:
        write_sessions(sessions, output, lambda _: advance())
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(report["skipped"].items())) or "none"
    Output().line(
        f"wrote {report['sessions']} sessions ({report['steps']} steps) from {report['rows']} rows "
        f"to {output}; skipped rows: {skipped}; rationales filled from a template: "
        f"{report['rationale_filled']}"
    )


@data_app.command("validate")
def validate(
    files: list[Path] = typer.Argument(..., help="Session files (.jsonl or .parquet)."),
    as_json: bool = typer.Option(False, "--json", help="Print shop-r1.data-validate/1 JSON."),
) -> None:
    """Check every row; print each problem as file:line: what is wrong.

    Exit 0: every file has sessions and no bad row; 1: a bad row or an empty file;
    2: a file could not be read."""
    from pathlib import Path as _Path

    from shop_r1.data.io import scan_sessions
    from shop_r1_doctor.cli.output import Output, progress

    out = Output(as_json)
    results = []
    for path in files:
        size = _Path(path).stat().st_size if _Path(path).is_file() else None
        problems: list[str] = []
        with progress(f"validating {path.name}", total=size, unit="bytes") as advance:
            valid = sum(1 for _ in scan_sessions(path, problems, advance))  # streamed
        results.append({"path": str(path), "sessions": valid, "problems": problems})
        if not as_json:
            for problem in problems:
                out.line(problem)
            status = "ok" if not problems else f"{len(problems)} problem(s)"
            out.line(f"{path}: {valid} valid session(s), {status}", err=bool(problems))
    if as_json:
        out.emit("shop-r1.data-validate/1", {"files": results})
    if any(r["problems"] for r in results):
        raise typer.Exit(1)


@data_app.command("stats")
def stats(
    file: Path = typer.Argument(..., help="Session file (.jsonl or .parquet)."),
    tokenizer: str = typer.Option(
        "", "--tokenizer", help="Tokenizer name or path for exact token counts."
    ),
    context: str = typer.Option(
        "full", "--context", help="Context mode of the prompts: full or latest."
    ),
    sample: int = typer.Option(
        2000, help="With --tokenizer: count at most this many prompts (evenly spaced)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print shop-r1.data-stats/1 JSON."),
) -> None:
    """Action-type mix, steps per session and prompt-length percentiles in tokens."""
    from shop_r1.data.io import scan_sessions
    from shop_r1.data.stats import session_stats
    from shop_r1_doctor.cli.output import Output, progress
    from shop_r1_doctor.errors import ToolError

    if context not in ("full", "latest"):
        raise ToolError(f"--context {context}: choose full or latest")
    if sample < 1:
        raise ToolError(f"--sample {sample}: must be >= 1")
    count, counter_name = _counter(tokenizer)  # before reading: a bad --tokenizer fails fast
    from shop_r1.data.io import iter_rows

    total_steps = None
    if tokenizer:  # a first pass counts the steps, to spread the sample evenly
        total_steps = sum(
            len(r.get("steps") or [])
            for _, r, e in iter_rows(file)
            if not e and isinstance(r, dict)
        )
    size = file.stat().st_size if file.is_file() else None
    problems: list[str] = []
    with progress(f"reading {file.name}", total=size, unit="bytes") as advance:
        report = session_stats(  # streamed: one session in memory at a time
            scan_sessions(file, problems, advance),
            context=context,
            count_tokens=count,
            sample=sample if tokenizer else None,
            total_steps=total_steps,
        )
    if problems:
        more = f" (and {len(problems) - 1} more; run `shop-r1 data validate {file}`)"
        raise ToolError(problems[0] + (more if len(problems) > 1 else ""))
    report["token_counter"] = counter_name
    Output(as_json).emit(
        "shop-r1.data-stats/1", report, lambda con: _render_stats(con, file, report)
    )


def _counter(name: str) -> tuple[Any, str]:
    from shop_r1.data.prompts import approx_tokens

    if not name:
        return (
            approx_tokens,
            "approximate (1 token per 4 characters; pass --tokenizer for exact counts)",
        )
    from shop_r1.commands._common import check_local_ref
    from shop_r1_doctor.errors import ToolError

    check_local_ref(name, "--tokenizer", "tokenizer")
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name)
    except Exception as exc:  # missing package, bad path, no network: one line
        raise ToolError(f"--tokenizer {name}: cannot load ({exc})") from None

    def count(messages: Any) -> int:
        ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        return token_count(ids)

    count.chat = True  # type: ignore[attr-defined]
    return count, f"{name} (chat template applied)"


def token_count(ids: Any) -> int:
    """Tokens in what `apply_chat_template(tokenize=True)` returned: a list of ids, or
    (transformers 5) a BatchEncoding -- a Mapping but not a dict, whose len() is its
    number of keys."""
    from collections.abc import Mapping

    if isinstance(ids, Mapping):
        ids = ids["input_ids"]
    if hasattr(ids, "tolist"):  # a tensor or array
        ids = ids.tolist()
    if ids and isinstance(ids[0], list):  # a batch of one conversation
        ids = ids[0]
    return len(ids)


def _render_stats(console: Any, file: Path, r: dict[str, Any]) -> None:
    from rich.table import Table

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
