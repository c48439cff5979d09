"""One error shape for every YAML/JSON input: `FILE:LINE: FIELD: message` (schema.Reader).

A table: for each input kind (codes.yaml, compat.yaml, gpus.yaml, log_signatures.yaml, a
profile, a --plan file), one malformed file per error class (wrong type, missing field,
unknown field, value not allowed, YAML syntax). The expected line is found in the
malformed text itself (the line holding `locate`), not computed by the reader under test.
Profiles and plans go through the CLI (`profiles check --dir`, `doctor --plan`): exit 2
and the one line on the output.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from golden import GOLDEN
from repo_paths import ROOT
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.hardware import load_gpus
from shop_r1_doctor.knowledge import COMPAT_PATH, load_codes_file, load_compat_file
from shop_r1_doctor.logscan import load_signatures_file

CODES = """\
schema: shop-r1.codes/1
codes:
  A_B:
    severity: error
    subject: s
    trigger: t
    fix: f
    urls: [https://x.example]
"""

GPUS = """\
schema: shop-r1.gpus/1
gpus:
  - patterns: ["X1"]
    cc: "9.0"
    memory_gb: 80
    kind: datacenter
"""

SIGS = """\
schema: shop-r1.log-signatures/1
signatures:
  - id: a
    code: A_B
    pattern: 'boom'
    title: t
    try: t
    source: https://x.example
    example: it went boom
"""

PLAN = """\
schema: shop-r1.runplan/1
task: grpo
vllm_mode: server
bf16: true
"""

COMPAT = COMPAT_PATH.read_text(encoding="utf-8")
PROFILE = (ROOT / "profiles" / "hopper.yaml").read_text(encoding="utf-8")

SYNTAX = "field: [unclosed\n"

# kind, error class, base text, old, new, field, message fragment, locate (default: new)
CASES = [
    (
        "codes",
        "type",
        CODES,
        "urls: [https://x.example]",
        "urls: https://x.example",
        "codes.A_B.urls",
        "expected a list",
        None,
    ),
    ("codes", "missing", CODES, "    fix: f\n", "", "codes.A_B.fix", "missing", "  A_B:"),
    (
        "codes",
        "unknown",
        CODES,
        "    fix: f\n",
        "    fix: f\n    colour: red\n",
        "codes.A_B.colour",
        "unknown field",
        "colour",
    ),
    (
        "codes",
        "allowed",
        CODES,
        "severity: error",
        "severity: fatal",
        "codes.A_B.severity",
        "expected one of error, warning, info, got 'fatal'",
        None,
    ),
    (
        "compat",
        "type",
        COMPAT,
        '{cuda: "10.0",',
        "{cuda: 10.0,",
        "driver_min[0].cuda",
        "expected a string, got 10.0",
        None,
    ),
    (
        "compat",
        "missing",
        COMPAT,
        '{cuda: "10.0", linux:',
        "{linux:",
        "driver_min[0].cuda",
        "missing",
        '{linux: "410.48"',
    ),
    (
        "compat",
        "unknown",
        COMPAT,
        "\nhf_xet:",
        "\ncolour: red\nhf_xet:",
        "colour",
        "unknown field",
        "colour: red",
    ),
    (
        "compat",
        "allowed",
        COMPAT,
        "schema: shop-r1.compat/1",
        "schema: shop-r1.compat/9",
        "schema",
        "expected 'shop-r1.compat/1', got 'shop-r1.compat/9'",
        None,
    ),
    (
        "gpus",
        "type",
        GPUS,
        'cc: "9.0"',
        "cc: [9, 0]",
        "gpus[0].cc",
        "not a compute capability",
        None,
    ),
    (
        "gpus",
        "missing",
        GPUS,
        "    memory_gb: 80\n",
        "",
        "gpus[0].memory_gb",
        "missing",
        '  - patterns: ["X1"]',
    ),
    (
        "gpus",
        "unknown",
        GPUS,
        "    memory_gb: 80\n",
        "    memory_gb: 80\n    tflops: 1\n",
        "gpus[0].tflops",
        "unknown field",
        "tflops",
    ),
    (
        "gpus",
        "allowed",
        GPUS,
        "kind: datacenter",
        "kind: gaming",
        "gpus[0].kind",
        "expected one of datacenter, workstation, consumer, got 'gaming'",
        None,
    ),
    (
        "signatures",
        "type",
        SIGS,
        "    title: t\n",
        "    title: t\n    silent: maybe\n",
        "signatures[0].silent",
        "expected true/false, got 'maybe'",
        "silent",
    ),
    (
        "signatures",
        "missing",
        SIGS,
        "    title: t\n",
        "",
        "signatures[0].title",
        "missing",
        "  - id: a",
    ),
    (
        "signatures",
        "unknown",
        SIGS,
        "    title: t\n",
        "    title: t\n    colour: red\n",
        "signatures[0].colour",
        "unknown field",
        "colour",
    ),
    (
        "signatures",
        "allowed",
        SIGS,
        "code: A_B",
        "code: a_b",
        "signatures[0].code",
        "'a_b' is not an UPPER_SNAKE finding code",
        None,
    ),
    (
        "profile",
        "type",
        PROFILE,
        "  bf16: true",
        "  bf16: maybe",
        "match.bf16",
        "expected true/false, got 'maybe'",
        None,
    ),
    ("profile", "missing", PROFILE, "  variant: cu130\n", "", "torch.variant", "missing", "torch:"),
    (
        "profile",
        "unknown",
        PROFILE,
        "python: ",
        "colour: red\npython: ",
        "colour",
        "unknown field",
        None,
    ),
    (
        "profile",
        "allowed",
        PROFILE,
        "attention: flash_attention_2",
        "attention: flash",
        "attention",
        "expected one of flash_attention_2, flash_attention_3, sdpa, eager",
        None,
    ),
    ("plan", "type", PLAN, "bf16: true", "bf16: 1", "bf16", "expected true/false, got 1", None),
    (
        "plan",
        "missing",
        PLAN,
        "bf16: true",
        "model_shape: {params: 5}",
        "model_shape.layers",
        "missing",
        None,
    ),
    (
        "plan",
        "unknown",
        PLAN,
        "bf16: true",
        "modle: x",
        "modle",
        "unknown plan field; did you mean 'model'?",
        None,
    ),
    (
        "plan",
        "allowed",
        PLAN,
        "vllm_mode: server",
        "vllm_mode: remote",
        "vllm_mode",
        "expected one of server, colocate, got 'remote'",
        None,
    ),
]
KINDS = {
    "codes": CODES,
    "compat": COMPAT,
    "gpus": GPUS,
    "signatures": SIGS,
    "profile": PROFILE,
    "plan": PLAN,
}


def _write(tmp_path: Path, kind: str, text: str) -> Path:
    name = "hopper.yaml" if kind == "profile" else f"{kind}.yaml"
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(kind: str, path: Path, monkeypatch) -> tuple[str, int | None]:
    """The one error line for `path`, and the exit status where a command reads it."""
    if kind == "profile":  # the error boundary is the entry point's: run the real command
        cmd = [sys.executable, "-m", "shop_r1.cli", "profiles", "check", "--dir", str(path.parent)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return proc.stdout + proc.stderr, proc.returncode
    if kind == "plan":
        snap = str(GOLDEN / "h200x2-replayed.snapshot.json")
        result = CliRunner().invoke(app, ["doctor", "--plan", str(path), "--snapshot", snap])
        return result.output, result.exit_code
    if kind == "gpus":
        monkeypatch.setattr("shop_r1_doctor.hardware.GPUS_PATH", path)
        load_gpus.cache_clear()
    loader = {
        "codes": load_codes_file,
        "compat": load_compat_file,
        "gpus": lambda _p: load_gpus(),
        "signatures": load_signatures_file,
    }[kind]
    try:
        with pytest.raises(ToolError) as err:
            loader(path)
    finally:
        load_gpus.cache_clear()
    return str(err.value), None


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("kind", "cls", "base", "old", "new", "field", "message", "locate"),
    CASES,
    ids=[f"{c[0]}-{c[1]}" for c in CASES],
)
def test_one_error_shape(tmp_path, monkeypatch, kind, cls, base, old, new, field, message, locate):
    assert old in base, "the case no longer fits the base document"
    text = base.replace(old, new, 1)
    path = _write(tmp_path, kind, text)
    line = _line_of(text, locate or new.strip().splitlines()[0])
    output, status = _error(kind, path, monkeypatch)
    shape = re.compile(rf"^(shop-r1: error: )?{re.escape(str(path))}:{line}: {re.escape(field)}: ")
    hits = [ln for ln in output.splitlines() if shape.match(ln)]
    assert len(hits) == 1, output
    assert message in hits[0]
    if status is not None:
        assert status == 2, output


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_yaml_syntax_error_names_file_and_line(tmp_path, monkeypatch, kind):
    text = KINDS[kind] + SYNTAX
    path = _write(tmp_path, kind, text)
    output, status = _error(kind, path, monkeypatch)
    # the parser reports where the unclosed flow sequence ends (the end of the document)
    shape = re.compile(rf"^(shop-r1: error: )?{re.escape(str(path))}:\d+: not valid YAML")
    assert [ln for ln in output.splitlines() if shape.match(ln)], output
    if status is not None:
        assert status == 2, output
