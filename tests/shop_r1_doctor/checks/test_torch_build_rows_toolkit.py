"""Decision rows for the CUDA toolkit against torch and the GPUs
(shop_r1_doctor/checks/torch_build.py: `cuda_toolkit`).

Expectations by hand from knowledge/compat.yaml: nvcc needed for the GPU's arch: cc >= 9.0
-> 11.8, cc >= 10.0 -> 12.8; a major mismatch with torch's CUDA matters (warning) only when
something will compile CUDA code (deepspeed, apex, a flash-attn build), else info."""

from __future__ import annotations

import pytest
from torch_build_facts import (
    A100,
    B200,
    CU128,
    CU130,
    DS,
    H100,
    NO_CC,
    torch_facts,
)

from shop_r1_doctor.checks.torch_build import cuda_toolkit
from shop_r1_doctor.facts import Facts

# ----------------------------------------------------------------- nvcc vs torch and the GPUs


# (case, cuda_toolkit, torch, packages, plan, gpus, expected [(code, severity, title)])
def _mismatch(sev: str, nvcc: str = "/usr/local/cuda/bin/nvcc") -> tuple[str, str, str]:
    return (
        "CUDA_TOOLKIT_TORCH_MISMATCH_BUILD",
        sev,
        f"nvcc 12.4 ({nvcc}) vs torch 2.9.0+cu130 built with CUDA 13.0",
    )


