"""How much of what the frameworks print about their environment the log signatures read.

    python benchmarks/signature_coverage.py [--json] [--uncovered N] [--package PKG]
        [--likely-only] [--rev REV]   # REV: measure that commit's log_signatures.yaml

Every message kept in shop_r1_doctor/knowledge/framework_messages/ (the raise, warning and
log sites of the stack, extracted by scripts/extract_messages.py) whose family is one the
doctor diagnoses (ENV_FAMILIES) is rendered the way a log would show it: its exception
class in front for a raise, each `{}` filled with a plausible value (a port after "port",
a version after "version", a number, a device, a path). It is covered when a signature of
knowledge/log_signatures.yaml finds it (its pattern in one of those renderings, or the
whole message in the signature's own example line), or a symptom of
knowledge/log_symptoms.yaml does (a message read as a hint in `run` / `report`, such as
c10d's rendezvous timeout; with --rev, this checkout's symptoms).

Figures printed: coverage per family and per package, over all of those messages and over
the likely ones (a raise/error, naming an environment fact, not reading as the caller's
own bug: `likely`), then the uncovered messages ranked by `score` (how likely a user meets
one and the doctor has something to say about it). The message families are keyword
lists, so many kept messages are the caller's own bug or internal checks: the likely
subset is the figure that says whether the environment failures are covered.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from shop_r1_doctor.causes import Symptom, load_symptoms  # noqa: E402
from shop_r1_doctor.framework_messages import (  # noqa: E402
    MESSAGES_DIR,
    PLACEHOLDER,
    FrameworkMessage,
    kept_versions,
    load_messages,
)
from shop_r1_doctor.logscan import (  # noqa: E402
    Signature,
    load_signatures,
    load_signatures_file,
)

# The families the doctor diagnoses (knowledge/message_families.yaml): the environment's
# causes. Not launch/paths/tokenizer/numerics/precision alone: those are mostly the
# caller's configuration or data.
ENV_FAMILIES = (
    "install",
    "gpu",
    "distributed",
    "memory",
    "disk",
    "shm",
    "network",
    "hub",
    "compiler",
    "platform",
)

# A message that names one of these is about the machine, not about the caller's values.
ENV_FACT = re.compile(
    r"(?i)not installed|pip install|No module named|is not available|not available|"
    r"cannot open shared object|undefined symbol|compiled (?:with|against|using)|"
    r"not compiled with|built (?:with|without|for)|\bABI\b|binary incompatib|NumPy 1\.x|"
    r"\bCUDA\b|\bdriver\b|\bGPUs?\b|compute capability|kernel image|\bsm_?\d|\bNCCL\b|"
    r"\bcudnn|\bcublas|libcuda|CUDA_HOME|\bnvcc\b|CUDA_VISIBLE_DEVICES|"
    r"out of memory|\bOOM\b|No space left|disk|shared memory|/dev/shm|\bshm\b|bus error|"
    r"address already in use|\bport\b|refused|timed? ?out|unreachable|connect|socket|"
    r"\bHub\b|huggingface\.co|gated|\btoken\b|offline|HF_HUB_OFFLINE|proxy|SSL|"
    r"compiler|\btriton\b|inductor|\bg\+\+|toolkit|Windows|\bWSL|Long Path|\blibuv\b|"
    r"\bRay\b|\bGCS\b|raylet|object store|\bvLLM\b|KV cache|cache blocks|gpu_memory_utilization"
)
# A message that reads as the caller's own bug (a bad argument, a shape, a type) or an
# internal invariant: the doctor has no environment cause to name for it.
USER_BUG = re.compile(
    r"(?i)\bshape|\bdims?\b|dimension|\bdtype|argument|\bargs?\b|kwargs?|\bmust be\b|"
    r"\bshould be\b|expected .{0,40}\bgot\b|\bgot\b|\binvalid\b|unexpected|not supported for|"
    r"does not support|only supports? (?!Ampere)|\btensor\b|\bmodule\b(?! named)|\bgraph\b|"
    r"\bnode\b|\bop(?:erator)?s?\b|\bindex\b|\bkey\b|\btype\b|\bdeprecat|\bwill be removed|"
    r"internal|\bbug\b|not implemented|NotImplemented|unsupported|\bparam(?:eter)?s?\b|"
    r"\bconfig\b|\bcallable\b|\bfunction\b|\bmethod\b|\bclass\b|\battribute\b"
)
# Raise sites, C++ checks and error logs stop a run; warnings mostly do not.
KIND_WEIGHT = {
    "raise": 3,
    "TORCH_CHECK": 3,
    "log error": 3,
    "log exception": 3,
    "exception": 3,
    "binary string": 2,  # a compiled library's format: its errors (NCCL WARN, c10 checks)
    "assert": 1,
    "log warning": 1,
    "log warning_once": 1,
    "log warn": 1,
    "warn": 1,
    "print": 1,
    "stderr": 1,
}
# Values a log shows where the framework formats one in, by the text just before it.
_CONTEXT_FILLS = (
    (re.compile(r"(?i)port\W{0,3}$"), "29500"),
    (re.compile(r"(?i)(?:version|v|>=|<=|==|[<>])\W{0,3}$"), "2.1.0"),
    (re.compile(r"(?i)sm_?$|capability\W{0,3}$"), "8.0"),
    (re.compile(r"(?i)(?:rank|device|gpu|cuda)\W{0,3}$"), "0"),
    (re.compile(r"(?i)(?:path|file|directory|folder|at|in)\W{0,3}$"), "/tmp/x"),
)
_DEFAULT_FILLS = ("1", "cuda:0", "x")


def _kind(msg: FrameworkMessage) -> str:
    if msg.kind.startswith(("raise", "assert")):
        return msg.kind.split()[0]
    return msg.kind


def _renderings(msg: FrameworkMessage) -> list[str]:
    """The message as a log could show it: each `{}` filled, its exception class first."""
    pieces = msg.text.split(PLACEHOLDER)
    out = []
    for default in _DEFAULT_FILLS:
        text = pieces[0]
        for piece in pieces[1:]:
            fill = next((v for rx, v in _CONTEXT_FILLS if rx.search(text[-24:])), default)
            text += fill + piece
        out.append(text)
    if msg.kind.startswith("raise ") and len(msg.kind.split()) == 2:
        exc = msg.kind.split()[1].rsplit(".", 1)[-1]
        out += [f"{exc}: {t.strip()}" for t in out]
    return out


def readers(msg: FrameworkMessage, signatures: Iterable[Signature | Symptom]) -> list[str]:
    """Ids of the signatures that read `msg` (the `when`/`unless` evidence is the log's,
    not the message's: left out here)."""
    texts = _renderings(msg)
    # Not `read_by`'s first-part rule (`heads`): a signature whose example starts like
    # a message would count every message sharing that start.
    return [
        s.id
        for s in signatures
        if any(s.pattern.search(t) for t in texts) or msg.regex.search(s.example)
    ]


def score(msg: FrameworkMessage) -> int:
    """How likely users meet this message as the cause of a failed run: stopping kinds
    first, then messages naming an environment fact, less when it reads as a caller's bug."""
    s = KIND_WEIGHT.get(_kind(msg), 1) * 2
    s += 3 * min(2, len(ENV_FACT.findall(msg.text)))
    s -= 3 * min(2, len(USER_BUG.findall(msg.text)))
    return s


def likely(msg: FrameworkMessage) -> bool:
    """Stops a run (raise, check, error log, a library's error format), names an
    environment fact and does not read as the caller's bug."""
    return (
        KIND_WEIGHT.get(_kind(msg), 1) >= 2
        and ENV_FACT.search(msg.text) is not None
        and USER_BUG.search(msg.text) is None
    )


@dataclass
class Row:
    msg: FrameworkMessage
    families: tuple[str, ...]
    readers: list[str]

    @property
    def covered(self) -> bool:
        return bool(self.readers)


def env_messages() -> list[tuple[FrameworkMessage, tuple[str, ...]]]:
    """(message, its environment families) for every kept message in one."""
    out = []
    for package, version in kept_versions().items():
        path = MESSAGES_DIR / f"{package}-{version}.jsonl"
        with path.open(encoding="utf-8") as fh:
            families = [json.loads(line).get("families", []) for line in fh]
        for msg, fams in zip(load_messages(package, version), families, strict=True):
            env = tuple(f for f in fams if f in ENV_FAMILIES)
            if env:
                out.append((msg, env))
    return out


def measure(
    signatures: tuple[Signature, ...] | None = None,
    symptoms: tuple[Symptom, ...] | None = None,
) -> list[Row]:
    sigs = signatures if signatures is not None else load_signatures()
    known: tuple[Signature | Symptom, ...] = (
        *sigs,
        *(symptoms if symptoms is not None else load_symptoms()),
    )
    return [Row(m, fams, readers(m, known)) for m, fams in env_messages()]


def _figure(rows: list[Row]) -> dict[str, Any]:
    n = len(rows)
    c = sum(r.covered for r in rows)
    return {"messages": n, "covered": c, "coverage": round(c / n, 4) if n else None}


def summary(rows: list[Row], signatures: int) -> dict[str, Any]:
    by_family: dict[str, list[Row]] = defaultdict(list)
    by_package: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        for f in r.families:
            by_family[f].append(r)
        by_package[r.msg.package].append(r)
    like = [r for r in rows if likely(r.msg)]

    def both(group: list[Row]) -> dict[str, Any]:
        return {"all": _figure(group), "likely": _figure([r for r in group if likely(r.msg)])}

    return {
        "schema": "shop-r1.signature-coverage/1",
        "commit": _commit(),
        "env_families": list(ENV_FAMILIES),
        "signatures": signatures,
        "all": _figure(rows),
        "likely": _figure(like),
        "by_family": {f: both(by_family[f]) for f in ENV_FAMILIES if by_family[f]},
        "by_package": {p: both(g) for p, g in sorted(by_package.items())},
    }


def _commit() -> str | None:
    """The checkout's commit, `+dirty` when log_signatures.yaml has uncommitted edits."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "shop_r1_doctor/knowledge"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return (head + ("+dirty" if dirty else "")) or None


def _signatures_at(rev: str) -> tuple[Signature, ...]:
    """log_signatures.yaml as of commit `rev` (the framework messages stay this checkout's)."""
    text = subprocess.run(
        ["git", "show", f"{rev}:shop_r1_doctor/knowledge/log_signatures.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log_signatures.yaml"
        path.write_text(text, encoding="utf-8")
        return load_signatures_file(path)


def ranked_uncovered(rows: list[Row]) -> list[Row]:
    return sorted(
        (r for r in rows if not r.covered),
        key=lambda r: (-score(r.msg), r.msg.package, r.msg.at),
    )


def _pct(fig: dict[str, Any]) -> str:
    if not fig["messages"]:
        return "-"
    return f"{100 * fig['coverage']:5.1f}% ({fig['covered']}/{fig['messages']})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--uncovered", type=int, default=40, help="how many uncovered to list")
    ap.add_argument("--package", help="list only this package's uncovered messages")
    ap.add_argument("--likely-only", action="store_true", help="list only likely messages")
    ap.add_argument("--rev", help="measure the signatures of this git commit instead")
    args = ap.parse_args(argv)
    sigs = load_signatures() if args.rev is None else _signatures_at(args.rev)
    rows = measure(sigs)
    figs = summary(rows, len(sigs))
    if args.rev is not None:
        figs["commit"] = args.rev
    if args.json:
        print(json.dumps(figs, indent=2))
        return 0
    print(
        f"{figs['signatures']} signatures; environment messages: all {_pct(figs['all'])}, "
        f"likely {_pct(figs['likely'])}\n"
    )
    print(f"{'family':<14}{'all':>24}{'likely':>24}")
    for f, g in figs["by_family"].items():
        print(f"{f:<14}{_pct(g['all']):>24}{_pct(g['likely']):>24}")
    print(f"\n{'package':<18}{'all':>24}{'likely':>24}")
    for p, g in figs["by_package"].items():
        print(f"{p:<18}{_pct(g['all']):>24}{_pct(g['likely']):>24}")
    todo = [
        r
        for r in ranked_uncovered(rows)
        if (args.package in (None, r.msg.package)) and (not args.likely_only or likely(r.msg))
    ]
    print(f"\nuncovered, most likely met first ({len(todo)}):")
    for r in todo[: args.uncovered]:
        m = r.msg
        text = " ".join(m.text.split())[:150]
        print(f"{score(m):3d} {m.package} {m.at} [{m.kind}] {','.join(r.families)}: {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
