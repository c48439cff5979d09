"""Decision rows for the platform checks (shop_r1_doctor/checks/platform.py): WSL, Windows,
the interpreter, the console encoding, hf-xet: each row's codes, severities and the facts
its findings must name; the wording is in tests/fixtures/golden/checks/platform.txt.

Hand-worked rules and thresholds:
- WSL + CUDA_VISIBLE_DEVICES empty, negative, or naming only indices no GPU has ->
  the double-free abort (GPUs without indices: unknown, quiet);
- WSL RAM must be at least params x 4 bytes (bf16 weights twice); the .wslconfig fix
  asks for need // GiB + 4 GB;
- the console is fine when its encoding is UTF-8 in any spelling, PYTHONUTF8 is "1",
  or PYTHONIOENCODING starts with utf-8/utf8/utf_8;
- `python` on PATH must live in the environment's directory (case-insensitive on
  Windows); the Store stub (WindowsApps) always fires;
- hf-xet below knowledge/compat.yaml's stall_fixed_in (1.5.2) stalls unless
  HF_HUB_DISABLE_XET is set; an env section not collected is unknown.
"""

from __future__ import annotations

import pytest
from check_wording import assert_row

from shop_r1_doctor.checks.platform import (
    console_encoding,
    hf_xet,
    interpreter,
    windows_compile,
    wsl_cuda_visible_devices,
    wsl_libcuda,
    wsl_pinned_memory,
    wsl_ram,
)

GIB = 1024**3
RTX4090 = {"index": 0, "name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"}
RTX4090_1 = {**RTX4090, "index": 1}


# ----------------------------------------------------------------- WSL and CUDA_VISIBLE_DEVICES
def _cvd_snap(wsl: int | None, cvd: str | None, gpus: list) -> dict:
    env = {} if cvd is None else {"CUDA_VISIBLE_DEVICES": cvd}
    return {"host": {"os": "linux", "wsl": wsl}, "gpus": gpus, "env": env}


# (case, wsl, CUDA_VISIBLE_DEVICES, gpus, fires)
CVD_ROWS = [
    ("WSL, index 0 of one GPU", 2, "0", [RTX4090], False),
    ("WSL, -1 hides every GPU", 2, "-1", [RTX4090], True),
    ("WSL, empty", 2, "", [RTX4090], True),
    ("WSL, only commas", 2, " , ", [RTX4090], True),
    ("WSL, 0 then -1 (spaced)", 2, "0, -1", [RTX4090], True),
    ("WSL, index 1 of one GPU: out of range", 2, " 1", [RTX4090], True),
    ("WSL, 1 of two GPUs", 2, "1", [RTX4090, RTX4090_1], False),
    ("WSL, 3 and 0: one is there", 2, "3, 0", [RTX4090], False),
    ("WSL, a UUID: not an index", 2, "GPU-5e3c1b2a", [RTX4090], False),
    ("WSL, an index but no GPU listed", 2, "3", [], False),
    ("WSL, GPUs without indices: unknown", 2, "3", [{"name": "NVIDIA GeForce RTX 4090"}], False),
    ("WSL, one GPU without an index", 2, "3", [RTX4090, {"name": "x"}], False),
    ("native Linux, -1", None, "-1", [RTX4090], False),
    ("WSL, not set", 2, None, [RTX4090], False),
]


@pytest.mark.parametrize(
    ("wsl", "cvd", "gpus", "fires"), [r[1:] for r in CVD_ROWS], ids=[r[0] for r in CVD_ROWS]
)
def test_wsl_cuda_visible_devices_rows(wsl, cvd, gpus, fires) -> None:
    expected = [("WSL_CUDA_INIT_DOUBLE_FREE", "error", f"CUDA_VISIBLE_DEVICES={cvd!r} on WSL{wsl}")]
    assert_row(wsl_cuda_visible_devices, _cvd_snap(wsl, cvd, gpus), expected if fires else [])


# ----------------------------------------------------------------- libcuda on WSL
LIBCUDA = ("WSL_LIBCUDA_NOT_LINKABLE", "warning", "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:")


def _libcuda_snap(wsl: int | None, in_cache: bool | None, ld: str | None) -> dict:
    return {
        "host": {"os": "linux", "wsl": wsl, "libcuda_in_ldconfig": in_cache},
        "env": {} if ld is None else {"LD_LIBRARY_PATH": ld},
    }