NVCC = "/usr/local/cuda/bin/nvcc"
TK_124 = {"nvcc_version": "12.4", "nvcc": NVCC, "cuda_home": "/usr/local/cuda"}
TOOLKIT_ROWS = [
    (
        "nvcc 12.4, torch cu130, nothing to build",
        TK_124,
        CU130,
        {},
        {},
        [A100],
        [_mismatch("info")],
    ),
    ("same major", TK_124, CU128, {}, {}, [A100], []),
    ("deepspeed builds ops", TK_124, CU130, DS, {}, [A100], [_mismatch("warning")]),
    (
        "apex builds",
        TK_124,
        CU130,
        {"apex": {"version": "0.1"}},
        {},
        [A100],
        [_mismatch("warning")],
    ),
    ("deepspeed absent", TK_124, CU130, {"deepspeed": None}, {}, [A100], [_mismatch("info")]),
    (
        "flash-attn wanted, not installed: a build",
        TK_124,
        CU130,
        {"flash-attn": None},
        {"attn_implementation": "flash_attention_2"},
        [A100],
        [_mismatch("warning")],
    ),
    (
        "flash-attn wanted and installed",
        TK_124,
        CU130,
        {"flash-attn": {"version": "2.8.3"}},
        {"attn_implementation": "flash_attention_2"},
        [A100],
        [_mismatch("info")],
    ),
    (
        "flash-attn not looked for",
        TK_124,
        CU130,
        {},
        {"attn_implementation": "flash_attention_2"},
        [A100],
        [_mismatch("info")],
    ),
    (
        "sdpa needs no build",
        TK_124,
        CU130,
        {"flash-attn": None},
        {"attn_implementation": "sdpa"},
        [A100],
        [_mismatch("info")],
    ),
    (
        "nvcc path unknown",
        {"nvcc_version": "12.4"},
        CU130,
        {},
        {},
        [A100],
        [_mismatch("info", "on PATH")],
    ),
    ("torch CUDA unknown", TK_124, torch_facts("2.9.0"), {}, {}, [A100], []),
    # nvcc too old for the newest GPU (only when something builds)
    (
        "nvcc 12.6 for a B200",
        {"nvcc_version": "12.6"},
        CU128,
        DS,
        {},
        [A100, B200],
        [
            (
                "NVCC_TOO_OLD_FOR_ARCH",
                "warning",
                "nvcc 12.6 cannot compile for cc 10.0 (needs CUDA >= 12.8)",
            )
        ],
    ),
    ("nvcc 12.8 for a B200: at the line", {"nvcc_version": "12.8"}, CU128, DS, {}, [B200], []),
    ("nvcc 12.6 for a B200, no build", {"nvcc_version": "12.6"}, CU128, {}, {}, [B200], []),
    (
        "nvcc 11.7 for an H100",
        {"nvcc_version": "11.7"},
        torch_facts("2.0.0+cu117", "11.7"),
        DS,
        {},
        [H100],
        [
            (
                "NVCC_TOO_OLD_FOR_ARCH",
                "warning",
                "nvcc 11.7 cannot compile for cc 9.0 (needs CUDA >= 11.8)",
            )
        ],
    ),
    (
        "nvcc 11.8 for an H100",
        {"nvcc_version": "11.8"},
        torch_facts("2.0.0+cu118", "11.8"),
        DS,
        {},
        [H100],
        [],
    ),
    (
        "no row below Hopper",
        {"nvcc_version": "11.0"},
        torch_facts("2.0.0+cu110", "11.0"),
        DS,
        {},
        [A100],
        [],
    ),
    (
        "cc unknown",
        {"nvcc_version": "11.0"},
        torch_facts("2.0.0+cu110", "11.0"),
        DS,
        {},
        [NO_CC],
        [],
    ),
    # several nvcc on PATH
    (
        "two nvcc in two dirs",
        {"nvcc_on_path": ["/usr/local/cuda-12.8/bin/nvcc", 5, "/usr/bin/nvcc"]},
        None,
        {},
        {},
        [],
        [
            (
                "NVCC_MULTIPLE_ON_PATH",
                "info",
                "2 nvcc on PATH; builds use /usr/local/cuda-12.8/bin/nvcc",
            )
        ],
    ),
    (
        "the same dir twice",
        {"nvcc_on_path": ["/usr/bin/nvcc", "/usr/bin/nvcc"]},
        None,
        {},
        {},
        [],
        [],
    ),
    # deepspeed without any toolkit
    (
        "deepspeed, no toolkit",
        {"cuda_home": None, "nvcc": None, "nvcc_on_path": []},
        None,
        DS,
        {},
        [],
        [
            (
                "CUDA_HOME_MISSING_DEEPSPEED",
                "error",
                "deepspeed 0.17.0 is installed but there is no CUDA toolkit (CUDA_HOME unset, no nvcc)",
            )
        ],
    ),
    (
        "no toolkit, no deepspeed",
        {"cuda_home": None, "nvcc": None},
        None,
        {"deepspeed": None},
        {},
        [],
        [],
    ),
    ("CUDA_HOME not looked at", {"nvcc": None}, None, DS, {}, [], []),
    ("nvcc not looked at", {"cuda_home": None}, None, DS, {}, [], []),
    ("CUDA_HOME set", {"cuda_home": "/usr/local/cuda", "nvcc": None}, None, DS, {}, [], []),
    ("nvcc found", {"cuda_home": None, "nvcc": NVCC}, None, DS, {}, [], []),
    (
        "nvcc on PATH",
        {"cuda_home": None, "nvcc": None, "nvcc_on_path": [NVCC]},
        None,
        DS,
        {},
        [],
        [],
    ),
    (
        "a version alone",
        {"cuda_home": None, "nvcc": None, "nvcc_version": "12.8"},
        None,
        DS,
        {},
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    ("case", "tk", "torch", "pkgs", "plan", "gpus", "want"),
    TOOLKIT_ROWS,
    ids=[r[0] for r in TOOLKIT_ROWS],
)
def test_cuda_toolkit_row(case, tk, torch, pkgs, plan, gpus, want):
    snap = {"cuda_toolkit": tk, "packages": pkgs, "plan": plan, "gpus": gpus}
    if torch is not None:
        snap["torch"] = torch
    found = list(cuda_toolkit(Facts(snap)))
    assert [(f.code, f.severity, f.title) for f in found] == want
    assert all(f.detail for f in found)
    # a fix wherever the finding has a single remedy to offer
    assert all(f.fix for f in found if f.code.startswith(("CUDA_TOOLKIT", "NVCC_TOO_OLD")))


def test_toolkit_fixes_name_the_versions():
    snap = {"cuda_toolkit": TK_124, "torch": CU130, "packages": DS, "gpus": [B200]}
    found = list(cuda_toolkit(Facts(snap)))
    assert [f.code for f in found] == ["CUDA_TOOLKIT_TORCH_MISMATCH_BUILD", "NVCC_TOO_OLD_FOR_ARCH"]
    assert found[0].fix == "install CUDA toolkit 13.x and export CUDA_HOME=/usr/local/cuda-13.0"
    assert "CUDA >= 12.8" in found[1].fix
    assert "Blackwell" in found[1].detail  # the source of the 12.8 line is cited
    paths = ["/a/bin/nvcc", "/b/bin/nvcc"]
    (f,) = cuda_toolkit(Facts({"cuda_toolkit": {"nvcc_on_path": paths}}))
    assert f.detail == "/a/bin/nvcc\n/b/bin/nvcc"


def test_no_toolkit_section_is_not_a_missing_toolkit():
    assert list(cuda_toolkit(Facts({"packages": DS}))) == []
