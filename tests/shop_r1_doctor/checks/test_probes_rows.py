"""Decision rows for the doctor's own probes (shop_r1_doctor/checks/probes.py).

Probe names are those probes/collect.py writes: `torch`, `gpu`, `host`, ... and
`imports.<group>` (flash_attn, flash_attn_interface, vllm, deepspeed, apex); statuses
are isolate.py's (ok, error, timeout, crash, skipped). Hand-worked rules:
- a crash is an error when the plan needs the import (torch always; flash_attn* when
  attn_implementation starts with flash_attention; vllm when use_vllm is true), else a
  warning; torch's crash on WSL is WSL_CUDA_INIT_DOUBLE_FREE instead;
- a timeout is an error for torch only; an import's timeout is a warning even if needed;
- an `error` status is PROBE_ERROR (info) except for imports (the import rows report
  those); torch's import failure (not a crash/timeout) is TORCH_IMPORT_FAILED.
"""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.probes import probe_status, torch_import
from shop_r1_doctor.facts import Facts

TORCH_IMPACT = "Training imports torch the same way: it will crash or hang the same way."
NEEDED = "The plan needs this package; training will hit the same failure."
UNKNOWN = "The facts this probe collects are unknown; other checks skip them."
BY_HAND_TORCH = 'python -c "import torch; print(torch.cuda.is_available())"'
DOCTOR_V = "shop-r1 doctor -v (shows each probe's detail)"
WSL_DETAIL = (
    "'free(): double free detected in tcache 2' then SIGABRT in torch.cuda.is_available(): "
    "a WSL driver/CUDA_VISIBLE_DEVICES problem."
)
WSL_FIX = (
    "unset CUDA_VISIBLE_DEVICES (or valid indices); update or roll back the Windows NVIDIA driver"
)


def _snap(probes: dict, plan: dict | None = None, wsl: int | None = None) -> Facts:
    snap: dict = {"probes": probes, "host": {"os": "linux", "wsl": wsl}}
    if plan is not None:
        snap["plan"] = plan
    return Facts(snap)


def _rows(findings) -> list[tuple[str, str, str, str, str | None]]:
    return [(f.code, f.severity, f.title, f.detail, f.fix) for f in findings]


