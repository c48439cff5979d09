"""GPUs and torch facts shared by the decision rows of checks/torch_build.py
(tests/shop_r1_doctor/checks/test_torch_build_rows.py) and the vLLM and flash-attn rows,
built from the typed models (tests/snapshots.py) into the snapshot's JSON shape."""

from __future__ import annotations

from typing import Any

from snapshots import plain, torch

from shop_r1_doctor.facts import GpuFacts, PackageFacts


def card(name: str, cc: str | None = None) -> dict:
    """A GPU named by the probe with its compute capability, nothing else recorded."""
    return plain(GpuFacts(name=name, compute_capability=cc) if cc else GpuFacts(name=name))


A100 = card("NVIDIA A100-SXM4-80GB", "8.0")
A6000 = card("NVIDIA RTX A6000", "8.6")
H100 = card("NVIDIA H100 80GB HBM3", "9.0")
B200 = card("NVIDIA B200", "10.0")
B300 = card("NVIDIA B300", "10.3")
THOR = card("NVIDIA Thor", "11.0")
RTX5090 = card("NVIDIA GeForce RTX 5090", "12.0")
GB10 = card("NVIDIA GB10", "12.1")
FUTURE = card("NVIDIA Next", "13.0")
T4 = card("Tesla T4", "7.5")
V100 = card("Tesla V100-SXM2-32GB", "7.0")
P100 = card("Tesla P100-PCIE-16GB", "6.0")
NO_CC = card("NVIDIA Mystery")

WHL = "https://download.pytorch.org/whl"


def torch_facts(version: str, cuda: str | None = "absent", **kw: Any) -> dict:
    """torch's section; `cuda` left out is unprobed, None is a build without CUDA."""
    return plain(torch(version, **kw) if cuda == "absent" else torch(version, cuda=cuda, **kw))


def arch_listed(*names: str) -> dict:
    """A cu128 torch whose compiled arch list is `names`."""
    return torch_facts("2.9.0+cu128", "12.8", arch_list=list(names))


CU128 = torch_facts("2.9.0+cu128", "12.8")
CU130 = torch_facts("2.9.0+cu130", "13.0")
DS = {"deepspeed": plain(PackageFacts(version="0.17.0"))}  # something that compiles CUDA ops
