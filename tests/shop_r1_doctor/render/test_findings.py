"""The one findings renderer (render/findings.py): the block every command prints, its
marks per console encoding, its colour rule, its redaction, and the `--json` serializer.
Wording lives in tests/fixtures/golden/findings/; the rows here assert codes, severities
and what must never be shown."""

from __future__ import annotations

import io
import json

import pytest
from golden import GOLDEN, finding_blocks

from shop_r1_doctor.api import finding_json, render_finding
from shop_r1_doctor.diagnose import Diagnosis
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.render import findings as rf
from shop_r1_doctor.render.json import render_json
from shop_r1_doctor.render.terminal import render_terminal

FLASH = Finding(
    "FA_TORCH_ABI_UNDEFINED_SYMBOL",
    "error",
    "flash-attn 2.8.3 was built against another torch (undefined symbol: _ZN3c10)",
    detail="The plan asks attn_implementation=flash_attention_2.\nimport fails in a child",
    fix="pip install --no-build-isolation --force-reinstall flash-attn==2.8.3",
    urls=("https://github.com/Dao-AILab/flash-attention/issues/1832",),
    subject="flash-attn",
)
SYMPTOM = Finding(
    "VLLM_IMPORT_FAILED",
    "error",
    "vllm 0.11.0 does not import",
    fix="fix flash-attn first",
    urls=("https://example.org/a", "https://example.org/b"),
    subject="vllm",
    explained_by="FA_TORCH_ABI_UNDEFINED_SYMBOL",
)
HINT = Finding("HF_XET_DOWNLOAD_STALL", "info", "hf-xet 1.1.0 can stall downloads", subject="hub")


def _blocks(encoding="utf-8", verbose=False):
    return "".join(
        render_finding(f, stream=_Stream(encoding), verbose=verbose, note=note)
        for f, note in ((FLASH, ""), (SYMPTOM, "ignored"), (HINT, ""))
    )


class _Stream(io.StringIO):
    def __init__(self, encoding="utf-8", tty=False):
        super().__init__()
        self._encoding, self._tty = encoding, tty

    @property
    def encoding(self):  # type: ignore[override]
        return self._encoding

    def isatty(self):
        return self._tty


def test_blocks_golden(golden):
    golden(GOLDEN / "findings" / "blocks.txt", _blocks())


def test_blocks_ascii_and_verbose_golden(golden):
    text = _blocks("cp1252", verbose=True)
    text.encode("cp1252")
    golden(GOLDEN / "findings" / "blocks-ascii-verbose.txt", text)


def test_blocks_carry_code_severity_and_note():
    parsed = finding_blocks(_blocks())
    assert [(sev, code) for sev, code, _ in parsed] == [
        ("error", "FA_TORCH_ABI_UNDEFINED_SYMBOL"),
        ("error", "VLLM_IMPORT_FAILED"),
        ("info", "HF_XET_DOWNLOAD_STALL"),
    ]
    assert parsed[1][2].splitlines()[0].endswith("[VLLM_IMPORT_FAILED] (ignored)")
    # one source unless verbose, all of them when verbose
    assert parsed[1][2].count("https://example.org/") == 1
    assert finding_blocks(_blocks(verbose=True))[1][2].count("https://example.org/") == 2


def test_doctor_report_prints_the_same_block_indented():
    diagnosis = Diagnosis({"probes": {}}, findings=[FLASH, SYMPTOM, HINT])
    report = render_terminal(diagnosis)
    for f in (FLASH, SYMPTOM, HINT):
        block = "".join(f"    {line}\n" for line in render_finding(f).splitlines())
        assert block in report, f.code


@pytest.mark.parametrize(
    ("tty", "no_color", "colored"), [(True, "", True), (True, "1", False), (False, "", False)]
)
def test_colour_only_on_a_terminal_without_no_color(monkeypatch, tty, no_color, colored):
    monkeypatch.setenv("NO_COLOR", no_color)
    text = render_finding(FLASH, stream=_Stream(tty=tty))
    assert ("\x1b[31m✗\x1b[0m " in text) is colored
    assert text.count("\x1b[") == (2 if colored else 0)  # the mark only, never the text


# A fake token of the Hub's shape, built so that no scanner reads a real one here.
FAKE_HF = "hf_" + "FAKE" + "0" * 30
FAKE_WANDB = "0123456789abcdef" * 2 + "FAKE0000"

LEAKY = Finding(
    "HF_GATED_REPO_NO_TOKEN",
    "error",
    f"the Hub refused {FAKE_HF} from /home/alice/.cache",
    detail=f"WANDB_API_KEY={FAKE_WANDB} in /home/alice/.env",
    fix=f"huggingface-cli login --token {FAKE_HF}",
    urls=("https://user:hunter2secret@example.org/x",),
)


def _assert_clean(shown: str) -> None:
    assert "/home/alice" not in shown and "~/.cache" in shown and "~/.env" in shown
    for secret in (FAKE_HF, "hf_FAKE", FAKE_WANDB, "0123456789abcdef", "hunter2secret"):
        assert secret not in shown, (secret, shown)


def test_home_and_secrets_never_shown(monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")
    _assert_clean(render_finding(LEAKY))
    _assert_clean(json.dumps(finding_json(LEAKY)))


def test_doctor_json_carries_the_one_serializer(monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")
    doc = json.loads(render_json(Diagnosis({"probes": {}}, findings=[LEAKY, HINT])))
    assert doc["findings"] == [finding_json(LEAKY), finding_json(HINT)]
    _assert_clean(json.dumps(doc["findings"]))


def test_json_serializer_is_the_findings_contract():
    doc = finding_json(SYMPTOM)
    assert doc == {
        "code": "VLLM_IMPORT_FAILED",
        "severity": "error",
        "title": "vllm 0.11.0 does not import",
        "detail": "",
        "fix": "fix flash-attn first",
        "urls": ["https://example.org/a", "https://example.org/b"],
        "subject": "vllm",
        "explained_by": "FA_TORCH_ABI_UNDEFINED_SYMBOL",
    }
    assert "explained_by" not in finding_json(HINT)


@pytest.mark.parametrize("encoding", ["gbk", "cp1252", "ascii", "no-such-codec"])
def test_any_console_encoding(encoding):
    odd = Finding("X_Y", "warning", "needs ≥ 2 × 40 GiB → fails", fix="résumé ✓")
    text = render_finding(odd, stream=_Stream(encoding))
    assert finding_blocks(text)[0][:2] == ("warning", "X_Y")
    if encoding != "no-such-codec":
        text.encode(encoding)
    assert rf.symbols_for(encoding) is rf.ASCII
