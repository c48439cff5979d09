"""Failures whose cause is the user's own code or data: no environment cause to name."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "user_bugs"
CASES = (
    FaultCase(
        FAMILY, "shape_mismatch", (), "a model head of the wrong input width (matmul shapes)"
    ),
    FaultCase(
        FAMILY,
        "map_missing_column",
        (),
        "Dataset.map with a function reading a column the dataset lacks",
    ),
    FaultCase(
        FAMILY,
        "reward_raises",
        (),
        "a reward function that indexes past the end of a list, called as TRL calls it",
    ),
    FaultCase(
        FAMILY,
        "data_file_missing",
        (),
        "load_dataset('json', data_files='data/train.jsonl') with no such file",
    ),
)


def shape_mismatch(work: Path) -> None:
    import torch

    head = torch.nn.Linear(128, 2)
    head(torch.randn(4, 64))


def map_missing_column(work: Path) -> None:
    from datasets import Dataset

    Dataset.from_list([{"prompt": "hi"}] * 4).map(lambda row: {"n": len(row["answer"])})


def reward_raises(work: Path) -> None:
    def reward(completions: list[str], **kwargs: object) -> list[float]:
        return [float(c.split()[3] == "buy") for c in completions]

    print(reward(["click buy now please", "search shoes"]))


def data_file_missing(work: Path) -> None:
    from datasets import load_dataset

    load_dataset("json", data_files="data/train.jsonl")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
