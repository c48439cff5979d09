"""A failed run's causes, ranked, from everything known about it: the log, the doctor's
findings on the machine that ran it, and what `shop-r1 run` saw (memory evidence, timing).

Pure: the callers collect the log, the findings and the run's own findings. Joins are
data: a log symptom (`knowledge/log_symptoms.yaml`) names the doctor codes that explain
it (`explained_by`), and a log signature's code is explained by a doctor code whose
codes.yaml entry lists it (`explains`), or by a doctor finding of the same code (the
machine's setting behind the log's failure: a low `ulimit -n` and the DataLoader's
"Too many open files"). A joined cause leads, with both the log line and
the finding as evidence. `Diagnosis.to_json()` is the `shop-r1.diagnosis/1` contract.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shop_r1_doctor.findings import SEVERITIES, Finding, Severity
from shop_r1_doctor.logscan import diagnose_log, load_signatures, strip_prefixes
from shop_r1_doctor.schema import Contract, FieldError, decode, decode_file, https, nonempty

SYMPTOMS_PATH = Path(__file__).with_name("knowledge") / "log_symptoms.yaml"
SYMPTOMS_SCHEMA = "shop-r1.log-symptoms/1"
DIAGNOSIS_SCHEMA = "shop-r1.diagnosis/1"
_HINT = "fix the symptom (see the comment at the top of the file)"


class Symptom(Contract, frozen=True):
    id: str
    pattern: re.Pattern[str]
    title: str
    code: str  # the reading when nothing explains it
    severity: Severity
    source: str
    example: str
    explained_by: tuple[str, ...] = ()
    rules_out: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        nonempty(self, "id", "title", "code", "example")
        https(self.source, "source")
        if not self.pattern.pattern or not self.pattern.search(self.example):
            raise FieldError("pattern", "does not match its own example; fix one of them")


class SymptomsFile(Contract, frozen=True):
    schema: Literal["shop-r1.log-symptoms/1"]
    symptoms: tuple[Symptom, ...]


def _known_names(doc: SymptomsFile) -> None:
    """Codes must be in codes.yaml and ruled-out signatures in log_signatures.yaml."""
    from shop_r1_doctor.knowledge import load_codes

    codes = load_codes()
    signature_ids = {s.id for s in load_signatures()}
    for n, s in enumerate(doc.symptoms):
        where = f"symptoms[{n}]"
        for i, code in enumerate((s.code, *s.explained_by)):
            if code not in codes:
                key = "code" if i == 0 else f"explained_by[{i - 1}]"
                raise FieldError(f"{where}.{key}", f"unknown code {code!r}; add it to codes.yaml")
        for i, sid in enumerate(s.rules_out):
            if sid not in signature_ids:
                raise FieldError(f"{where}.rules_out[{i}]", f"no log signature has id {sid!r}")


def parse_symptoms(data: Any, file: str, lines: Any = None) -> tuple[Symptom, ...]:
    """Validated symptoms: patterns compile and match their example, codes and ids exist."""
    return decode(data, SymptomsFile, file, lines, _HINT, _known_names).symptoms


@functools.lru_cache(maxsize=1)
def load_symptoms() -> tuple[Symptom, ...]:
    return decode_file(SYMPTOMS_PATH, SymptomsFile, "log symptoms", _HINT, _known_names)[0].symptoms


@dataclass(frozen=True)
class EvidenceLine:
    source: str  # "log", "doctor" or "run"
    text: str
    line: int | None = None  # the log line number
    code: str | None = None  # the doctor finding's code

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "text": self.text}
        if self.line is not None:
            out["line"] = self.line
        if self.code is not None:
            out["code"] = self.code
        return out


@dataclass(frozen=True)
class Cause:
    code: str
    severity: Severity
    title: str
    fix: str
    evidence: tuple[EvidenceLine, ...]
    urls: tuple[str, ...] = ()
    also: tuple[str, ...] = ()  # other codes the same text can point to

    def to_json(self, rank: int) -> dict[str, Any]:
        return {
            "rank": rank,
            "code": self.code,
            "severity": self.severity,
            "title": self.title,
            "fix": self.fix,
            "evidence": [e.to_json() for e in self.evidence],
            "urls": list(self.urls),
            "also": list(self.also),
        }


@dataclass(frozen=True)
class Diagnosis:
    """The ranked causes of one run, most likely first."""

    causes: tuple[Cause, ...]
    machine_findings: tuple[Finding, ...] = field(default=())  # kept apart: another machine

    @property
    def lead(self) -> Cause | None:
        return self.causes[0] if self.causes else None


def rank_causes(
    log_text: str,
    *,
    command: str = "",
    run_findings: Sequence[Finding] = (),
    doctor_findings: Sequence[Finding] = (),
    machine_feeds: bool = True,
) -> Diagnosis:
    """Join the log, the doctor and the run into ranked causes.

    Order: error before warning before info; within one severity, a cause with evidence
    from two sources (log + doctor) first, then the run's own evidence, then the log,
    then the doctor alone. A doctor finding that joins nothing is at most a warning: true
    of the machine, but nothing shows this run failed of it."""
    from shop_r1_doctor.knowledge import load_codes

    codes = load_codes()
    doctor = [f for f in doctor_findings if f.explained_by is None] if machine_feeds else []
    active = [f for f in doctor if f.severity in ("error", "warning")]
    text = strip_prefixes(log_text) if log_text else ""
    symptoms = [(s, m) for s in load_symptoms() if text and (m := s.pattern.search(text))]
    ruled_out = {sid for s, _ in symptoms for sid in s.rules_out}
    matches = list(diagnose_log(log_text, context=command).matches) if log_text else []
    matches = [m for m in matches if m.signature.id not in ruled_out]

    ranked: list[tuple[int, int, Cause]] = []  # (group, order, cause)
    used: set[str] = set()  # doctor codes folded into a joined cause

    def add(group: int, cause: Cause) -> None:
        ranked.append((group, len(ranked), cause))

    for s, m in symptoms:
        line = _log_line(text, m.start())
        explaining = next((f for f in active if f.code in (s.code, *s.explained_by)), None)
        if (
            explaining is not None
            and explaining.code == s.code
            and any(_explains_code(codes, rm.signature.code, s.code) for rm in matches)
        ):
            # The doctor shows the symptom itself and the log names what causes it: the
            # log's reading joins the finding below, as one cause.
            continue
        if explaining is not None:
            used.add(explaining.code)
            add(0, _joined(explaining, s.title, line))
        elif not any(
            rm.signature.code in s.explained_by and rm.match.line_no == line.line for rm in matches
        ):
            # Unexplained: the symptom's generic reading, unless the log scanner already
            # read the same line as one of its explanations (a hint), so that `report` and
            # the scanner lead with the same cause.
            own = codes[s.code]
            add(2, Cause(s.code, s.severity, s.title, own.fix, (line,), (s.source, *own.urls)))
    for rm in matches:
        sig = rm.signature
        line = EvidenceLine("log", rm.match.line, rm.match.line_no)
        why = tuple(EvidenceLine("log", w) for w in rm.why)
        explaining = next((f for f in active if _explains_code(codes, f.code, sig.code)), None)
        if explaining is not None:
            used.add(explaining.code)
            add(0, _joined(explaining, sig.title, line))
            continue
        # The other way round: the log names the cause (CUDA_VISIBLE_DEVICES hides the GPUs),
        # the doctor shows what it causes (torch sees no GPU although one is present).
        explained = next((f for f in active if _explains_code(codes, sig.code, f.code)), None)
        if explained is not None:
            used.add(explained.code)
            title = f"{sig.title} (the doctor: {explained.title})"
            add(
                0,
                Cause(
                    sig.code,
                    "error",
                    title,
                    sig.try_,
                    (line, *why, _doctor(explained)),
                    (sig.source,),
                    sig.also,
                ),
            )
            continue
        info = codes.get(sig.code)
        severity = _capped(rm, matches, rm.severity(info.severity if info else "error"), codes)
        add(
            2, Cause(sig.code, severity, sig.title, sig.try_, (line, *why), (sig.source,), sig.also)
        )
    for f in run_findings:
        detail = tuple(EvidenceLine("run", d.removeprefix("- ")) for d in _lines(f.detail))
        add(1, Cause(f.code, f.severity, f.title, f.fix, detail, f.urls))
    for f in doctor:
        if f.code not in used and f.severity != "info":
            # True of the machine, but neither the log nor the run shows that this run
            # failed of it: as a cause of this run, a guess (at most a warning).
            add(3, Cause(f.code, "warning", f.title, f.fix, (_doctor(f),), f.urls))
    ranked.sort(key=lambda r: (SEVERITIES.index(r[2].severity), r[0], r[1]))
    unique: dict[str, Cause] = {}
    for _, _, cause in ranked:
        unique.setdefault(cause.code, cause)
    kept = () if machine_feeds else tuple(doctor_findings)
    return Diagnosis(tuple(unique.values()), kept)


def _capped(rm: Any, matches: Sequence[Any], severity: Severity, codes: Any) -> Severity:
    """A generic reading (lower rank) of a line that a more specific reading also reads is
    stated no more surely than the specific one: the specific reading knows what the line
    leaves open (transformers' `requires accelerate>=1.1.0` is printed for an old
    accelerate and for none, so "not installed" at error level would claim what the
    specific reading, a hint, does not)."""
    line, rank = rm.match.line_no, rm.signature.rank
    for other in matches:
        if other.match.line_no == line and other.signature.rank > rank:
            info = codes.get(other.signature.code)
            theirs = other.severity(info.severity if info else "error")
            if SEVERITIES.index(theirs) > SEVERITIES.index(severity):
                severity = theirs
    return severity


def _explains_code(codes: Any, cause: str, effect: str) -> bool:
    """The code `cause` explains `effect`: the same code (one source shows the setting, the
    other the failure it caused) or one its codes.yaml entry `explains`."""
    info = codes.get(cause)
    return cause == effect or (info is not None and effect in info.explains)


def _joined(f: Finding, symptom: str, line: EvidenceLine) -> Cause:
    # The log shows the failure, the doctor shows the setting behind it: two independent
    # sources agree, so the joined cause is stated at error level.
    return Cause(
        f.code, "error", f"{f.title} (the log: {symptom})", f.fix, (line, _doctor(f)), f.urls
    )


def _doctor(f: Finding) -> EvidenceLine:
    return EvidenceLine("doctor", f"{f.title}", code=f.code)


def _log_line(text: str, pos: int) -> EvidenceLine:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start : end if end != -1 else len(text)].strip()[:300]
    return EvidenceLine("log", line, text.count("\n", 0, pos) + 1)


def _lines(detail: str) -> list[str]:
    return [ln.strip() for ln in detail.splitlines() if ln.strip().startswith("- ")]


def diagnosis_json(
    diagnosis: Diagnosis,
    *,
    outcome: dict[str, Any],
    doctor_findings: Sequence[Finding],
    doctor_error: str = "",
    log_from_this_machine: bool = True,
    report_path: str | None = None,
    hosts: bool = False,
    facts_from: str = "this machine",
) -> dict[str, Any]:
    """The `shop-r1.diagnosis/1` document, every string redacted as the report is."""
    from shop_r1_doctor.redact import redact_text

    doc = {
        "schema": DIAGNOSIS_SCHEMA,
        "run": outcome,
        "log_from_this_machine": log_from_this_machine,
        "causes": [c.to_json(i) for i, c in enumerate(diagnosis.causes, 1)],
        "doctor": {
            "error": doctor_error or None,
            "facts_from": facts_from,
            "findings": [f.to_json() for f in doctor_findings],
        },
        "report": report_path,
    }
    return _redact(doc, lambda s: redact_text(s, hosts=hosts))


def _redact(node: Any, fn: Any) -> Any:
    if isinstance(node, str):
        return fn(node)
    if isinstance(node, list):
        return [_redact(v, fn) for v in node]
    if isinstance(node, dict):
        return {k: _redact(v, fn) for k, v in node.items()}
    return node


__all__ = ["DIAGNOSIS_SCHEMA", "Cause", "Diagnosis", "load_symptoms", "rank_causes"]