# (case, wsl, libcuda_in_ldconfig, LD_LIBRARY_PATH, fires)
LIBCUDA_ROWS = [
    ("WSL, not in ldconfig, no LD_LIBRARY_PATH", 2, False, None, True),
    ("WSL, not in ldconfig, another path", 2, False, "/usr/local/cuda/lib64", True),
    ("WSL, not in ldconfig, the WSL lib on the path", 2, False, "/x:/usr/lib/wsl/lib", False),
    ("WSL, the WSL lib with a slash", 2, False, "/usr/lib/wsl/lib/:/x", False),
    ("WSL, a directory below the WSL lib", 2, False, "/usr/lib/wsl/lib/extra", True),
    ("WSL, a directory named like the WSL lib", 2, False, "/usr/lib/wsl/libX", True),
    ("WSL, LD_LIBRARY_PATH empty", 2, False, "", True),
    ("WSL, in ldconfig", 2, True, None, False),
    ("WSL, ldconfig unknown", 2, None, None, False),
    ("native Linux, not in ldconfig", None, False, None, False),
]


@pytest.mark.parametrize(
    ("wsl", "in_cache", "ld", "fires"),
    [r[1:] for r in LIBCUDA_ROWS],
    ids=[r[0] for r in LIBCUDA_ROWS],
)
def test_wsl_libcuda_rows(wsl, in_cache, ld, fires) -> None:
    assert_row(wsl_libcuda, _libcuda_snap(wsl, in_cache, ld), [LIBCUDA] if fires else [])


# ----------------------------------------------------------------- pinned memory on WSL
def _pin_snap(wsl: int | None, plan: dict | None) -> dict:
    snap: dict = {"host": {"os": "linux", "wsl": wsl}}
    if plan is not None:
        snap["plan"] = plan
    return snap


# (case, wsl, plan, fires)
PIN_ROWS = [
    ("WSL2, a plan that does not say: HF pins by default", 2, {"task": "sft"}, True),
    ("WSL2, pin_memory true", 2, {"dataloader_pin_memory": True}, True),
    ("WSL2, pin_memory false", 2, {"task": "sft", "dataloader_pin_memory": False}, False),
    ("WSL2, no plan", 2, None, False),
    ("native Linux", None, {"task": "sft"}, False),
]


@pytest.mark.parametrize(
    ("wsl", "plan", "fires"), [r[1:] for r in PIN_ROWS], ids=[r[0] for r in PIN_ROWS]
)
def test_wsl_pinned_memory_rows(wsl, plan, fires) -> None:
    expected = ("WSL_PINNED_MEMORY_LIMIT", "warning", f"WSL{wsl}", "dataloader_pin_memory: false")
    assert_row(wsl_pinned_memory, _pin_snap(wsl, plan), [expected] if fires else [])


# ----------------------------------------------------------------- WSL's RAM cap
QWEN3B = 3_085_938_688  # Qwen2.5-3B: needs 12_343_754_752 bytes = 11.5 GiB


def _ram_snap(wsl: int | None, ram: int | None, params: int | None) -> dict:
    return {"host": {"os": "linux", "wsl": wsl, "ram_bytes": ram}, "plan": {"model_params": params}}


# (case, wsl, ram, params, expected (title, fix) or None)
RAM_ROWS = [
    (
        "8 GiB for a 3B model",
        2,
        8 * GIB,
        QWEN3B,
        ("WSL2 has 8.0 GiB RAM", "a 3.1B model needs ~11.5 GiB", "memory=15GB"),
    ),
    (
        "one byte short",
        1,
        4 * QWEN3B - 1,
        QWEN3B,
        ("WSL1 has 11.5 GiB RAM", "a 3.1B model needs ~11.5 GiB", "memory=15GB"),
    ),
    ("exactly enough", 2, 4 * QWEN3B, QWEN3B, None),
    (
        "2.45B rounds to 2.5B: 9.8e9 bytes",
        2,
        8 * GIB,
        2_450_000_000,
        ("WSL2 has 8.0 GiB RAM", "a 2.5B model needs ~9.1 GiB", "memory=13GB"),
    ),
    (
        "7B in 16 GiB: needs 28e9 bytes",
        2,
        16 * GIB,
        7_000_000_000,
        ("WSL2 has 16.0 GiB RAM", "a 7.0B model needs ~26.1 GiB", "memory=30GB"),
    ),
    ("native Linux, 8 GiB", None, 8 * GIB, QWEN3B, None),
    ("WSL, RAM unknown", 2, None, QWEN3B, None),
    ("WSL, model size unknown", 2, 8 * GIB, None, None),
    ("WSL, model size 0", 2, 8 * GIB, 0, None),
]


@pytest.mark.parametrize(
    ("wsl", "ram", "params", "expected"), [r[1:] for r in RAM_ROWS], ids=[r[0] for r in RAM_ROWS]
)
def test_wsl_ram_rows(wsl, ram, params, expected) -> None:
    want = [("WSL_VM_RAM_CAP", "warning", *expected)] if expected else []
    assert_row(wsl_ram, _ram_snap(wsl, ram, params), want)


