"""Decision rows for flash-attn builds that are installed but broken (an ABI or torch
mismatch, an undefined C++ symbol) and for sm_120 (Blackwell) kernels
(shop_r1_doctor/checks/flash_attn.py; the rules: the docstring of test_flash_attn_rows.py)."""

from __future__ import annotations

from typing import Any

import pytest
from flash_attn_facts import (
    ERR_DRIVER,
    ERR_SYMBOL,
    FA2,
    URL_26_FALSE,
    URL_28_TRUE,
    _all,
    _imports,
    _plan,
    machine,
)
from torch_build_facts import B200, GB10, H100, NO_CC, RTX5090

from shop_r1_doctor.checks.flash_attn import (
    blackwell_kernels,
    broken_build,
)

# ----------------------------------------------------------------- a broken build
ABI_DETAIL = "Its extension fails to load with an undefined C++ symbol."


def _fa(
    version: str,
    torch: Any = "2.8.0+cu128",
    abi: Any = True,
    plan: dict | None = None,
    **imports: Any,
) -> dict:
    snap = machine(torch, "12.8" if torch and "cu128" in torch else None, abi=abi)
    snap["packages"] = {"flash-attn": {"version": version}}
    if imports:
        snap["imports"] = _imports(**imports)
    if plan is not None:
        snap["plan"] = plan
    return snap


def _abi(
    raw: str,
    tag: str,
    torch: str,
    want: str,
    severity: str = "warning",
    detail: str = ABI_DETAIL,
    url: str = URL_28_TRUE,
) -> tuple:
    return (
        "FA_CXX11_ABI_WHEEL_MISMATCH",
        severity,
        f"flash-attn {raw} is a cxx11abi{tag} build; torch {torch} uses cxx11abi{want}",
        detail,
        f"/opt/torch/.venv/bin/python3 -m pip install the flash-attn wheel named cxx11abi{want} ({url})",
    )


def _symbol(fv: str, built: str, torch: str, fix: str, severity: str = "warning") -> tuple:
    return (
        "FA_TORCH_ABI_UNDEFINED_SYMBOL",
        severity,
        f"flash-attn {fv}{built} does not load with torch {torch}: undefined symbol",
        ERR_SYMBOL,
        fix,
    )


FALSE_WHEEL = "2.8.3+cu12torch2.8cxx11abiFALSE"
REINSTALL = "/opt/torch/.venv/bin/python3 -m pip install --no-build-isolation --force-reinstall --no-deps flash-attn==2.8.3"
BROKEN_ROWS = [
    (
        "a cxx11abiFALSE wheel on a TRUE torch",
        _fa(FALSE_WHEEL),
        [_abi(FALSE_WHEEL, "FALSE", "2.8.0+cu128", "TRUE")],
    ),
    (
        "the plan asks for FA2: an error, with the import error",
        _fa(FALSE_WHEEL, plan=FA2, flash_attn_2_cuda=ERR_SYMBOL),
        [_abi(FALSE_WHEEL, "FALSE", "2.8.0+cu128", "TRUE", "error", ERR_SYMBOL)],
    ),
    (
        "the plan asks for sdpa",
        _fa(FALSE_WHEEL, plan=_plan("sdpa")),
        [_abi(FALSE_WHEEL, "FALSE", "2.8.0+cu128", "TRUE")],
    ),
    ("the tag matches torch's ABI", _fa("2.8.3+cu12torch2.8cxx11abiTRUE"), []),
    (
        "a TRUE wheel on a FALSE torch (2.6, from the table)",
        _fa("2.8.3+cu12torch2.6cxx11abiTRUE", "2.6.0+cu124", abi=None),
        [
            (
                "FA_CXX11_ABI_WHEEL_MISMATCH",
                "warning",
                "flash-attn 2.8.3+cu12torch2.6cxx11abiTRUE is a cxx11abiTRUE build; torch 2.6.0+cu124 uses cxx11abiFALSE",
                ABI_DETAIL,
                f"/opt/torch/.venv/bin/python3 -m pip install the flash-attn wheel named cxx11abiFALSE ({URL_26_FALSE})",
            )
        ],
    ),
    (
        "no wheel to name for torch 2.11",
        _fa("2.8.3+cu12torch2.11cxx11abiFALSE", "2.11.0+cu130"),
        [
            _abi(
                "2.8.3+cu12torch2.11cxx11abiFALSE",
                "FALSE",
                "2.11.0+cu130",
                "TRUE",
                url="see the release page",
            )
        ],
    ),
    # built for another torch: the ABI flag says nothing about this one
    ("a tag for torch 2.7 on torch 2.8", _fa("2.8.3+cu12torch2.7cxx11abiFALSE"), []),
    ("torch unknown: the tag alone", _fa(FALSE_WHEEL, None, abi=None), []),
    ("no tag", _fa("2.8.3"), []),
    ("ABI unknown", _fa(FALSE_WHEEL, "2.11.0", abi=None), []),
    # undefined symbol without an ABI mismatch: another torch
    (
        "undefined symbol, plain version",
        _fa("2.8.3", flash_attn_2_cuda=ERR_SYMBOL),
        [
            _symbol(
                "2.8.3",
                "",
                "2.8.0+cu128",
                f"{REINSTALL}  # or: /opt/torch/.venv/bin/python3 -m pip install {URL_28_TRUE}",
            )
        ],
    ),
    (
        "undefined symbol, a tag for torch 2.7",
        _fa("2.8.3+cu12torch2.7cxx11abiTRUE", plan=FA2, flash_attn=ERR_SYMBOL),
        [
            _symbol(
                "2.8.3+cu12torch2.7cxx11abitrue",
                " (built for torch 2.7)",
                "2.8.0+cu128",
                f"{REINSTALL}  # or: /opt/torch/.venv/bin/python3 -m pip install {URL_28_TRUE}",
                "error",
            )
        ],
    ),
    (
        "undefined symbol, no wheel for this torch",
        _fa("2.8.3", "2.11.0+cu130", flash_attn_2_cuda=ERR_SYMBOL),
        [_symbol("2.8.3", "", "2.11.0+cu130", REINSTALL)],
    ),
    ("another import error", _fa("2.8.3", flash_attn_2_cuda=ERR_DRIVER), []),
    # no version to name: nothing to say (and nothing raised)
    ("version unparseable", _fa("a.b", flash_attn_2_cuda=ERR_SYMBOL), []),
    (
        "version missing",
        {**_fa("2.8.3", flash_attn_2_cuda=ERR_SYMBOL), "packages": {"flash-attn": {}}},
        [],
    ),
    (
        "not installed",
        {
            **machine(),
            "packages": {"flash-attn": None},
            "imports": _imports(flash_attn_2_cuda=ERR_SYMBOL),
        },
        [],
    ),
]


