"""torch without NumPy: an environment where torch was installed and NumPy was not (torch's
wheel does not require it), and the script converts a tensor to or from a NumPy array.

`prepare` makes, once per cache, a venv (`python -m venv --without-pip`) whose
site-packages links every entry of this environment's site-packages except numpy's (the
package, its dist-info, numpy.libs): the same torch, no NumPy. torch imports with a
warning (`Failed to initialize NumPy`); the conversion raises. The driver writes the
user's script into the case's dir and runs it with that venv's python (printed first).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "numpy_missing"
ENV = "SHOP_R1_FAULT_NO_NUMPY_VENV"
EXPECTED = ("PACKAGE_REQUESTED_NOT_INSTALLED",)
CASES = (
    FaultCase(
        FAMILY,
        "tensor_numpy_metrics",
        EXPECTED,
        "a venv with this environment's torch 2.13 and no numpy: the eval step's"
        " `logits.argmax(-1).numpy()`",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "from_numpy_dataloader_worker",
        EXPECTED,
        "the same venv: a Dataset's __getitem__ calls torch.from_numpy on the token buffer it"
        " read (a bytearray), in a DataLoader worker (num_workers=1)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "user_keyerror_no_numpy",
        (),
        "the same venv (torch warns `Failed to initialize NumPy` at import): the script"
        " reads a key its batch lacks (the user's own bug), no conversion to NumPy",
        prepare="prepare",
        timeout=60,
    ),
)

SCRIPTS = {
    "tensor_numpy_metrics": """\
import torch

model = torch.nn.Linear(16, 3)
with torch.no_grad():
    logits = model(torch.randn(8, 16))
preds = logits.argmax(-1).numpy()
labels = torch.randint(0, 3, (8,)).numpy()
print("accuracy", (preds == labels).mean())
""",
    "from_numpy_dataloader_worker": """\
import torch
from torch.utils.data import DataLoader, Dataset


class Tokens(Dataset):
    def __init__(self):
        self.buf = bytearray(range(64))

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.from_numpy(self.buf[i * 16 : (i + 1) * 16]).long()


for batch in DataLoader(Tokens(), batch_size=2, num_workers=1):
    print(batch.shape)
""",
    "user_keyerror_no_numpy": """\
import torch

batch = {"input_ids": torch.ones(2, 8, dtype=torch.long)}
model = torch.nn.Embedding(16, 4)
out = model(batch["input_ids"])
loss = torch.nn.functional.cross_entropy(out.view(-1, 4), batch["labels"].view(-1))
""",
}


def prepare(cache: Path) -> dict[str, str]:
    """A venv linking this environment's packages but numpy's, made once into `cache`."""
    root = cache / "no-numpy-venv"
    if not (root / "bin" / "python").exists():
        partial = root.with_name(root.name + ".partial")
        subprocess.run(["rm", "-rf", str(partial)], check=True)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(partial)], check=True)
        purelib = Path(sysconfig.get_paths()["purelib"])
        rel = purelib.relative_to(sys.prefix)
        target = partial / rel
        for entry in purelib.iterdir():
            if entry.name == "numpy" or entry.name.startswith(("numpy-", "numpy.")):
                continue
            (target / entry.name).symlink_to(entry)
        # venv writes absolute paths into pyvenv.cfg and bin/: rename is safe (no scripts).
        subprocess.run(["rm", "-rf", str(root)], check=True)
        os.replace(partial, root)
        cfg = root / "pyvenv.cfg"
        cfg.write_text(cfg.read_text().replace(str(partial), str(root)), encoding="utf-8")
    return {ENV: str(root)}


def _run(work: Path, name: str) -> None:
    python = Path(os.environ[ENV]) / "bin" / "python"
    (work / "train.py").write_text(SCRIPTS[name], encoding="utf-8")
    argv = [str(python), "train.py"]
    print("+", shlex.join(argv), flush=True)
    sys.exit(subprocess.run(argv, cwd=work, check=False).returncode)


def tensor_numpy_metrics(work: Path) -> None:
    _run(work, "tensor_numpy_metrics")


def from_numpy_dataloader_worker(work: Path) -> None:
    _run(work, "from_numpy_dataloader_worker")


def user_keyerror_no_numpy(work: Path) -> None:
    _run(work, "user_keyerror_no_numpy")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