# ----------------------------------------------------------------- the console's encoding
def _enc_snap(enc: str | None, env: dict) -> dict:
    return {"host": {"os": "windows", "stdout_encoding": enc}, "env": env}


# (case, stdout encoding, env, fires)
ENCODING_ROWS = [
    ("utf-8", "utf-8", {}, False),
    ("UTF-8", "UTF-8", {}, False),
    ("utf8", "utf8", {}, False),
    ("UTF_8", "UTF_8", {}, False),
    ("unknown", None, {}, False),
    ("gbk", "gbk", {}, True),
    ("cp1252 (Windows, Western)", "cp1252", {}, True),
    ("gbk, PYTHONUTF8=1", "gbk", {"PYTHONUTF8": "1"}, False),
    ("gbk, PYTHONUTF8=0", "gbk", {"PYTHONUTF8": "0"}, True),
    ("gbk, PYTHONIOENCODING=utf-8", "gbk", {"PYTHONIOENCODING": "utf-8"}, False),
    ("gbk, PYTHONIOENCODING=UTF8:replace", "gbk", {"PYTHONIOENCODING": "UTF8:replace"}, False),
    ("gbk, PYTHONIOENCODING=utf_8", "gbk", {"PYTHONIOENCODING": "utf_8"}, False),
    ("gbk, PYTHONIOENCODING=gbk", "gbk", {"PYTHONIOENCODING": "gbk"}, True),
]


@pytest.mark.parametrize(
    ("enc", "env", "fires"), [r[1:] for r in ENCODING_ROWS], ids=[r[0] for r in ENCODING_ROWS]
)
def test_console_encoding_rows(enc, env, fires) -> None:
    expected = (
        "WIN_CONSOLE_GBK_ENCODING",
        "warning",
        f"encoding is {enc}",
        f"'{enc}' codec",
        "PYTHONUTF8=1",
    )
    assert_row(console_encoding, _enc_snap(enc, env), [expected] if fires else [])


# ----------------------------------------------------------------- which `python`
VENV = "/opt/torch/.venv"  # the recorded h100 machine (tests/fixtures/machines/h100)
WIN_EXE = "C:\\Users\\me\\envs\\shop\\Scripts\\python.exe"
STORE = "C:\\Users\\me\\AppData\\Local\\Microsoft\\WindowsApps\\python.exe"
# (case, os, python facts, expected (title, detail, fix) or None)
INTERPRETER_ROWS = [
    (
        "h100: python3 and python in the same venv bin",
        "linux",
        {"executable": f"{VENV}/bin/python3", "which_python": f"{VENV}/bin/python", "venv": VENV},
        None,
    ),
    (
        "the system python first on PATH",
        "linux",
        {"executable": f"{VENV}/bin/python3", "which_python": "/usr/bin/python", "venv": VENV},
        (
            "`python` on PATH is /usr/bin/python",
            f"not this environment's {VENV}/bin/python3",
            f"activate the environment ({VENV})",
            f"{VENV}/bin/python3 -m",
        ),
    ),
    (
        "no venv recorded: the executable's directory",
        "linux",
        {"executable": "/opt/conda/bin/python", "which_python": "/usr/bin/python"},
        (
            "`python` on PATH is /usr/bin/python",
            "/opt/conda/bin/python",
            "activate the environment (/opt/conda/bin), or call /opt/conda/bin/python -m ...",
        ),
    ),
    (
        "Linux paths differ in case only: different directories",
        "linux",
        {"executable": "/opt/Env/bin/python", "which_python": "/opt/env/bin/python"},
        (
            "`python` on PATH is /opt/env/bin/python",
            "/opt/Env/bin/python",
            "activate the environment (/opt/Env/bin), or call /opt/Env/bin/python -m ...",
        ),
    ),
    (
        "Windows paths differ in case only: the same directory",
        "windows",
        {"executable": WIN_EXE, "which_python": WIN_EXE.lower()},
        None,
    ),
    (
        "Windows: the Store stub",
        "windows",
        {"executable": WIN_EXE, "which_python": STORE},
        (
            f"Microsoft Store stub ({STORE})",
            f"put C:\\Users\\me\\envs\\shop\\Scripts first on PATH, or call {WIN_EXE} -m ...",
        ),
    ),
    (
        "Windows: another interpreter",
        "windows",
        {"executable": WIN_EXE, "which_python": "C:\\Python312\\python.exe", "venv": None},
        (
            "`python` on PATH is C:\\Python312\\python.exe",
            WIN_EXE,
            f"activate the environment (C:\\Users\\me\\envs\\shop\\Scripts), or call {WIN_EXE} -m ...",
        ),
    ),
    ("which python unknown", "linux", {"executable": f"{VENV}/bin/python3"}, None),
    ("executable unknown", "linux", {"which_python": "/usr/bin/python"}, None),
]


