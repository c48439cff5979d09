"""Decision rows for NumPy 2 against torch, megatron-core and opencv, and for Megatron's
gradient-accumulation fusion without apex (shop_r1_doctor/checks/packages.py; the numpy2
table: the docstring of test_packages_rows.py)."""

from __future__ import annotations

import pytest
from packages_facts import LINUX, SOURCE, _found, pkg

from shop_r1_doctor.checks.packages import (
    megatron_fusion,
    numpy2,
)

# ----------------------------------------------------------------- numpy 2
PIN_FIX = 'python3 -m pip install "numpy<2" "opencv-python-headless==4.11.0.86"'
MEGATRON_DETAIL = f"'module numpy has no attribute product' at the first call. {SOURCE}"
OPENCV_DETAIL = f"cv2 fails to import against numpy 1 (vLLM pulls opencv >= 4.11). {SOURCE}"
TORCH_DETAIL = "'A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x'."
EXT_DETAIL = (
    "Extensions built against NumPy 1 fail: 'A module that was compiled using NumPy 1.x "
    "cannot be run in NumPy 2.x'."
)
TORCH_FIX = 'python3 -m pip install "numpy<2"  (or torch >= 2.3)'


def _megatron(mc: str, numpy: str) -> tuple:
    return (
        "NUMPY2_MEGATRON_VS_OPENCV",
        f"megatron-core {mc} needs numpy<2; numpy {numpy} is installed",
        MEGATRON_DETAIL,
        f'{PIN_FIX}  (or python3 -m pip install "megatron-core>=0.16")',
    )


def _opencv(name: str, ov: str, numpy: str) -> tuple:
    return (
        "NUMPY2_MEGATRON_VS_OPENCV",
        f"{name} {ov} requires numpy>=2; numpy {numpy} is installed",
        OPENCV_DETAIL,
        PIN_FIX,
    )


# (case, torch facts or None, packages, expected [(code, title, detail, fix)])
NUMPY_ROWS = [
    ("numpy unknown", None, {"megatron-core": pkg("0.12.0")}, []),
    (
        "megatron-core 0.15.3 under numpy 2.1",
        None,
        {"numpy": pkg("2.1.0"), "megatron-core": pkg("0.15.3", "numpy<2")},
        [_megatron("0.15.3", "2.1.0")],
    ),
    (
        "megatron-core 0.16.0 (fixed) under numpy 2.1",
        None,
        {"numpy": pkg("2.1.0"), "megatron-core": pkg("0.16.0")},
        [],
    ),
    (
        "megatron-core 0.12 under numpy 2.0.0",
        None,
        {"numpy": pkg("2.0.0"), "megatron-core": pkg("0.12.0")},
        [_megatron("0.12.0", "2.0.0")],
    ),
    (
        "megatron-core 0.15 under numpy 1.26.4",
        None,
        {"numpy": pkg("1.26.4"), "megatron-core": pkg("0.15.0")},
        [],
    ),
    (
        "opencv-python-headless 4.12.0.88 under numpy 1.26.4",
        None,
        {"numpy": pkg("1.26.4"), "opencv-python-headless": pkg("4.12.0.88", "numpy>=2")},
        [_opencv("opencv-python-headless", "4.12.0.88", "1.26.4")],
    ),
    (
        "opencv at exactly 4.12 under numpy 1",
        None,
        {"numpy": pkg("1.26.4"), "opencv-python": pkg("4.12")},
        [_opencv("opencv-python", "4.12", "1.26.4")],
    ),
    (
        "both opencv dists under numpy 1, and an old torch (numpy 1 is fine for it)",
        {"version": "2.2.2"},
        {
            "numpy": pkg("1.26.4"),
            "opencv-python": pkg("4.12.0.88"),
            "opencv-python-headless": pkg("4.13.0.90"),
        },
        [
            _opencv("opencv-python", "4.12.0.88", "1.26.4"),
            _opencv("opencv-python-headless", "4.13.0.90", "1.26.4"),
        ],
    ),
    (
        "opencv 4.11.0.86 (the last for numpy 1) under numpy 1",
        None,
        {"numpy": pkg("1.26.4"), "opencv-python-headless": pkg("4.11.0.86")},
        [],
    ),
    (
        "opencv 4.12 under numpy 2: fine",
        None,
        {"numpy": pkg("2.2.6"), "opencv-python-headless": pkg("4.12.0.88", "numpy<2.3.0,>=2")},
        [],
    ),
    (
        "torch 2.2.2 under numpy 2.1",
        {"version": "2.2.2"},
        {"numpy": pkg("2.1.0")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "torch 2.2.2 was built against NumPy 1; numpy 2.1.0 is installed",
                TORCH_DETAIL,
                TORCH_FIX,
            )
        ],
    ),
    ("torch 2.3.0 under numpy 2.1", {"version": "2.3.0"}, {"numpy": pkg("2.1.0")}, []),
    (
        "torch's version from the dist when the child did not answer",
        None,
        {"numpy": pkg("2.0.2"), "torch": pkg("2.1.2+cu121")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "torch 2.1.2+cu121 was built against NumPy 1; numpy 2.0.2 is installed",
                TORCH_DETAIL,
                TORCH_FIX,
            )
        ],
    ),
    (
        "opencv-headless 4.12.0.88 caps numpy below 2.3",
        None,
        {"numpy": pkg("2.3.1"), "opencv-python-headless": pkg("4.12.0.88", "numpy<2.3.0,>=2")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "opencv-python-headless 4.12.0.88 requires numpy<2.3.0,>=2; numpy 2.3.1 is installed",
                EXT_DETAIL,
                'python3 -m pip install "numpy<2.3.0,>=2"  (or upgrade opencv-python-headless)',
            )
        ],
    ),
    (
        "a numpy<2 pin under numpy 2, spelled NumPy",
        None,
        {"numpy": pkg("2.1.0"), "gensim": pkg("4.3.3", "NumPy<2.0,>=1.18.5")},
        [
            (
                "NUMPY2_BINARY_INCOMPAT",
                "gensim 4.3.3 requires numpy<2.0,>=1.18.5; numpy 2.1.0 is installed",
                EXT_DETAIL,
                'python3 -m pip install "numpy<2.0,>=1.18.5"  (or upgrade gensim)',
            )
        ],
    ),
    (
        "a pre-release numpy inside the range",
        None,
        {"numpy": pkg("2.3.0rc1"), "scipy": pkg("1.16.0", "numpy<2.6,>=1.25.2")},
        [],
    ),
    (
        "megatron-core's own numpy pin is the megatron rule's",
        None,
        {"numpy": pkg("2.1.0"), "megatron-core": pkg("0.16.0", "numpy<2")},
        [],
    ),
    (
        "an unbounded numpy requirement",
        None,
        {"numpy": pkg("2.1.0"), "torchvision": pkg("0.24.0", "numpy")},
        [],
    ),
    (
        "another dist's requirement is not numpy's",
        None,
        {"numpy": pkg("2.1.0"), "pandas": pkg("2.3.0", "tzdata>=2022.7")},
        [],
    ),
]


