"""The packages section typed: one record per dist by canonical name, NOT_PROBED fields."""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.packages import requirement_conflicts
from shop_r1_doctor.facts import NOT_PROBED, Facts, PackageFacts

LINUX = {"os": "linux", "arch": "x86_64", "python": {"version": "3.12.3"}}


@pytest.mark.parametrize(
    ("section", "installed", "record"),
    [
        (None, None, None),  # no packages probe ran
        ({"trl": {"version": "0.19.0"}}, None, None),  # it did not look for accelerate
        ({"accelerate": None}, False, None),  # looked: not installed
        ({"Accelerate": {"version": "1.8.0"}}, True, PackageFacts(version="1.8.0")),
        ({"accelerate": "1.8.0"}, None, None),  # odd input is unknown, never a crash
    ],
)
def test_a_dist(section, installed, record):
    facts = Facts({} if section is None else {"packages": section})
    assert facts.installed("accelerate") is installed
    assert facts.package("accelerate") == record


@pytest.mark.parametrize(
    ("record", "version", "requires"),
    [
        ({}, NOT_PROBED, NOT_PROBED),  # a pip list: names and versions only, or less
        ({"version": "1.8.0", "requires": []}, "1.8.0", ()),
        (
            {"version": 1.8, "requires": ["torch>=2.0", 3, "numpy"]},
            NOT_PROBED,
            ("torch>=2.0", "numpy"),
        ),
        ({"version": "1.8.0", "requires": "torch"}, "1.8.0", NOT_PROBED),
    ],
)
def test_a_field(record, version, requires):
    got = Facts({"packages": {"accelerate": record}}).package("accelerate")
    assert got == PackageFacts(version=version, requires=requires)


def test_one_reader_for_names():
    """The checks and the trainer ask through the same canonical table: flash_attn,
    Flash-Attn and flash-attn are one dist."""
    facts = Facts({"packages": {"Flash_Attn": {"version": "2.8.3"}}})
    assert facts.installed("flash-attn") is True
    assert str(facts.version("flash_attn")) == "2.8.3"
    assert list(facts.packages) == ["flash-attn"]


# trl needs accelerate: a packages section that does not list accelerate says nothing;
# one that looked and found none is a conflict.
@pytest.mark.parametrize(
    ("accelerate", "codes"),
    [
        ({}, []),
        ({"accelerate": None}, ["REQUIREMENT_CONFLICT"]),
        ({"accelerate": {"version": "0.20.0"}}, ["REQUIREMENT_CONFLICT"]),
        ({"accelerate": {"version": "1.8.0"}}, []),
    ],
)
def test_not_probed_and_absent_decide_differently(accelerate, codes):
    trl = {"version": "0.19.0", "requires": ["accelerate>=1.4.0"]}
    facts = Facts({"host": LINUX, "packages": {"trl": trl, **accelerate}})
    assert [f.code for f in requirement_conflicts(facts)] == codes
