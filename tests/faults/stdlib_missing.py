"""A Python built without an optional stdlib extension: `_lzma`, `_sqlite3` or `_ctypes`
is missing from lib-dynload, as a pyenv or source build makes when liblzma-dev,
libsqlite3-dev or libffi-dev was not installed (CPython's build skips the module and says
so only in its build log). The stack imports it later: datasets imports lzma at import
time, torch imports ctypes, a tracker or the user's script opens a SQLite database.

`prepare` makes, once per cache, a private root per missing module from this machine's
CPython install: its executable copied (so the prefix is the root), every stdlib file and
every lib-dynload module linked one by one except the missing one, and a site-packages
whose one .pth adds this environment's site-packages, as a venv made from that Python with
the same packages installed. The driver writes the user's script into the case's dir and
runs it with that Python (the command is printed first).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "stdlib_missing"
EXPECTED = ("PYTHON_STDLIB_MODULE_MISSING",)  # proposed: not in codes.yaml
ENV = "SHOP_R1_FAULT_INCOMPLETE_PYTHONS"  # the directory holding one root per module
MISSING = ("_lzma", "_sqlite3", "_ctypes")
CASES = (
    FaultCase(
        FAMILY,
        "lzma_import_datasets",
        EXPECTED,
        "a copy of this machine's CPython install whose lib-dynload lacks _lzma (as built"
        " without liblzma-dev), the environment's packages on its path: `python train.py`,"
        " whose first line is `from datasets import load_dataset` (PYTHON_STDLIB_MODULE_MISSING"
        " is a proposed code, not in codes.yaml: the interpreter was built without a stdlib"
        " extension the stack imports)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "ctypes_import_torch",
        EXPECTED,
        "the same copy lacking _ctypes instead (as built without libffi-dev): `python"
        " train.py`, whose first line is `import torch`",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "sqlite3_prompt_db",
        EXPECTED,
        "the same copy lacking _sqlite3 instead (as built without libsqlite3-dev): `python"
        " train.py`, which reads its prompts from a SQLite file with `import sqlite3` and"
        " datasets' Dataset.from_sql",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "user_module_missing",
        (),
        "the copy lacking _lzma, not reached: `python train.py` imports torch, then its own"
        " `reward_utils`, a module the user never wrote (No module named 'reward_utils')",
        prepare="prepare",
        timeout=60,
    ),
)

SCRIPTS = {
    "lzma_import_datasets": """from datasets import load_dataset

ds = load_dataset("json", data_files="prompts.jsonl", split="train")
print(ds)
""",
    "ctypes_import_torch": """import torch

model = torch.nn.Linear(16, 4)
print(model(torch.randn(2, 16)).shape)
""",
    "sqlite3_prompt_db": """import sqlite3

from datasets import Dataset

con = sqlite3.connect("prompts.db")
ds = Dataset.from_sql("SELECT prompt FROM prompts", con)
print(ds)
""",
    "user_module_missing": """import torch

from reward_utils import format_reward

print(format_reward(["<answer>4</answer>"]), torch.__version__)
""",
}


def _root(cache: Path, module: str) -> Path:
    return cache / "incomplete-python" / f"without{module}"


def _build_root(root: Path, module: str) -> None:
    """The copy: executable, stdlib links, lib-dynload links but `module`'s, a venv .pth."""
    executable = Path(sys.executable).resolve()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
    if not any(dynload.glob(f"{module}.*.so")):
        raise Unavailable(f"this Python has no {module} to leave out of its copy ({dynload})")
    partial = root.with_name(root.name + ".partial")
    if partial.exists():
        subprocess.run(["rm", "-rf", str(partial)], check=True)
    lib = partial / "lib" / stdlib.name
    (partial / "bin").mkdir(parents=True)
    (lib / "lib-dynload").mkdir(parents=True)
    (lib / "site-packages").mkdir()
    # A copy, not a link: the interpreter finds its prefix from where its file lies.
    subprocess.run(["cp", str(executable), str(partial / "bin" / executable.name)], check=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("lib-dynload", "site-packages", "test"):
            (lib / entry.name).symlink_to(entry)
    for entry in dynload.iterdir():
        if not entry.name.startswith(f"{module}."):
            (lib / "lib-dynload" / entry.name).symlink_to(entry)
    site = sysconfig.get_paths()["purelib"]
    (lib / "site-packages" / "environment.pth").write_text(
        f"import site; site.addsitedir({site!r})\n", encoding="utf-8"
    )
    os.replace(partial, root)


def prepare(cache: Path) -> dict[str, str]:
    """One incomplete copy of this Python per module in MISSING, built once into `cache`."""
    if sys.platform != "linux":
        raise Unavailable("the copy of the interpreter is made for Linux's lib-dynload layout")
    for module in MISSING:
        root = _root(cache, module)
        if not (root / "bin").exists():
            _build_root(root, module)
    return {ENV: str(cache / "incomplete-python")}


def _run(work: Path, module: str, script: str) -> None:
    """Run the user's script with the copy that lacks `module`, from the case's dir."""
    root = Path(os.environ[ENV]) / f"without{module}"
    python = next((root / "bin").iterdir())
    (work / "train.py").write_text(SCRIPTS[script], encoding="utf-8")
    argv = [str(python), "train.py"]
    print("+", shlex.join(argv), flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def lzma_import_datasets(work: Path) -> None:
    (work / "prompts.jsonl").write_text('{"prompt": "2+2?"}\n', encoding="utf-8")
    _run(work, "_lzma", "lzma_import_datasets")


def ctypes_import_torch(work: Path) -> None:
    _run(work, "_ctypes", "ctypes_import_torch")


def sqlite3_prompt_db(work: Path) -> None:
    import sqlite3  # this environment's own Python has it: the user's database exists

    con = sqlite3.connect(work / "prompts.db")
    con.execute("CREATE TABLE prompts (prompt TEXT)")
    con.execute("INSERT INTO prompts VALUES ('2+2?')")
    con.commit()
    con.close()
    _run(work, "_sqlite3", "sqlite3_prompt_db")


def user_module_missing(work: Path) -> None:
    _run(work, "_lzma", "user_module_missing")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