@pytest.mark.parametrize(
    ("torch", "packages", "expected"), [r[1:] for r in NUMPY_ROWS], ids=[r[0] for r in NUMPY_ROWS]
)
def test_numpy2_rows(torch: dict | None, packages: dict, expected) -> None:
    snap: dict = {"host": LINUX, "packages": packages}
    if torch is not None:
        snap["torch"] = torch
    assert _found(numpy2, snap) == [(c, "error", t, d, f) for c, t, d, f in expected]


# ----------------------------------------------------------------- Megatron's fusion without apex
FUSION_DETAIL = "Megatron enables the fusion by default and stops at start-up without it."
FUSION_FIX = "gradient_accumulation_fusion=False, or build apex with --cuda_ext"
FUSION_TITLE = (
    "megatron-core 0.13.0: gradient_accumulation_fusion needs apex's "
    "fused_weight_gradient_mlp_cuda, {}"
)
ABSENT = object()
NO_APEX = FUSION_TITLE.format("apex is not installed")
NO_IMPORT = FUSION_TITLE.format("which does not import")

# (case, fusion in the plan, apex record (ABSENT = not looked), fused import ok, expected)
FUSION_ROWS = [
    ("apex absent, fusion by default", None, None, None, ("warning", NO_APEX)),
    ("apex absent, fusion asked for", True, None, None, ("error", NO_APEX)),
    ("apex absent, fusion off", False, None, None, None),
    # the module imports (apex built in-tree, without a dist record): Megatron finds it
    ("apex absent, the module imports", None, None, True, None),
    ("apex installed, fused imports", True, {"version": "0.1"}, True, None),
    ("apex installed, import unknown", True, {"version": "0.1"}, None, None),
    (
        "apex installed, fused does not import",
        True,
        {"version": "0.1"},
        False,
        ("error", NO_IMPORT),
    ),
    ("apex unknown, fused does not import", None, ABSENT, False, ("warning", NO_IMPORT)),
    ("apex unknown, import unknown", None, ABSENT, None, None),
    # was "which does not import" while the import worked
    ("apex unknown, fused imports", None, ABSENT, True, None),
]


@pytest.mark.parametrize(
    ("fusion", "apex", "fused", "expected"),
    [r[1:] for r in FUSION_ROWS],
    ids=[r[0] for r in FUSION_ROWS],
)
def test_megatron_fusion_rows(fusion, apex, fused, expected) -> None:
    packages: dict = {"megatron-core": pkg("0.13.0")}
    if apex is not ABSENT:
        packages["apex"] = apex
    snap: dict = {"packages": packages, "plan": {"gradient_accumulation_fusion": fusion}}
    if fused is not None:
        snap["imports"] = {"fused_weight_gradient_mlp_cuda": {"ok": fused}}
    rows = _found(megatron_fusion, snap)
    if expected is None:
        assert rows == []
    else:
        severity, title = expected
        assert rows == [
            ("MEGATRON_GRAD_ACCUM_FUSION_NO_APEX", severity, title, FUSION_DETAIL, FUSION_FIX)
        ]


def test_megatron_fusion_needs_megatron() -> None:
    snap = {"packages": {"megatron-core": None, "apex": None}, "plan": {}}
    assert _found(megatron_fusion, snap) == []
