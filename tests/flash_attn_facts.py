"""Host facts shared by the decision rows of checks/flash_attn.py
(tests/shop_r1_doctor/checks/test_flash_attn_rows.py): the recorded H200 box with another
torch / Python / arch / OS."""

from __future__ import annotations

from typing import Any

from machines import machine_snapshot
from torch_build_facts import H100

GIB = 1024**3
H200 = machine_snapshot("h200x2")  # torch 2.11.0+cu130, Python 3.12.3, x86_64, 32 CPUs


def machine(
    torch: str = "2.8.0+cu128",
    cuda: str | None = "12.8",
    abi: Any = True,
    py: Any = "3.12.3",
    arch: Any = "x86_64",
    os: Any = "linux",
    **snap: Any,
) -> dict:
    """The H200 box's host facts with another torch (None: no torch probe), Python, arch, OS."""
    host = {
        **H200["host"],
        "os": os,
        "arch": arch,
        "python": {**H200["host"]["python"], "version": py},
    }
    if py is None:
        host["python"] = None
    t: dict | None = None
    if torch is not None:
        t = {"version": torch, "cuda": cuda}
        if abi is not None:
            t["cxx11_abi"] = abi
    return {"host": host, "torch": t, "gpus": [H100], "packages": {}, **snap}


def _plan(impl: str) -> dict:
    return {"attn_implementation": impl}


def _imports(**mods: Any) -> dict:
    return {
        m.replace("__", "."): ({"ok": True} if v is True else {"ok": False, "error": v})
        for m, v in mods.items()
    }


REL = "https://github.com/Dao-AILab/flash-attention/releases/download"
URL_28_TRUE = f"{REL}/v2.8.3/flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
URL_26_FALSE = (
    f"{REL}/v2.8.3/flash_attn-2.8.3+cu12torch2.6cxx11abiFALSE-cp312-cp312-linux_x86_64.whl"
)


# ----------------------------------------------------------------- the prebuilt wheel's URL
FA2 = _plan("flash_attention_2")
ERR_MISSING = "ModuleNotFoundError: No module named 'flash_attn'"
ERR_SYMBOL = "ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c105ErrorC2E"
ERR_DRIVER = "ImportError: libcudart.so.12: cannot open shared object file"
