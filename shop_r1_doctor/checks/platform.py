"""The platform: WSL, Windows, the interpreter, the console encoding, Hub downloads."""

from __future__ import annotations

import ntpath
import posixpath
from collections.abc import Iterator

from shop_r1_doctor.checks._base import (
    bytes_gib,
    env_set,
    finding,
)
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.knowledge import load_compat
from shop_r1_doctor.sections import PythonFacts
from shop_r1_doctor.target_python import pip_command

WSL_LIB = "/usr/lib/wsl/lib"
UTF8 = ("utf-8", "utf8", "utf_8")


def _python(facts: Facts) -> PythonFacts:
    return facts.host.python or PythonFacts()


def wsl_cuda_visible_devices(facts: Facts) -> Iterator[Finding]:
    cvd = facts.env_value("CUDA_VISIBLE_DEVICES")
    if not facts.wsl or cvd is None:
        return
    if not all(isinstance(g.index, int) for g in facts.gpus):
        return  # GPUs named without indices: which ones CVD names is unknown
    items = [x.strip() for x in cvd.split(",") if x.strip()]
    indices = {g.index for g in facts.gpus}
    bad = (
        not items
        or any(x.startswith("-") for x in items)
        or (
            bool(facts.gpus)
            and all(x.isdigit() for x in items)
            and not any(int(x) in indices for x in items)
        )
    )
    if bad:
        yield finding(
            "WSL_CUDA_INIT_DOUBLE_FREE",
            f"CUDA_VISIBLE_DEVICES={cvd!r} on WSL{facts.wsl}: CUDA init can abort with 'double free'",
            detail="'free(): double free detected in tcache 2' then SIGABRT inside "
            "torch.cuda.is_available().",
            fix="unset CUDA_VISIBLE_DEVICES (or export CUDA_VISIBLE_DEVICES=0)",
        )


def wsl_libcuda(facts: Facts) -> Iterator[Finding]:
    if not facts.wsl or facts.host.libcuda_in_ldconfig is not False:
        return
    ld = facts.env_value("LD_LIBRARY_PATH")
    if ld is not None and WSL_LIB in {entry.rstrip("/") for entry in ld.split(":")}:
        return
    yield finding(  # the fix is codes.yaml's: export LD_LIBRARY_PATH=/usr/lib/wsl/lib:...
        "WSL_LIBCUDA_NOT_LINKABLE",
        f"libcuda.so is not in the linker cache and {WSL_LIB} is not on LD_LIBRARY_PATH",
        detail="Triton and torch.compile fail with 'libcuda.so cannot found!'.",
    )


def wsl_pinned_memory(facts: Facts) -> Iterator[Finding]:
    if not facts.wsl or not facts.has_plan or facts.plan.dataloader_pin_memory is False:
        return
    yield finding(
        "WSL_PINNED_MEMORY_LIMIT",
        f"pinned host memory is limited in WSL{facts.wsl} (HF Trainer pins by default)",
        detail="OOM at about half of the VRAM with pin_memory=True.",
        fix="dataloader_pin_memory: false",
    )


def wsl_ram(facts: Facts) -> Iterator[Finding]:
    ram, params = facts.host.ram_bytes, facts.plan.model_params
    if not facts.wsl or not isinstance(ram, int) or not params:
        return
    need = params * 2 * 2  # bf16 weights, twice: loading materialises a copy
    if ram < need:
        yield finding(
            "WSL_VM_RAM_CAP",
            f"WSL{facts.wsl} has {bytes_gib(ram)} RAM; loading a {params / 1e9:.1f}B model needs ~{bytes_gib(need)}",
            detail="WSL2 caps the VM at about half of the host's memory: the loader is 'Killed'.",
            fix=f"%UserProfile%\\.wslconfig: [wsl2] memory={need // 2**30 + 4}GB, then `wsl --shutdown`",
        )


def console_encoding(facts: Facts) -> Iterator[Finding]:
    enc = facts.host.stdout_encoding
    if not isinstance(enc, str) or enc.lower().replace("-", "_") in ("utf_8", "utf8"):
        return
    if facts.env_value("PYTHONUTF8") == "1":
        return
    io = facts.env_value("PYTHONIOENCODING")
    if io is not None and io.lower().startswith(UTF8):
        return
    yield finding(
        "WIN_CONSOLE_GBK_ENCODING",
        f"the console encoding is {enc}: printing emoji or symbols raises UnicodeEncodeError",
        detail=f"'UnicodeEncodeError: '{enc}' codec can't encode character' after work is done.",
        fix="set PYTHONUTF8=1 (Windows: setx PYTHONUTF8 1)",
    )


def interpreter(facts: Facts) -> Iterator[Finding]:
    py = _python(facts)
    exe, which = py.executable, py.which_python
    if not isinstance(exe, str) or not isinstance(which, str):
        return
    path = ntpath if facts.os == "windows" else posixpath
    if "WindowsApps" in which:
        yield finding(
            "WRONG_PYTHON_INTERPRETER",
            f"`python` on PATH is the Microsoft Store stub ({which})",
            detail="Scripts calling `python` run nothing (or another Python) and exit quickly.",
            fix=f"put {path.dirname(exe)} first on PATH, or call {exe} -m ...",
        )
        return
    if path.normcase(path.dirname(exe)) == path.normcase(path.dirname(which)):
        return
    yield finding(
        "WRONG_PYTHON_INTERPRETER",
        f"`python` on PATH is {which}, not this environment's {exe}",
        detail="Launch scripts that call `python` get another interpreter without your packages: "
        "'No module named ...', or an exit 0 in seconds with an empty log.",
        fix=f"activate the environment ({py.venv or path.dirname(exe)}), or call {exe} -m ...",
    )


def windows_compile(facts: Facts) -> Iterator[Finding]:
    if facts.os != "windows" or facts.plan.torch_compile is not True:
        return
    if facts.installed("triton") is not False:
        return
    yield finding(
        "WIN_TORCH_COMPILE_NO_TRITON",
        "torch_compile on Windows without Triton",
        detail="'Cannot find a working triton installation'.",
    )


def hf_xet(facts: Facts) -> Iterator[Finding]:
    xv = facts.version("hf-xet")
    fixed = load_compat().hf_xet.stall_fixed_in
    if xv is None or xv >= fixed or env_set(facts, "HF_HUB_DISABLE_XET") is not False:
        return
    yield finding(
        "HF_XET_DOWNLOAD_STALL",
        f"hf-xet {xv} (< {fixed}) downloads can stall at 0% or 99% on some networks",
        detail=load_compat().hf_xet.source,
        fix=f'{pip_command(facts)} install -U "hf-xet>={fixed}", or export HF_HUB_DISABLE_XET=1',
    )


CHECKS = (
    wsl_cuda_visible_devices,
    wsl_libcuda,
    wsl_pinned_memory,
    wsl_ram,
    console_encoding,
    interpreter,
    windows_compile,
    hf_xet,
)
