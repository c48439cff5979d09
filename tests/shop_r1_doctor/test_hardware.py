"""One hardware module: capabilities, arch lists in three spellings, one rule, GPU facts."""

from __future__ import annotations

import pytest

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.hardware import (
    Archs,
    archs_with_ptx,
    gpu_info,
    load_gpus,
    parse_arch_list,
    parse_cc,
    parse_gpus,
    parse_torch_archs,
)


@pytest.mark.parametrize(
    ("text", "cc"),
    [("9.0", (9, 0)), ("12.0", (12, 0)), ("10.0a", (10, 0)), ("9.0f", (9, 0)), ("9", None)],
)
def test_parse_cc(text, cc):
    assert parse_cc(text) == cc


@pytest.mark.parametrize(
    ("archs", "cc", "ok"),
    [
        (Archs(((8, 6),)), (8, 9), True),  # sm_86 code runs on Ada
        (Archs(((10, 0),)), (10, 3), True),  # B300 runs sm_100 code
        (Archs(((9, 0),)), (10, 0), False),  # other major: no
        (Archs(((8, 9),)), (8, 6), False),  # a newer minor never runs on an older one
        (Archs(((9, 0),), ((9, 0),)), (10, 0), True),  # PTX JIT to newer
        (Archs(((9, 0),), ((9, 0),)), (12, 0), True),
        (Archs(((8, 0), (9, 0)), ((9, 0),)), (7, 5), False),  # PTX never runs on older
    ],
)
def test_the_one_rule(archs, cc, ok):
    assert archs.runs_on(cc) is ok


def test_three_spellings_one_meaning():
    env = parse_arch_list("8.0;9.0+PTX")
    torch = parse_torch_archs(["sm_80", "sm_90", "compute_90"])
    row = archs_with_ptx([(8, 0), (9, 0)], ptx=True)
    assert env == torch == row == Archs(((8, 0), (9, 0)), ((9, 0),))
    assert env.text() == "8.0;9.0+PTX"
    assert parse_arch_list("8.0, 8.6 9.0a") == Archs(((8, 0), (8, 6), (9, 0)))


def test_ptx_belongs_to_its_own_arch():
    """`7.5+PTX;8.0` JITs for Hopper from compute_75; `8.0;9.0` has no PTX at all."""
    assert parse_arch_list("7.5+PTX;8.0").runs_on((9, 0))
    assert not parse_arch_list("8.0;9.0").runs_on((10, 0))
    # a row's ptx flag is the highest arch's PTX only
    assert archs_with_ptx([(7, 5), (8, 0)], ptx=True).ptx == ((8, 0),)


@pytest.mark.parametrize(
    ("name", "cc", "kind", "p2p"),
    [
        ("NVIDIA H100 80GB HBM3", (9, 0), "datacenter", None),
        ("NVIDIA H100 PCIe", (9, 0), "datacenter", None),
        ("NVIDIA H200", (9, 0), "datacenter", None),
        ("NVIDIA GH200 480GB", (9, 0), "datacenter", None),
        ("NVIDIA B200", (10, 0), "datacenter", None),
        ("NVIDIA GeForce RTX 5090", (12, 0), "consumer", False),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", (12, 0), "workstation", None),
        ("NVIDIA RTX 5000 Ada Generation", (8, 9), "workstation", None),
        ("NVIDIA GeForce RTX 4090", (8, 9), "consumer", False),
        ("NVIDIA L40S", (8, 9), "datacenter", None),
        ("NVIDIA L4", (8, 9), "datacenter", None),
        ("NVIDIA A10G", (8, 6), "datacenter", None),
        ("NVIDIA RTX A6000", (8, 6), "workstation", None),
        ("Tesla T4", (7, 5), "datacenter", None),
        ("Tesla P40", (6, 1), "datacenter", None),
    ],
)
def test_gpu_facts_by_name(name, cc, kind, p2p):
    info = gpu_info(name)
    assert info is not None and (info.cc, info.kind, info.p2p) == (cc, kind, p2p)


def test_peak_flops():
    assert gpu_info("NVIDIA H100 80GB HBM3").peak_flops() == 989e12
    assert gpu_info("NVIDIA H100 PCIe").peak_flops() == 756e12
    assert gpu_info("Tesla T4").peak_flops() == 65e12  # no bf16 tensor cores: fp16's
    assert gpu_info("NVIDIA GeForce RTX 5090").peak_flops() is None  # not recorded
    assert gpu_info("Some Future GPU") is None


def test_no_entry_is_shadowed_by_an_earlier_one():
    """First match wins: each pattern, as a GPU name, must find its own entry."""
    for entry in load_gpus():
        for pattern in entry.patterns:
            assert gpu_info(f"NVIDIA {pattern}") is entry, pattern


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"patterns": ["X"], "cc": "9", "kind": "datacenter", "memory_gb": 1}, "cc: not a compute"),
        (
            {"patterns": ["X"], "cc": "9.0", "kind": "gaming", "memory_gb": 1},
            "kind: expected one of datacenter, workstation, consumer, got 'gaming'",
        ),
        (
            {"patterns": "X", "cc": "9.0", "kind": "consumer", "memory_gb": 1},
            "patterns: expected a list of name substrings",
        ),
        (
            {"patterns": ["X"], "cc": "9.0", "kind": "consumer", "memory_gb": 1, "tflops": 1},
            "tflops: unknown field",
        ),
        ({"patterns": ["X"], "cc": "9.0", "kind": "consumer", "memory_gb": -1}, "memory_gb:"),
    ],
)
def test_bad_gpu_knowledge_names_entry_and_field(entry, message):
    with pytest.raises(ToolError, match=message) as err:
        parse_gpus({"schema": "shop-r1.gpus/1", "gpus": [entry]}, "gpus.yaml")
    assert "gpus.yaml: gpus[0]" in str(err.value)