@pytest.mark.parametrize(("case", "snap", "want"), BROKEN_ROWS, ids=[r[0] for r in BROKEN_ROWS])
def test_broken_build_row(case, snap, want):
    assert _all(broken_build, snap) == want


# ----------------------------------------------------------------- sm_120 kernels
SM120_DETAIL = (
    "flash_fwd fails with 'no kernel image is available' (flash-attention FLASH_ATTN_CUDA_ARCHS "
    "default since v2.7.3; user reports on sm_120 (issue #1638, #2361))."
)
SM120_FIX = 'attn_implementation="sdpa", or python3 -m pip install "flash-attn>=2.8.3.post1" on a cu128+ torch'


def _sm120(fv: str, name: str, severity: str = "warning") -> list[tuple]:
    return [
        (
            "FA_BLACKWELL_SM120_KERNELS",
            severity,
            f"flash-attn {fv} has no sm_120 kernels for {name}",
            SM120_DETAIL,
            SM120_FIX,
        )
    ]


SM120_ROWS = [
    ("2.8.3 on an RTX 5090", "2.8.3", [RTX5090], None, _sm120("2.8.3", RTX5090["name"])),
    ("2.8.3.post1: at the line", "2.8.3.post1", [RTX5090], None, []),
    ("2.8.4", "2.8.4", [RTX5090], None, []),
    (
        "2.7.4.post1 on a GB10 (cc 12.1)",
        "2.7.4.post1",
        [GB10],
        None,
        _sm120("2.7.4.post1", GB10["name"]),
    ),
    ("the plan asks for FA2", "2.8.3", [RTX5090], FA2, _sm120("2.8.3", RTX5090["name"], "error")),
    ("the plan asks for sdpa", "2.8.3", [RTX5090], _plan("sdpa"), _sm120("2.8.3", RTX5090["name"])),
    ("B200 (cc 10.0)", "2.8.3", [B200], None, []),
    ("a cc 13 GPU", "2.8.3", [{"name": "NVIDIA Next", "compute_capability": "13.0"}], None, []),
    ("no cc", "2.8.3", [NO_CC], None, []),
    ("named once for two", "2.8.3", [H100, GB10, RTX5090], None, _sm120("2.8.3", GB10["name"])),
]


@pytest.mark.parametrize(
    ("case", "fv", "gpus", "plan", "want"), SM120_ROWS, ids=[r[0] for r in SM120_ROWS]
)
def test_blackwell_kernels_row(case, fv, gpus, plan, want):
    snap: dict = {"gpus": gpus, "packages": {"flash-attn": {"version": fv}}}
    if plan is not None:
        snap["plan"] = plan
    assert _all(blackwell_kernels, snap) == want


def test_blackwell_kernels_needs_flash_attn():
    assert _all(blackwell_kernels, {"gpus": [RTX5090], "packages": {"flash-attn": None}}) == []
    assert _all(blackwell_kernels, {"gpus": [RTX5090]}) == []
