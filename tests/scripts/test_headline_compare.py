"""`benchmarks/headline.py`'s comparison, read on a real H100 result folder: each measured
figure is printed beside the README's (benchmarks/headline.yaml) with their ratio."""

from __future__ import annotations

import re

from repo_paths import ROOT, load_script

headline = load_script("benchmarks/headline.py")

RESULTS = ROOT / "benchmarks" / "results" / "h100_headline_5374f39"


def _row(text: str, prefix: str) -> list[str]:
    line = next(li for li in text.splitlines() if li.startswith(prefix))
    return re.split(r"\s{2,}", line.strip())


def test_grpo_rows_find_the_readme_figure_of_each_generation() -> None:
    text = headline.compare(RESULTS / "grpo", "5374f39")
    vllm = _row(text, "GRPO 0.5b vllm colocate")
    assert vllm[2:5] == ["3.77", "3.77", "1.00"]  # measured, README, ratio
    assert _row(text, "GRPO 0.5b transformers")[2:5] == ["11.47", "11.47", "1.00"]
    assert "vLLM / transformers per step: 3.04x" in text


def test_sft_rows_print_the_speedup_over_trl_defaults() -> None:
    text = headline.compare(RESULTS, "5374f39")
    assert _row(text, "SFT 1.5b auto-packed")[2:5] == ["40,432", "40432", "1.00"]
    assert "auto-packed / trl-default: 4.13x, real MFU 43.4%" in text
