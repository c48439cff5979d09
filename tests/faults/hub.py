"""The Hugging Face Hub cannot be reached, or the model id names nothing there or on disk."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "hub"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
CASES = (
    FaultCase(
        FAMILY,
        "offline_model",
        ("HF_HUB_UNREACHABLE",),
        f"HF_HUB_OFFLINE=1, empty cache: AutoModelForCausalLM.from_pretrained('{MODEL}')",
        env={"HF_HUB_OFFLINE": "1"},
    ),
    FaultCase(
        FAMILY,
        "no_network_tokenizer",
        ("HF_HUB_UNREACHABLE",),
        f"a network namespace with no interface up: AutoTokenizer.from_pretrained('{MODEL}')",
        no_network=True,
        live=False,
    ),
    FaultCase(
        FAMILY,
        "no_network_dataset",
        ("HF_HUB_UNREACHABLE",),
        "no network: datasets.load_dataset('trl-lib/Capybara')",
        no_network=True,
        live=False,
    ),
    FaultCase(
        FAMILY,
        "local_path_missing",
        ("MODEL_PATH_NOT_FOUND",),
        "from_pretrained('./checkpoints/sft-final') where no such directory exists",
        env={"HF_HUB_OFFLINE": "1"},
    ),
)


def offline_model(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(MODEL)


def no_network_tokenizer(work: Path) -> None:
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(MODEL)


def no_network_dataset(work: Path) -> None:
    from datasets import load_dataset

    load_dataset("trl-lib/Capybara", split="train")


def local_path_missing(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained("./checkpoints/sft-final")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
