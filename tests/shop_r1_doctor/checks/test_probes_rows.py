"""Decision rows for the doctor's own probes (shop_r1_doctor/checks/probes.py): each row's
codes, severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/probes.txt.

Probe names are those probes/collect.py writes: `torch`, `gpu`, `host`, ... and
`imports.<group>` (flash_attn, flash_attn_interface, vllm, deepspeed, apex); statuses
are isolate.py's (ok, error, timeout, crash, skipped). Hand-worked rules:
- a crash is an error when the plan needs the import (torch always; flash_attn* when
  attn_implementation starts with flash_attention; vllm when use_vllm is true), else a
  warning; torch's crash on WSL is WSL_CUDA_INIT_DOUBLE_FREE instead;
- a timeout is an error for torch only; an import's timeout is a warning even if needed;
- an `error` status is PROBE_ERROR (info) except for imports (the import rows report
  those); torch's import failure (not a crash/timeout) is TORCH_IMPORT_FAILED.
- the detail says what the failure costs: torch's is training's, a needed import's is
  the plan's ("The plan needs"), any other probe's is its facts ("unknown").
"""

from __future__ import annotations

from typing import Any

import pytest
from check_wording import assert_row, found
from snapshots import snapshot

from shop_r1_doctor.checks.probes import probe_status, torch_import

# what the failure costs (the detail), as the row must see it named
TRAINING, NEEDED, UNKNOWN = "Training", "plan needs", "unknown"
TORCH = (TRAINING, 'python -c "import torch; print(torch.cuda.is_available())"')
DOCTOR_V = "shop-r1 doctor -v"


def _by_hand(module: str) -> str:
    return f'python -c "import {module}"'


def _snap(probes: dict, plan: dict | None = None, wsl: int | None = None) -> dict:
    sections: dict = {"probes": probes, "host": {"os": "linux", "wsl": wsl}}
    if plan is not None:
        sections["plan"] = plan
    return snapshot(**sections)


# (case, probes, plan, wsl, expected [(code, severity, *facts)])
STATUS_ROWS: list[tuple[Any, ...]] = [
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
        [("PROBE_CRASH", "error", "'torch'", "killed by SIGSEGV", *TORCH)],
    ),
    (
        "torch crashes on native Linux",
        {"torch": {"status": "crash", "detail": "killed by SIGSEGV"}},
        None,
        None,
        [("PROBE_CRASH", "error", "'torch'", "killed by SIGSEGV", *TORCH)],
    ),
    (
        "torch crashes without a detail",
        {"torch": {"status": "crash", "detail": None}},
        None,
        None,
        [("PROBE_CRASH", "error", "'torch'", "killed by a signal", *TORCH)],
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
                "WSL2",
                "(killed by SIGABRT: free(): double free)",
                "unset CUDA_VISIBLE_DEVICES",
            )
        ],
    ),
    (
        "torch crashes on WSL1 without a detail",
        {"torch": {"status": "crash"}},
        None,
        1,
        [("WSL_CUDA_INIT_DOUBLE_FREE", "error", "WSL1", "(killed by a signal)")],
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
                "'imports.flash_attn'",
                "killed by SIGSEGV",
                NEEDED,
                _by_hand("flash_attn"),
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
                "'imports.flash_attn'",
                "killed by SIGILL",
                UNKNOWN,
                _by_hand("flash_attn"),
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
                "'imports.flash_attn_interface'",
                "killed by SIGBUS",
                NEEDED,
                _by_hand("flash_attn_interface"),
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
                "'imports.flash_attn'",
                "killed by SIGSEGV",
                UNKNOWN,
                _by_hand("flash_attn"),
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
                "'imports.vllm'",
                "killed by SIGABRT",
                NEEDED,
                _by_hand("vllm"),
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
                "'imports.vllm'",
                "killed by SIGABRT",
                UNKNOWN,
                _by_hand("vllm"),
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
                "'imports.deepspeed'",
                "killed by SIGSEGV",
                UNKNOWN,
                _by_hand("deepspeed"),
            )
        ],
    ),
    (
        "the gpu probe crashes: no import to run by hand",
        {"gpu": {"status": "crash", "detail": "killed by SIGSEGV"}},
        None,
        None,
        [("PROBE_CRASH", "warning", "'gpu'", "killed by SIGSEGV", UNKNOWN, DOCTOR_V)],
    ),
    (
        "torch hangs: an error, even on WSL",
        {"torch": {"status": "timeout", "detail": "no answer in 20 s"}},
        None,
        2,
        [("PROBE_TIMEOUT", "error", "'torch'", "(no answer in 20 s)", *TORCH)],
    ),
    (
        "torch hangs without a detail",
        {"torch": {"status": "timeout", "detail": ""}},
        None,
        None,
        [("PROBE_TIMEOUT", "error", "'torch'", "(timed out)", *TORCH)],
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
                "'imports.vllm'",
                "(no answer in 40 s)",
                NEEDED,
                _by_hand("vllm"),
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
                "'imports.apex'",
                "(no answer in 20 s)",
                UNKNOWN,
                _by_hand("apex"),
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
                "'ray'",
                "(no answer in 2 s)",
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
        [("PROBE_ERROR", "info", "'gpu'", "NVMLError: Unknown", UNKNOWN)],
    ),
    (
        "the torch probe raises (not a crash)",
        {"torch": {"status": "error", "detail": "exit 1: boom"}},
        None,
        None,
        [("PROBE_ERROR", "info", "'torch'", "exit 1: boom", TRAINING)],
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
            ("PROBE_ERROR", "info", "'gpu'", "x", UNKNOWN),
            ("PROBE_CRASH", "error", "'imports.vllm'", NEEDED, _by_hand("vllm")),
            ("PROBE_TIMEOUT", "error", "'torch'", "(no answer in 20 s)", *TORCH),
        ],
    ),
]


