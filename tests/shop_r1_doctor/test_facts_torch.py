"""The torch section's three states, typed: not probed, looked and absent, present."""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks._base import torch_is_cpu_build
from shop_r1_doctor.facts import NOT_PROBED, Facts, TorchFacts


@pytest.mark.parametrize(
    ("snapshot", "torch"),
    [
        ({}, NOT_PROBED),  # no torch probe ran
        ({"torch": None}, None),  # looked: torch is not installed
        ({"torch": "crash"}, NOT_PROBED),  # odd input is unknown, never a crash
        ({"torch": {"version": "2.6.0"}}, TorchFacts(version="2.6.0")),
    ],
)
def test_the_section(snapshot, torch):
    assert Facts(snapshot).torch == torch


@pytest.mark.parametrize(
    ("section", "cuda"),
    [
        ({"version": "2.6.0"}, NOT_PROBED),  # an older probe or a dump: not recorded
        ({"version": "2.6.0", "cuda": None}, None),  # torch.version.cuda said: none
        ({"version": "2.6.0", "cuda": "12.4"}, "12.4"),
        ({"version": "2.6.0", "cuda": 12.4}, NOT_PROBED),  # odd value: unknown
    ],
)
def test_a_field(section, cuda):
    t = Facts({"torch": section}).torch
    assert isinstance(t, TorchFacts) and t.cuda == cuda and t.version == "2.6.0"


@pytest.mark.parametrize(
    ("section", "cpu"),
    [
        ({"version": "2.6.0"}, None),  # cuda not recorded: the build is unknown
        ({"version": "2.6.0", "cuda": None}, True),
        ({"version": "2.6.0", "cuda": "12.4"}, False),
        ({"version": "2.6.0+rocm6.2", "cuda": None}, False),
        # a ROCm source build whose version carries no +rocm tag: the HIP version decides
        ({"version": "2.4.0a0+git1234abc", "cuda": None, "hip": "6.2.41133"}, False),
        ({"version": "2.4.0a0+git1234abc", "cuda": None, "hip": None}, True),
    ],
)
def test_not_probed_and_absent_decide_differently(section, cpu):
    assert torch_is_cpu_build(Facts({"torch": section})) is cpu
