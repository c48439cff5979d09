"""GPUs and torch facts shared by the decision rows of checks/torch_build.py
(tests/shop_r1_doctor/checks/test_torch_build_rows*.py)."""

from __future__ import annotations

A100 = {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
A6000 = {"name": "NVIDIA RTX A6000", "compute_capability": "8.6"}
H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
B200 = {"name": "NVIDIA B200", "compute_capability": "10.0"}
B300 = {"name": "NVIDIA B300", "compute_capability": "10.3"}
THOR = {"name": "NVIDIA Thor", "compute_capability": "11.0"}
RTX5090 = {"name": "NVIDIA GeForce RTX 5090", "compute_capability": "12.0"}
GB10 = {"name": "NVIDIA GB10", "compute_capability": "12.1"}
FUTURE = {"name": "NVIDIA Next", "compute_capability": "13.0"}
T4 = {"name": "Tesla T4", "compute_capability": "7.5"}
V100 = {"name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}
P100 = {"name": "Tesla P100-PCIE-16GB", "compute_capability": "6.0"}
NO_CC = {"name": "NVIDIA Mystery"}

WHL = "https://download.pytorch.org/whl"


def torch_facts(version: str, cuda: str | None = "absent", **kw) -> dict:
    t: dict = {"version": version, **kw}
    if cuda != "absent":
        t["cuda"] = cuda
    return t


def arch_listed(*names: str) -> dict:
    """A cu128 torch whose compiled arch list is `names`."""
    return torch_facts("2.9.0+cu128", "12.8", arch_list=list(names))


CU128 = torch_facts("2.9.0+cu128", "12.8")
CU130 = torch_facts("2.9.0+cu130", "13.0")
DS = {"deepspeed": {"version": "0.17.0"}}  # something that compiles CUDA ops