@pytest.mark.parametrize(
    ("os", "py", "expected"),
    [r[1:] for r in INTERPRETER_ROWS],
    ids=[r[0] for r in INTERPRETER_ROWS],
)
def test_interpreter_rows(os, py, expected) -> None:
    want = [("WRONG_PYTHON_INTERPRETER", "warning", *expected)] if expected else []
    assert_row(interpreter, {"host": {"os": os, "python": py}}, want)


def test_interpreter_without_python_facts() -> None:
    assert_row(interpreter, {"host": {"os": "linux", "python": "3.12"}}, [])


# ----------------------------------------------------------------- torch.compile on Windows
# (case, os, torch_compile, triton record (absent key = unknown), fires)
ABSENT = object()


def _compile_snap(os: str, compile_: bool | None, triton: object) -> dict:
    return {
        "host": {"os": os},
        "plan": {"torch_compile": compile_},
        "packages": {} if triton is ABSENT else {"triton": triton},
    }


COMPILE_ROWS = [
    ("Windows, compile, no Triton", "windows", True, None, True),
    ("Windows, compile, triton-windows", "windows", True, {"version": "3.4.0"}, False),
    ("Windows, compile, packages unknown", "windows", True, ABSENT, False),
    ("Windows, no compile", "windows", False, None, False),
    ("Windows, compile not said", "windows", None, None, False),
    ("Linux, compile, no Triton", "linux", True, None, False),
]


@pytest.mark.parametrize(
    ("os", "compile_", "triton", "fires"),
    [r[1:] for r in COMPILE_ROWS],
    ids=[r[0] for r in COMPILE_ROWS],
)
def test_windows_compile_rows(os, compile_, triton, fires) -> None:
    expected = ("WIN_TORCH_COMPILE_NO_TRITON", "error", "without Triton", "torch_compile=false")
    assert_row(windows_compile, _compile_snap(os, compile_, triton), [expected] if fires else [])


# ----------------------------------------------------------------- hf-xet stalls
def _xet_snap(version: str | None, env: dict | None, dump: bool) -> dict:
    snap: dict = {"packages": {"hf-xet": {"version": version} if version else None}}
    if env is not None:
        snap["env"] = env
    if dump:
        snap["source"] = {"kind": "dump"}
    return snap


# (case, hf-xet version, env section (None = not collected), from a dump, fires)
XET_ROWS = [
    ("1.5.1, variable not set", "1.5.1", {}, False, True),
    ("1.1.0, variable not set", "1.1.0", {"HF_HOME": "/data/hf"}, False, True),
    ("1.5.2: fixed", "1.5.2", {}, False, False),
    ("1.6.0", "1.6.0", {}, False, False),
    ("1.5.1, HF_HUB_DISABLE_XET=1", "1.5.1", {"HF_HUB_DISABLE_XET": "1"}, False, False),
    ("1.5.1, env not collected", "1.5.1", None, False, False),
    ("1.5.1, a pasted dump without the variable", "1.5.1", {"HF_HOME": "/x"}, True, False),
    ("hf-xet not installed", None, {}, False, False),
]


@pytest.mark.parametrize(
    ("version", "env", "dump", "fires"), [r[1:] for r in XET_ROWS], ids=[r[0] for r in XET_ROWS]
)
def test_hf_xet_rows(version, env, dump, fires) -> None:
    expected = (
        "HF_XET_DOWNLOAD_STALL",
        "warning",
        f"hf-xet {version} (< 1.5.2)",
        '"hf-xet>=1.5.2"',
    )
    assert_row(hf_xet, _xet_snap(version, env, dump), [expected] if fires else [])


SNAPSHOTS = [
    *[(r[0], _cvd_snap(*r[1:4])) for r in CVD_ROWS],
    *[(r[0], _libcuda_snap(*r[1:4])) for r in LIBCUDA_ROWS],
    *[(r[0], _pin_snap(*r[1:3])) for r in PIN_ROWS],
    *[(r[0], _ram_snap(*r[1:4])) for r in RAM_ROWS],
    *[(r[0], _enc_snap(*r[1:3])) for r in ENCODING_ROWS],
    *[(r[0], {"host": {"os": r[1], "python": r[2]}}) for r in INTERPRETER_ROWS],
    *[(r[0], _compile_snap(*r[1:4])) for r in COMPILE_ROWS],
    *[(r[0], _xet_snap(*r[1:4])) for r in XET_ROWS],
]