@pytest.mark.parametrize(
    ("probes", "plan", "wsl", "expected"),
    [r[1:] for r in STATUS_ROWS],
    ids=[r[0] for r in STATUS_ROWS],
)
def test_probe_status_rows(probes: dict, plan: dict | None, wsl: int | None, expected) -> None:
    assert_row(probe_status, _snap(probes, plan, wsl), expected)


# ----------------------------------------------------------------- torch does not import
REINSTALL = "install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130"
CUDNN = "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
LONG = "OSError: " + "x" * 200 + "\nmore"


def _import_snap(torch: dict | None, packages: dict) -> dict:
    return snapshot(packages=packages, **({} if torch is None else {"torch": torch}))


def _failed(*facts: str) -> list[tuple]:
    return [("TORCH_IMPORT_FAILED", "error", *facts, REINSTALL)]


# (case, torch facts, packages, expected [(code, severity, *facts)])
IMPORT_ROWS: list[tuple[Any, ...]] = [
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
        _failed("torch 2.9.0+cu130", CUDNN),
    ),
    (
        "the dist's version unknown: no double space",
        {"error": CUDNN},
        {},
        _failed("torch", CUDNN),
    ),
    (
        "a long multi-line error: the first line, 160 characters",
        {"error": LONG},
        {"torch": {"version": "2.8.0"}},
        # the title ends after 160 characters: the newline that follows is the detail's
        _failed("torch 2.8.0", f"{LONG[:160]}\n", LONG),
    ),
]


@pytest.mark.parametrize(
    ("torch", "packages", "expected"),
    [r[1:] for r in IMPORT_ROWS],
    ids=[r[0] for r in IMPORT_ROWS],
)
def test_torch_import_rows(torch: dict | None, packages: dict, expected) -> None:
    snap = _import_snap(torch, packages)
    assert_row(torch_import, snap, expected)
    assert [f.title for f in found(torch_import, snap) if "  " in f.title] == []


SNAPSHOTS = [
    *[(r[0], _snap(*r[1:4])) for r in STATUS_ROWS],
    *[(r[0], _import_snap(*r[1:3])) for r in IMPORT_ROWS],
]
