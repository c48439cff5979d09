"""A file in the script's directory named like a package of the stack or a stdlib module
(`datasets.py`, `tokenizers.py`, `torch.py`, `random.py`): `python train.py` puts that
directory first on sys.path, so every `import datasets` (the user's and the stack's own)
gets the user's file. It fails where the file lacks what the importer wants: `cannot import
name ... (/path/datasets.py)`, `partially initialized module` when the file imports the
package it shadows, or deep inside the stack (transformers importing tokenizers, tempfile
importing random).

Each driver writes the user's files into the case's dir and runs `python train.py` there
(the command is printed first). The negative is the same shape with the user's own module:
a helper that lacks the function the script imports.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "shadowed_module"
EXPECTED = ("MODULE_SHADOWED_BY_LOCAL_FILE",)  # proposed: not in codes.yaml
CASES = (
    FaultCase(
        FAMILY,
        "datasets_py_circular",
        EXPECTED,
        "the user's data-preparation script saved as datasets.py (it does `from datasets import"
        " load_dataset`) beside train.py, which does the same: `python train.py`"
        " (MODULE_SHADOWED_BY_LOCAL_FILE is a proposed code, not in codes.yaml: a file in the"
        " script's directory or on sys.path has a package's or stdlib module's name and is"
        " imported in its place)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "tokenizers_py_inside_transformers",
        EXPECTED,
        "the user's scratch file tokenizers.py beside train.py, which loads a tokenizer with"
        " transformers' AutoTokenizer: `python train.py` (transformers imports the file)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "random_py_stdlib",
        EXPECTED,
        "the user's helper random.py (shuffle and sample rows) beside train.py, which imports"
        " torch: `python train.py` (tempfile, imported by torch, imports the file)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "torch_py_attribute",
        EXPECTED,
        "the user's first experiment saved as torch.py (`import torch; x = torch.ones(3)`)"
        " beside train.py: `python train.py`",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "own_helper_lacks_function",
        (),
        "the user's own helper utils.py lacks tokenize_batch, which train.py imports from it:"
        " `python train.py` (cannot import name 'tokenize_batch' from 'utils')",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "own_modules_circular",
        (),
        "the user's own rewards.py and data.py import each other at module level: `python"
        " train.py` (cannot import name ... from partially initialized module 'rewards')",
        timeout=60,
    ),
)

FILES = {
    "datasets_py_circular": {
        "datasets.py": """# prepare the prompts for GRPO
from datasets import load_dataset

ds = load_dataset("json", data_files="prompts.jsonl", split="train")
ds.to_json("prompts.clean.jsonl")
""",
        "train.py": """from datasets import load_dataset

ds = load_dataset("json", data_files="prompts.clean.jsonl", split="train")
print(ds)
""",
    },
    "tokenizers_py_inside_transformers": {
        "tokenizers.py": """# trying out chat templates
MESSAGES = [{"role": "user", "content": "2 + 2 ?"}]
""",
        "train.py": """from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
print(tok("2 + 2 ?"))
""",
    },
    "random_py_stdlib": {
        "random.py": """def shuffle_rows(rows, seed=0):
    order = sorted(range(len(rows)), key=lambda i: (i * 7919 + seed) % 104729)
    return [rows[i] for i in order]
""",
        "train.py": """import torch

from random import shuffle_rows

print(shuffle_rows([1, 2, 3]), torch.ones(2))
""",
    },
    "torch_py_attribute": {
        "torch.py": """import torch

x = torch.ones(3)
print(x * 2)
""",
        "train.py": """import torch

model = torch.nn.Linear(16, 4)
print(model(torch.randn(2, 16)).shape)
""",
    },
    "own_helper_lacks_function": {
        "utils.py": """def tokenize(text):
    return text.split()
""",
        "train.py": """import torch

from utils import tokenize_batch

print(tokenize_batch(["2 + 2 ?"]), torch.ones(1))
""",
    },
    "own_modules_circular": {
        "rewards.py": """from data import ANSWER_TAG


def format_reward(completions):
    return [1.0 if ANSWER_TAG in c else 0.0 for c in completions]
""",
        "data.py": """from rewards import format_reward

ANSWER_TAG = "<answer>"
CHECKS = [format_reward]
""",
        "train.py": """from rewards import format_reward

print(format_reward(["<answer>4</answer>"]))
""",
    },
}


def _run(work: Path, case: str) -> None:
    for name, text in FILES[case].items():
        (work / name).write_text(text, encoding="utf-8")
    argv = ["python", "train.py"]
    print("+", shlex.join(argv), flush=True)
    sys.exit(subprocess.run([sys.executable, "train.py"], cwd=work, check=False).returncode)


def datasets_py_circular(work: Path) -> None:
    (work / "prompts.jsonl").write_text('{"prompt": "2 + 2 ?"}\n', encoding="utf-8")
    _run(work, "datasets_py_circular")


def tokenizers_py_inside_transformers(work: Path) -> None:
    _run(work, "tokenizers_py_inside_transformers")


def random_py_stdlib(work: Path) -> None:
    _run(work, "random_py_stdlib")


def torch_py_attribute(work: Path) -> None:
    _run(work, "torch_py_attribute")


def own_helper_lacks_function(work: Path) -> None:
    _run(work, "own_helper_lacks_function")


def own_modules_circular(work: Path) -> None:
    _run(work, "own_modules_circular")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
