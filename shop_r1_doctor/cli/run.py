"""`shop-r1 run -- CMD ...`: run a command, keep its log, file a report when it fails."""

from __future__ import annotations

import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command(
        name="run",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(run)


def run(
    command: list[str] = typer.Argument(..., help="The command to run, after `--`."),
    min_seconds: float | None = typer.Option(
        None,
        "--min-seconds",
        help="An exit 0 sooner than this is suspicious. Default: 60 for training commands "
        "(train/sft/grpo/torchrun/accelerate), else off.",
    ),
    report_dir: Path | None = typer.Option(
        None,
        "--report-dir",
        help="Where the log and report go (default: shop-r1-runs/<time>-<name>).",
    ),
    redact_hosts: bool = typer.Option(
        False, "--redact-hosts", help="Also hide IP addresses and this machine's hostname."
    ),
    fast: bool = typer.Option(False, "--fast", help="Skip the probes that import torch."),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Print the diagnosis as JSON (schema shop-r1.diagnosis/1) on stdout; the "
        "command's own output then goes to stderr.",
    ),
) -> None:
    """Run CMD with its output shown live and saved; on failure write a bug report.

    Exit status: the command's own (128+N when killed by signal N), or 1 when it exited 0
    but looked like it did not do its work (empty log, too quick, a silent failure).
    """
    import sys

    from shop_r1_doctor.bugreport import RunOutcome, build_report
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.cli.report import gather, print_json, write_report
    from shop_r1_doctor.runwatch import default_min_seconds, judge, run_and_tee

    run_dir = report_dir or default_run_dir(command)
    result = run_and_tee(command, run_dir, out=sys.stderr.buffer if json_out else None)
    threshold = default_min_seconds(command) if min_seconds is None else min_seconds
    verdict = judge(result, threshold)
    say = Output().note
    if result.interrupted:
        say(f"shop-r1 run: interrupted; log kept in {result.log_path}")
        raise typer.Exit(result.exit_code or 130)
    if not verdict.failed:
        if json_out:
            print_json(_outcome_json(command, result, verdict, failed=False), [], None)
        raise typer.Exit(0)
    outcome = RunOutcome(
        command=shlex.join(command),
        exit_code=result.returncode if result.returncode >= 0 else None,
        signal=result.signal,
        seconds=result.seconds,
        verdict=verdict.sentence,
        log_path=str(result.log_path),
    )
    say(f"shop-r1 run: the command {verdict.sentence}; writing a bug report ...")
    data = gather(outcome, result.log_text, snapshot_path=None, fast=fast)
    data = replace(data, run_findings=verdict.findings)
    report_path = run_dir / "report.md"
    write_report(report_path, build_report(data, hosts=redact_hosts))
    doc = print_json(
        _outcome_json(command, result, verdict, failed=True),
        data,
        report_path,
        hosts=redact_hosts,
        to_stdout=json_out,
    )
    write_report(run_dir / "diagnosis.json", doc)
    say(f"shop-r1 run: report written to {report_path} (secrets redacted; review before posting)")
    raise typer.Exit(result.exit_code or 1)


def _outcome_json(command: list[str], result: Any, verdict: Any, *, failed: bool) -> dict[str, Any]:
    return {
        "command": shlex.join(command),
        "failed": failed,
        "verdict": verdict.sentence,
        "exit_status": (result.exit_code or 1) if failed else 0,  # what `shop-r1 run` exits with
        "returncode": result.returncode if result.returncode >= 0 else None,
        "signal": result.signal,
        "seconds": round(result.seconds, 3),
        "log": str(result.log_path),
    }


def default_run_dir(command: list[str]) -> Path:
    name = Path(command[0]).name if command else "cmd"
    if name.startswith("python") and len(command) > 2 and command[1] == "-m":
        name = command[2]
    elif name.startswith("python") and len(command) > 1 and not command[1].startswith("-"):
        name = Path(command[1]).stem
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:40] or "cmd"
    return Path("shop-r1-runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}"
