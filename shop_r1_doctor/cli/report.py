"""`shop-r1 report`: a complete, redacted bug report (markdown) in one step."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from shop_r1_doctor.bugreport import ReportInput, RunOutcome


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command(name="report")(report)


def report(
    log: Path | None = typer.Option(
        None, "--log", help="Log file of the failing run (without --cmd: read as from elsewhere)."
    ),
    cmd: str = typer.Option(
        "", "--cmd", help="The command that failed, as you ran it on this machine."
    ),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Write the issue body here (default: print it)."
    ),
    redact_hosts: bool = typer.Option(
        False, "--redact-hosts", help="Also hide IP addresses and this machine's hostname."
    ),
    snapshot: Path | None = typer.Option(
        None, "--snapshot", help="Use a saved snapshot (doctor --save) instead of probing."
    ),
    dump: str | None = typer.Option(
        None,
        "--from",
        help="The environment of the machine that wrote the log, as pasted (collect_env, "
        "trl/transformers/accelerate env, nvidia-smi, pip list, an issue's System Info; "
        "FILE or - for stdin): the doctor checks it and its findings join the log's.",
        metavar="FILE",
    ),
    fast: bool = typer.Option(False, "--fast", help="Skip the probes that import torch."),
    json_out: bool = typer.Option(
        False, "--json", help="The diagnosis as JSON (schema shop-r1.diagnosis/1), not markdown."
    ),
) -> None:
    """Write a markdown issue body: summary, findings, environment, log, traceback.

    With --log but no --cmd the log is treated as coming from elsewhere: the diagnosis
    uses the log alone and this machine's findings are listed apart, labelled as such.
    With --from, the facts are those the pasted environment of the log's machine gives,
    and the doctor's findings on them join the log's readings."""
    from shop_r1_doctor.bugreport import RunOutcome, build_report
    from shop_r1_doctor.cli.output import Output

    out = Output(json_out)
    if snapshot is not None and dump is not None:
        from shop_r1_doctor.errors import ToolError

        raise ToolError("--snapshot and --from both name the machine's facts: give one")
    log_text = read_log(log) if log else ""
    outcome = RunOutcome(command=cmd, log_path=str(log) if log else None)
    data = gather(outcome, log_text, snapshot_path=snapshot, dump_path=dump, fast=fast)
    if log and not cmd and dump is None:
        # A log without the command that wrote it may come from anywhere (a pasted issue,
        # another node): this machine's findings must not explain it.
        data = replace(data, log_from_this_machine=False)
    if json_out:
        run = {"command": cmd or None, "failed": None, "log": str(log) if log else None}
        doc = print_json(run, data, None, hosts=redact_hosts, to_stdout=output is None)
        if output is not None:
            write_report(output, doc)
            out.note(f"Diagnosis written to {output} (secrets redacted).")
        return
    text = build_report(data, hosts=redact_hosts)
    if output is None:
        out.line(text, nl=False)
        return
    write_report(output, text)
    out.line(f"Bug report written to {output} (secrets redacted; review it before posting).")


def gather(
    outcome: RunOutcome,
    log_text: str,
    *,
    snapshot_path: Path | None,
    fast: bool,
    dump_path: str | None = None,
) -> ReportInput:
    """Snapshot + diagnosis for the report. A doctor failure is reported, not raised:
    the user is already dealing with one failure and still needs the report."""
    from shop_r1_doctor.bugreport import ReportInput
    from shop_r1_doctor.snapshot import load_snapshot

    machine = "this machine"
    if snapshot_path is not None:
        snap: dict[str, Any] = load_snapshot(snapshot_path)  # a bad file is the user's to fix
    elif dump_path is not None:
        from shop_r1_doctor.ingest import read_dump, snapshot_from_dump
        from shop_r1_doctor.redact import redact_home

        text, where = read_dump(dump_path)
        snap = snapshot_from_dump(text, where)  # unreadable: one line naming the file, exit 2
        machine = f"the log's machine ({Path(redact_home(where)).name})"
    else:
        from shop_r1_doctor.probes.collect import collect_snapshot

        snap = collect_snapshot(fast=fast)
    try:
        from shop_r1_doctor.diagnose import diagnose

        diagnosis = diagnose(snap)
    except Exception as exc:  # a broken check must not cost the user the report
        return ReportInput(
            snapshot=snap,
            log_text=log_text,
            outcome=outcome,
            doctor_error=f"{type(exc).__name__}: {exc}",
            machine=machine,
        )
    return ReportInput(
        snapshot=snap,
        findings=diagnosis.findings,
        profile=diagnosis.profile,
        log_text=log_text,
        outcome=outcome,
        fix_plan=diagnosis.fix_plan,
        machine=machine,
    )


def print_json(
    run: dict[str, Any],
    data: ReportInput | list[Any],
    report_path: Path | None,
    *,
    hosts: bool = False,
    to_stdout: bool = True,
) -> str:
    """The `shop-r1.diagnosis/1` document (printed when `to_stdout`), as text."""
    from shop_r1_doctor.causes import Diagnosis, diagnosis_json

    if isinstance(data, list):  # a run that succeeded: no report, no causes
        doc = diagnosis_json(Diagnosis(()), outcome=run, doctor_findings=[], hosts=hosts)
        doc["doctor"] = None
    else:
        doc = diagnosis_json(
            data.causes(),
            outcome=run,
            doctor_findings=data.findings,
            doctor_error=data.doctor_error,
            log_from_this_machine=data.log_from_this_machine,
            report_path=str(report_path) if report_path else None,
            hosts=hosts,
            facts_from=data.machine,
        )
        if isinstance(doc.get("doctor"), dict):  # the same plan `doctor --json` carries
            doc["doctor"]["fix_plan"] = data.fix_plan.to_json() if data.fix_plan else None
    from shop_r1_doctor.cli.output import Output

    if to_stdout:
        Output(as_json=True).emit(doc["schema"], doc)
    return Output.json_text(doc["schema"], doc)


def read_log(path: Path) -> str:
    from shop_r1_doctor.cli.output import progress
    from shop_r1_doctor.errors import ToolError

    try:
        if path.is_dir():
            raise ToolError(f"{path}: is a directory; pass the log file your run wrote")
        size = path.stat().st_size
        chunks = []
        # read in chunks so a multi-GB log shows progress (bytes, rate, ETA)
        with path.open("rb") as fh, progress(f"reading {path.name}", size, "bytes") as bar:
            while chunk := fh.read(1 << 22):
                chunks.append(chunk)
                bar(len(chunk))
        return b"".join(chunks).decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise ToolError(f"{path}: no such log file; pass the file your run wrote") from None
    except OSError as exc:
        raise ToolError(f"{path}: cannot read the log: {exc.strerror}") from None


def write_report(path: Path, text: str) -> None:
    from shop_r1_doctor.atomic import write_text
    from shop_r1_doctor.errors import ToolError

    try:
        write_text(path, text)
    except OSError as exc:
        raise ToolError(f"{path}: cannot write the report: {exc.strerror}") from None
