"""Children of the spawn start method (Windows' and macOS's default; DataLoader workers with
`multiprocessing_context="spawn"` here): a spawned child starts a fresh interpreter and
imports the parent's main module to find what it was handed.

- The notebook case: the Dataset class is defined in an interactive `__main__` (a Jupyter
  kernel's, here `python -c`, which has the same `<module '__main__' (built-in)>`), which the
  worker cannot import: pickle cannot find the class.
- The script without `if __name__ == '__main__':`: the worker re-imports the script, which
  starts a DataLoader again at import time, and multiprocessing refuses.
- A negative: the guarded script's worker raises the user's own KeyError.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "spawn_main"
EXPECTED = ("SPAWN_CHILD_CANNOT_IMPORT_MAIN",)
CASES = (
    FaultCase(
        FAMILY,
        "notebook_class_spawn_worker",
        EXPECTED,
        "a Dataset class defined in an interactive __main__ (`python -c`, as a notebook kernel's),"
        " iterated by DataLoader(num_workers=1, multiprocessing_context='spawn')",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "script_without_main_guard",
        EXPECTED,
        "train.py iterates DataLoader(num_workers=1, multiprocessing_context='spawn') at module"
        " level, with no `if __name__ == '__main__':` guard",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "user_keyerror_in_spawned_worker",
        (),
        "the same DataLoader under the guard, in a script: the Dataset's __getitem__ reads a key"
        " its record lacks (the user's own bug) in the spawned worker",
        timeout=90,
    ),
)

_DATASET = """\
import torch
from torch.utils.data import DataLoader, Dataset


class CustomDataset(Dataset):
    def __init__(self):
        self.rows = [{"input_ids": [i, i + 1]} for i in range(4)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i]{key})

"""
_LOOP = """\
loader = DataLoader(CustomDataset(), batch_size=2, num_workers=1, multiprocessing_context="spawn")
for batch in loader:
    print(batch.shape)
"""
SCRIPTS = {
    "notebook_class_spawn_worker": _DATASET.replace("{key}", '["input_ids"]') + _LOOP,
    "script_without_main_guard": _DATASET.replace("{key}", '["input_ids"]') + _LOOP,
    "user_keyerror_in_spawned_worker": _DATASET.replace("{key}", '["labels"]')
    + 'if __name__ == "__main__":\n'
    + "".join(f"    {line}\n" for line in _LOOP.splitlines()),
}


def _run(work: Path, name: str) -> None:
    script = SCRIPTS[name]
    if name == "notebook_class_spawn_worker":
        argv = [sys.executable, "-c", script]
        print("+", sys.executable, "-c '<the notebook cell>'", flush=True)
    else:
        (work / "train.py").write_text(script, encoding="utf-8")
        argv = [sys.executable, "train.py"]
        print("+", shlex.join(argv), flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def notebook_class_spawn_worker(work: Path) -> None:
    _run(work, "notebook_class_spawn_worker")


def script_without_main_guard(work: Path) -> None:
    _run(work, "script_without_main_guard")


def user_keyerror_in_spawned_worker(work: Path) -> None:
    _run(work, "user_keyerror_in_spawned_worker")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