# (case, probes, plan, wsl, expected [(code, severity, title, detail, fix)])
STATUS_ROWS = [
    ("all ok", {"torch": {"status": "ok"}, "gpu": {"status": "ok"}}, None, None, []),
    (
        "skipped imports under --fast",
        {"imports.vllm": {"status": "skipped", "detail": "skipped (--fast)"}},
        {"use_vllm": True},
        None,
        [],
    ),
    ("a record that is not a mapping", {"torch": "crash"}, None, None, []),
    (
        "a record that is not a mapping, then a crash",
        {"gpu": "crash", "torch": {"status": "crash", "detail": "killed by SIGSEGV"}},
        None,
        None,
        [
            (
                "PROBE_CRASH",
                "error",
                "probe 'torch' crashed: killed by SIGSEGV",
                TORCH_IMPACT,
                BY_HAND_TORCH,
            )
        ],
    ),
    (
        "torch crashes on native Linux",
        {"torch": {"status": "crash", "detail": "killed by SIGSEGV"}},
        None,
        None,
        [
            (
                "PROBE_CRASH",
                "error",
                "probe 'torch' crashed: killed by SIGSEGV",
                TORCH_IMPACT,
                BY_HAND_TORCH,
            )
        ],
    ),
    (
        "torch crashes without a detail",
        {"torch": {"status": "crash", "detail": None}},
        None,
        None,
        [
            (
                "PROBE_CRASH",
                "error",
                "probe 'torch' crashed: killed by a signal",
                TORCH_IMPACT,
                BY_HAND_TORCH,
            )
        ],
    ),
    (
        "torch crashes on WSL2: the double free",
        {"torch": {"status": "crash", "detail": "killed by SIGABRT: free(): double free"}},
        None,
        2,
        [
            (
                "WSL_CUDA_INIT_DOUBLE_FREE",
                "error",
                "torch's CUDA initialisation crashed on WSL2 (killed by SIGABRT: free(): double free)",
                WSL_DETAIL,
                WSL_FIX,
            )
        ],
    ),
    (
        "torch crashes on WSL1 without a detail",
        {"torch": {"status": "crash"}},
        None,
        1,
        [
            (
                "WSL_CUDA_INIT_DOUBLE_FREE",
                "error",
                "torch's CUDA initialisation crashed on WSL1 (killed by a signal)",
                WSL_DETAIL,
                WSL_FIX,
            )
        ],
    ),
    (
        "flash_attn crashes on WSL: not torch, so a plain probe crash (needed by FA2)",
        {"imports.flash_attn": {"status": "crash", "detail": "killed by SIGSEGV"}},
        {"attn_implementation": "flash_attention_2"},
        2,
        [
            (
                "PROBE_CRASH",
                "error",
                "probe 'imports.flash_attn' crashed: killed by SIGSEGV",
                NEEDED,
                'python -c "import flash_attn"',
            )
        ],
    ),
    (
        "flash_attn crashes but the plan uses sdpa",
        {"imports.flash_attn": {"status": "crash", "detail": "killed by SIGILL"}},
        {"attn_implementation": "sdpa"},
        None,
        [
            (
                "PROBE_CRASH",
                "warning",
                "probe 'imports.flash_attn' crashed: killed by SIGILL",
                UNKNOWN,
                'python -c "import flash_attn"',
            )
        ],
    ),
    (
        "FlashAttention-3's interface crashes under flash_attention_3",
        {"imports.flash_attn_interface": {"status": "crash", "detail": "killed by SIGBUS"}},
        {"attn_implementation": "flash_attention_3"},
        None,
        [
            (
                "PROBE_CRASH",
                "error",
                "probe 'imports.flash_attn_interface' crashed: killed by SIGBUS",
                NEEDED,
                'python -c "import flash_attn_interface"',
            )
        ],
    ),
    (
        "flash_attn crashes and there is no plan",
        {"imports.flash_attn": {"status": "crash", "detail": "killed by SIGSEGV"}},
        None,
        None,
        [
            (
                "PROBE_CRASH",
                "warning",
                "probe 'imports.flash_attn' crashed: killed by SIGSEGV",
                UNKNOWN,
                'python -c "import flash_attn"',
            )
        ],
    ),
    (
        "vllm crashes with use_vllm",
        {"imports.vllm": {"status": "crash", "detail": "killed by SIGABRT"}},
        {"use_vllm": True, "attn_implementation": "flash_attention_2"},
        None,
        [
            (
                "PROBE_CRASH",
                "error",
                "probe 'imports.vllm' crashed: killed by SIGABRT",
                NEEDED,
                'python -c "import vllm"',
            )
        ],
    ),
    (
        "vllm crashes, use_vllm false",
        {"imports.vllm": {"status": "crash", "detail": "killed by SIGABRT"}},
        {"use_vllm": False, "attn_implementation": "flash_attention_2"},
        None,
        [
            (
                "PROBE_CRASH",
                "warning",
                "probe 'imports.vllm' crashed: killed by SIGABRT",
                UNKNOWN,
                'python -c "import vllm"',
            )
        ],
    ),
    (
        "deepspeed crashes: never needed by the plan",
        {"imports.deepspeed": {"status": "crash", "detail": "killed by SIGSEGV"}},
        {"use_vllm": True, "attn_implementation": "flash_attention_2"},
        None,
        [
            (
                "PROBE_CRASH",
                "warning",
                "probe 'imports.deepspeed' crashed: killed by SIGSEGV",
                UNKNOWN,
                'python -c "import deepspeed"',
            )
        ],
    ),
    (
        "the gpu probe crashes: no import to run by hand",
        {"gpu": {"status": "crash", "detail": "killed by SIGSEGV"}},
        None,
        None,
        [
            (
                "PROBE_CRASH",
                "warning",
                "probe 'gpu' crashed: killed by SIGSEGV",
                UNKNOWN,
                DOCTOR_V,
            )
        ],
    ),
    (
        "torch hangs: an error, even on WSL",
        {"torch": {"status": "timeout", "detail": "no answer in 20 s"}},
        None,
        2,
        [
            (
                "PROBE_TIMEOUT",
                "error",
                "probe 'torch' did not answer (no answer in 20 s)",
                TORCH_IMPACT,
                BY_HAND_TORCH,
            )
        ],
    ),
    (
        "torch hangs without a detail",
        {"torch": {"status": "timeout", "detail": ""}},
        None,
        None,
        [
            (
                "PROBE_TIMEOUT",
                "error",
                "probe 'torch' did not answer (timed out)",
                TORCH_IMPACT,
                BY_HAND_TORCH,
            )
        ],
    ),
    (
        "vllm hangs with use_vllm: a warning that says the plan needs it",
        {"imports.vllm": {"status": "timeout", "detail": "no answer in 40 s"}},
        {"use_vllm": True},
        None,
        [
            (
                "PROBE_TIMEOUT",
                "warning",
                "probe 'imports.vllm' did not answer (no answer in 40 s)",
                NEEDED,
                'python -c "import vllm"',
            )
        ],
    ),
    (
        "apex hangs",
        {"imports.apex": {"status": "timeout", "detail": "no answer in 20 s"}},
        None,
        None,
        [
            (
                "PROBE_TIMEOUT",
                "warning",
                "probe 'imports.apex' did not answer (no answer in 20 s)",
                UNKNOWN,
                'python -c "import apex"',
            )
        ],
    ),
    (
        "the ray probe hangs",
        {"ray": {"status": "timeout", "detail": "no answer in 2 s"}},
        None,
        None,
        [
            (
                "PROBE_TIMEOUT",
                "warning",
                "probe 'ray' did not answer (no answer in 2 s)",
                UNKNOWN,
                DOCTOR_V,
            )
        ],
    ),
    (
        "the gpu probe raises",
        {"gpu": {"status": "error", "detail": "NVMLError: Unknown"}},
        None,
        None,
        [
            (
                "PROBE_ERROR",
                "info",
                "probe 'gpu' failed: NVMLError: Unknown",
                UNKNOWN,
                "see the detail",
            )
        ],
    ),
    (
        "the torch probe raises (not a crash)",
        {"torch": {"status": "error", "detail": "exit 1: boom"}},
        None,
        None,
        [
            (
                "PROBE_ERROR",
                "info",
                "probe 'torch' failed: exit 1: boom",
                TORCH_IMPACT,
                "see the detail",
            )
        ],
    ),
    (
        "an import's error is left to the import rows",
        {"imports.flash_attn": {"status": "error", "detail": "ImportError: undefined symbol"}},
        {"attn_implementation": "flash_attention_2"},
        None,
        [],
    ),
    (
        "several probes: reported in name order",
        {
            "torch": {"status": "timeout", "detail": "no answer in 20 s"},
            "imports.vllm": {"status": "crash", "detail": "killed by SIGSEGV"},
            "gpu": {"status": "error", "detail": "x"},
            "host": {"status": "ok"},
        },
        {"use_vllm": True},
        None,
        [
            ("PROBE_ERROR", "info", "probe 'gpu' failed: x", UNKNOWN, "see the detail"),
            (
                "PROBE_CRASH",
                "error",
                "probe 'imports.vllm' crashed: killed by SIGSEGV",
                NEEDED,
                'python -c "import vllm"',
            ),
            (
                "PROBE_TIMEOUT",
                "error",
                "probe 'torch' did not answer (no answer in 20 s)",
                TORCH_IMPACT,
                BY_HAND_TORCH,
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("probes", "plan", "wsl", "expected"),
    [r[1:] for r in STATUS_ROWS],
    ids=[r[0] for r in STATUS_ROWS],
)
def test_probe_status_rows(probes: dict, plan: dict | None, wsl: int | None, expected) -> None:
    assert _rows(probe_status(_snap(probes, plan, wsl))) == expected


# ----------------------------------------------------------------- torch does not import
REINSTALL = "python3 -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130"
CUDNN = "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
LONG = "OSError: " + "x" * 200 + "\nmore"

# (case, torch facts, packages, expected [(title, detail)])
IMPORT_ROWS = [
    ("torch imported", {"version": "2.9.0+cu130", "error": None}, {}, []),
    ("no torch facts", None, {"torch": {"version": "2.9.0"}}, []),
    ("an error but a version: the import worked", {"version": "2.9.0", "error": "x"}, {}, []),
    ("an empty error", {"error": ""}, {}, []),
    ("an error that is not text", {"error": ["ImportError"]}, {}, []),
    ("a crash is probe_status's", {"error": "crash: killed by SIGABRT"}, {}, []),
    ("a timeout is probe_status's", {"error": "timeout: no answer in 20 s"}, {}, []),
    (
        "cuDNN missing, the dist's version known",
        {"error": CUDNN},
        {"torch": {"version": "2.9.0+cu130"}},
        [(f"torch 2.9.0+cu130 does not import: {CUDNN}", CUDNN)],
    ),
    (
        "the dist's version unknown: no double space",
        {"error": CUDNN},
        {},
        [(f"torch does not import: {CUDNN}", CUDNN)],
    ),
    (
        "a long multi-line error: the first line, 160 characters",
        {"error": LONG},
        {"torch": {"version": "2.8.0"}},
        [(f"torch 2.8.0 does not import: {LONG[:160]}", LONG)],
    ),
]


@pytest.mark.parametrize(
    ("torch", "packages", "expected"),
    [r[1:] for r in IMPORT_ROWS],
    ids=[r[0] for r in IMPORT_ROWS],
)
def test_torch_import_rows(torch: dict | None, packages: dict, expected) -> None:
    snap: dict = {"packages": packages}
    if torch is not None:
        snap["torch"] = torch
    found = list(torch_import(Facts(snap)))
    assert [(f.title, f.detail) for f in found] == expected
    assert all(
        (f.code, f.severity, f.fix) == ("TORCH_IMPORT_FAILED", "error", REINSTALL) for f in found
    )
