"""The markdown issue body: what failed, why we think so, the machine, what to try.

Renderer only: it takes a snapshot, a diagnosis and the log text that the callers
collected, and builds text. Everything it writes passes through `redact.redact_text`
as the last step, so a secret in the command, the log or the snapshot cannot reach
the file, whichever section it would have landed in.

Two sources, kept apart: "from the log" (signatures matched in the log, ranked by the
evidence the log itself carries) and "this machine" (the doctor's snapshot of the machine
writing the report). When the log did not come from this machine's run (`report --log`
without `--cmd`), this machine's findings are shown under their own heading and never
feed the summary, the most likely cause or the steps to try. When the user pastes the
environment of the log's machine (`report --log --from`), the doctor's facts are that
machine's, named so wherever "this machine" would stand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shop_r1_doctor.causes import Diagnosis, rank_causes
from shop_r1_doctor.facts import NOT_PROBED, Facts, shown
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.fixplan import PLAN_HEADING, FixPlan, render_lines
from shop_r1_doctor.logscan import (
    LogDiagnosis,
    RankedMatch,
    diagnose_log,
    extract_fatal,
    extract_traceback,
    signal_lines,
)
from shop_r1_doctor.redact import redact_text
from shop_r1_doctor.sections import DriverFacts

TAIL_LINES = 60
MAX_LINE = 400
PACKAGES = (
    "torch",
    "transformers",
    "trl",
    "vllm",
    "flash-attn",
    "accelerate",
    "datasets",
    "deepspeed",
    "peft",
    "ray",
    "numpy",
    "shop-r1",
)
_ICON = {"error": "✗", "warning": "!", "info": "i"}


@dataclass(frozen=True)
class RunOutcome:
    """How the failing command ended, as `shop-r1 run` saw it (all optional for `report`)."""

    command: str = ""
    exit_code: int | None = None
    signal: str | None = None  # "SIGSEGV" when the child died by a signal
    seconds: float | None = None
    verdict: str = ""  # one sentence: "exited with code 3", "was killed by SIGABRT", ...
    log_path: str | None = None


@dataclass(frozen=True)
class ReportInput:
    snapshot: dict[str, Any]
    findings: Sequence[Finding] = ()
    profile: str | None = None
    log_text: str = ""
    outcome: RunOutcome = RunOutcome()
    doctor_error: str = ""  # the doctor itself failed: say so instead of hiding it
    # False when the log may come from another machine (`report --log` without --cmd):
    # the snapshot then describes only the machine writing the report.
    log_from_this_machine: bool = True
    # Whose facts the snapshot holds, as the report names it.
    machine: str = "this machine"
    # What `shop-r1 run` itself found (memory evidence, a run that ended at once).
    run_findings: Sequence[Finding] = ()
    # The doctor's one ordered plan for several packaging findings (fixplan.FixPlan)
    fix_plan: FixPlan | None = None

    @property
    def machine_feeds_diagnosis(self) -> bool:
        return self.log_from_this_machine or not self.log_text.strip()

    @property
    def facts_pasted(self) -> bool:
        """The snapshot was read from pasted text (`--from`), not probed."""
        source = self.snapshot.get("source")
        return isinstance(source, dict) and source.get("kind") == "dump"

    def causes(self) -> Diagnosis:
        """The log, the run and (when it ran the log's command) the doctor, joined."""
        findings = () if self.doctor_error else self.findings
        if self.facts_pasted:
            # A pasted environment is checked against our hardware profiles only to say
            # how it differs from the stack we would install; that difference is not why
            # the reporter's own stack failed.
            findings = [f for f in findings if f.code != "PROFILE_DEVIATION"]
        return rank_causes(
            self.log_text,
            command=self.outcome.command,
            run_findings=self.run_findings,
            doctor_findings=findings,
            machine_feeds=self.machine_feeds_diagnosis,
        )


def build_report(data: ReportInput, *, hosts: bool = False, home: str | None = None) -> str:
    """The issue body (markdown), redacted."""
    log = data.log_text
    diagnosis = diagnose_log(log, context=data.outcome.command) if log else None
    matches = list(diagnosis.matches) if diagnosis else []
    causes = data.causes()
    sections = [
        "# shop-r1 bug report",
        _summary(data, matches, causes),
        _next_steps(data, causes),
        _causes(causes, data.machine),
        _log_matches(matches, diagnosis),
        _findings(data),
        _environment(Facts(data.snapshot), data),
        _command(data.outcome),
        _crash(log),
        _tail(log, data.outcome),
        _snapshot(data.snapshot, data.machine),
    ]
    body = "\n\n".join(s for s in sections if s) + "\n"
    return redact_text(body, home=home, hosts=hosts)


def _summary(data: ReportInput, matches: list[RankedMatch], causes: Diagnosis) -> str:
    out = data.outcome
    what = f"`{_one_line(out.command)}`" if out.command else "The command"
    took = f" (it ran for {_duration(out.seconds)})" if out.seconds is not None else ""
    if data.facts_pasted and not out.command:
        parts = [
            f"This report reads a log and the environment pasted from {data.machine}; "
            "the doctor's findings on that environment join the log's readings."
        ]
    elif data.log_from_this_machine or not data.log_text.strip():
        parts = [f"{what} {out.verdict or 'failed'}{took}."]
    else:
        parts = [
            "This report reads a log that was not produced by a run on this machine "
            "(no command was given), so the diagnosis comes from the log alone."
        ]
    if not data.log_text.strip():
        parts.append("Its log is empty." if out.log_path else "No log was attached.")
    elif matches:
        named = "; ".join(f"**{m.code}** ({m.signature.title})" for m in matches)
        parts.append(f"The log matches {_n(len(matches), 'known failure mode')}: {named}.")
    else:
        parts.append("No known failure signature was found in the log.")
    errors = [f for f in data.findings if f.severity == "error"]
    warnings = [f for f in data.findings if f.severity == "warning"]
    if not data.machine_feeds_diagnosis:
        pass  # this machine's findings are in their own section, never in the diagnosis
    elif data.doctor_error:
        parts.append(f"The doctor could not diagnose {data.machine} ({data.doctor_error}).")
    else:
        profile = f" (closest hardware profile: {data.profile})" if data.profile else ""
        parts.append(
            f"The doctor found {_n(len(errors), 'error')} and {_n(len(warnings), 'warning')} "
            f"on {data.machine}{profile}."
        )
    lead = causes.lead
    if lead is not None:
        word = "Most likely cause" if lead.severity != "info" else "A hint"
        sources = {e.source for e in lead.evidence}
        why = [e.text for e in lead.evidence if e.source == "log" and e.line is None]
        if {"log", "doctor"} <= sources:
            shown = f" (the log and the doctor's findings on {data.machine} agree)"
        elif why:
            shown = f" (the log shows {'; '.join(why)})"
        else:
            shown = ""
        parts.append(f"{word}: {lead.title}{shown}.")
    return "## Summary\n\n" + " ".join(parts)


def _next_steps(data: ReportInput, causes: Diagnosis) -> str:
    steps: dict[str, str] = {}
    for c in causes.causes:
        if c.fix:
            steps.setdefault(c.code, c.fix)
    if steps:
        lines = [f"{i}. `{code}`: {fix}" for i, (code, fix) in enumerate(steps.items(), 1)]
    elif not data.machine_feeds_diagnosis:
        lines = [
            "1. Run `shop-r1 doctor -v` on the machine that produced the log and attach its output.",
            "2. Re-run there with `shop-r1 run -- <command>` so the full log is captured.",
        ]
    else:
        lines = [
            "1. Run `shop-r1 doctor -v` and attach its output.",
            "2. Re-run with `shop-r1 run -- <command>` so the full log is captured.",
        ]
    return "## What to try next\n\n" + "\n".join(lines[:10])


_SOURCE = {"log": "log", "run": "the run"}


def _causes(causes: Diagnosis, machine: str = "this machine") -> str:
    if not causes.causes:
        return ""
    lines = [
        f"Most likely first: the log, the doctor's findings on {machine} and what `shop-r1 run` saw, "
        "joined (a log line and the finding that explains it make one cause). "
        "Machine-readable: `--json` (schema shop-r1.diagnosis/1).",
        "",
    ]
    for i, c in enumerate(causes.causes, 1):
        lines.append(f"{i}. [{_ICON.get(c.severity, '?')}] **{c.code}** ({c.severity}): {c.title}")
        for e in c.evidence:
            where = f" line {e.line}" if e.line is not None else ""
            code = f" `{e.code}`" if e.code else ""
            source = machine if e.source == "doctor" else _SOURCE.get(e.source, e.source)
            lines.append(f"   - {source}{where}{code}: `{_cell(e.text)}`")
    return "## Diagnosis: causes\n\n" + "\n".join(lines)


def _log_matches(matches: list[RankedMatch], diagnosis: LogDiagnosis | None) -> str:
    if not matches:
        return ""
    rows = [
        "Most likely first: ranked by the evidence in the log itself (GPU, compute capability, "
        "frameworks in the traceback, platform), then by where it appears.",
        "",
        "| # | code | log line | meaning | evidence in the log | source |",
        "|---|---|---|---|---|---|",
    ]
    for i, m in enumerate(matches, 1):
        sig = m.signature
        also = f" (or {', '.join(sig.also)})" if sig.also else ""
        line = _cell(f"{m.match.line_no}: {m.match.line}")
        why = _cell("; ".join(m.why)) if m.why else ""
        rows.append(
            f"| {i} | `{sig.code}`{also} | `{line}` | {_cell(sig.title)} | {why} | {sig.source} |"
        )
    return "## From the log: known failure modes\n\n" + "\n".join(rows)


_NOT_THE_LOGS_MACHINE = (
    "The checks below describe the machine that wrote this report, which need not be the one "
    "that produced the log; they are not part of the diagnosis above."
)


def _findings(data: ReportInput) -> str:
    title = f"## {_heading(data.machine)}: doctor findings"
    note = "" if data.machine_feeds_diagnosis else _NOT_THE_LOGS_MACHINE + "\n\n"
    if data.doctor_error:
        return f"{title}\n\n{note}The doctor failed: {data.doctor_error}"
    if not data.findings:
        return f"{title}\n\n{note}No problems found in the environment."
    lines = []
    for f in data.findings:
        lines.append(f"- [{_ICON.get(f.severity, '?')}] **{f.code}** ({f.severity}): {f.title}")
        if f.fix:
            lines.append(f"  - fix: {f.fix}")
    if data.fix_plan is not None:
        lines += ["", PLAN_HEADING.format(profile=data.fix_plan.profile), "", "```"]
        lines += render_lines(data.fix_plan)
        lines.append("```")
    return f"{title}\n\n{note}" + "\n".join(lines)


def _environment(facts: Facts, data: ReportInput) -> str:
    host, py = facts.host, facts.host.python
    rows = [
        ("OS", _join(host.os, host.os_release, host.kernel, host.arch)),
        ("WSL / container", _join(_wsl(facts.wsl), facts.container) or "no"),
        ("Python", _join(py.version, py.executable) if py else ""),
        ("GPUs", _gpus(facts)),
        ("Driver", _driver(facts)),
        ("CUDA toolkit", str(facts.cuda_toolkit.nvcc_version or "")),
    ]
    torch = facts.torch
    if torch:
        cuda = f"CUDA {torch.cuda}" if torch.cuda else "CPU build"
        available = None if torch.cuda_available is NOT_PROBED else torch.cuda_available
        rows.append(("torch runtime", f"{cuda}, cuda_available={available}"))
    for name in PACKAGES:
        if facts.installed(name) is None:
            continue
        record = facts.package(name)
        rows.append((name, shown(record.version, "None") if record else "not installed"))
    table = ["| | |", "|---|---|"] + [f"| {k} | {_cell(v or 'unknown')} |" for k, v in rows]
    note = "" if data.machine_feeds_diagnosis else "Of the machine writing this report.\n\n"
    return f"## {_heading(data.machine)}: environment\n\n" + note + "\n".join(table)


def _command(outcome: RunOutcome) -> str:
    if not outcome.command:
        return ""
    lines = [f"```console\n$ {outcome.command}\n```"]
    if outcome.exit_code is not None or outcome.signal:
        end = f"killed by {outcome.signal}" if outcome.signal else f"exit code {outcome.exit_code}"
        took = f", after {_duration(outcome.seconds)}" if outcome.seconds is not None else ""
        lines.append(f"Ended: {end}{took}.")
    if outcome.log_path:
        lines.append(f"Full log: `{outcome.log_path}`")
    return "## Failing command\n\n" + "\n\n".join(lines)


def _crash(log: str) -> str:
    parts = []
    traceback = extract_traceback(log) if log else None
    if traceback:
        parts.append("Last Python traceback:\n\n" + _fence(traceback, "pytb"))
    fatal = extract_fatal(log) if log else None
    if fatal:
        parts.append("Fatal error (faulthandler):\n\n" + _fence(fatal))
    signals = signal_lines(log) if log else []
    if signals:
        parts.append("Native crash / signal lines:\n\n" + _fence("\n".join(signals)))
    return "## Traceback\n\n" + "\n\n".join(parts) if parts else ""


def _tail(log: str, outcome: RunOutcome) -> str:
    if not log.strip():
        return "## Log\n\nThe log is empty: the command printed nothing." if outcome.command else ""
    lines = [_screen_line(line)[:MAX_LINE] for line in log.splitlines()]
    lines = [line for line in lines if line.strip()][-TAIL_LINES:]
    return f"## Last {len(lines)} lines of the log\n\n" + _fence("\n".join(lines))


def _heading(machine: str) -> str:
    return machine[:1].upper() + machine[1:]


def _snapshot(snapshot: dict[str, Any], machine: str = "this machine") -> str:
    text = json.dumps(snapshot, indent=2, ensure_ascii=False)
    return (
        f"<details><summary>Full environment snapshot of {machine} (JSON)</summary>\n\n"
        + _fence(text, "json")
        + "\n\n</details>"
    )


def _screen_line(line: str) -> str:
    """What a terminal shows for a line rewritten with carriage returns (progress bars)."""
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1].rstrip() if parts else ""


def _fence(text: str, lang: str = "") -> str:
    # A fence longer than any backtick run inside, so a log cannot close it early.
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|").replace("`", "'")[:MAX_LINE]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _join(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p not in (None, "", NOT_PROBED))


def _wsl(wsl: int | None) -> str:
    return f"WSL{wsl}" if wsl else ""


def _gpus(facts: Facts) -> str:
    if not facts.known("gpus"):
        return "unknown"
    gpus = facts.gpus
    if not gpus:
        return "none visible"
    out = []
    for g in gpus:
        mem = g.memory_total_bytes
        size = f", {mem / 2**30:.0f} GiB" if isinstance(mem, int) else ""
        out.append(f"{shown(g.index)}: {shown(g.name)} (cc {shown(g.compute_capability)}{size})")
    return "; ".join(out)


def _driver(facts: Facts) -> str:
    if not facts.known("driver"):
        return "unknown"
    d = facts.listed_driver
    if not d or d == DriverFacts():
        return "none"
    cuda = f" (CUDA {d.cuda_version})" if d.cuda_version else ""
    return f"{shown(d.version)}{cuda}"


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
