"""TRL / transformers refuse a configuration before training starts."""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "trainer_config"
CASES = (
    FaultCase(
        FAMILY,
        "grpo_batch_not_divisible",
        ("TRL_GRPO_BATCH_NOT_DIVISIBLE",),
        "GRPOConfig(per_device_train_batch_size=3, num_generations=2)",
    ),
    FaultCase(
        FAMILY,
        "grpo_one_generation",
        ("TRL_GRPO_BATCH_NOT_DIVISIBLE",),
        "GRPOConfig(num_generations=1)",
    ),
    FaultCase(
        FAMILY,
        "bf16_on_cpu",
        ("MIXED_PRECISION_NEEDS_GPU",),
        "SFTConfig's default bf16=True on a machine without a GPU",
    ),
)


def grpo_batch_not_divisible(work: Path) -> None:
    from trl import GRPOConfig

    GRPOConfig(output_dir=str(work), bf16=False, per_device_train_batch_size=3, num_generations=2)


def grpo_one_generation(work: Path) -> None:
    from trl import GRPOConfig

    GRPOConfig(output_dir=str(work), bf16=False, num_generations=1)


def bf16_on_cpu(work: Path) -> None:
    from trl import SFTConfig

    SFTConfig(output_dir=str(work))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
