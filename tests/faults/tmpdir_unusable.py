"""TMPDIR names a directory that does not exist or that the user cannot write, on a machine
whose /tmp and /var/tmp are read-only (a container with a read-only root file system, as
Kubernetes' readOnlyRootFilesystem makes it) and whose working directory the user cannot
write either: Python's tempfile tries TMPDIR, TEMP, TMP, /tmp, /var/tmp, /usr/tmp and the
working directory, and raises when none takes a file. A scheduler's TMPDIR for a job
directory it never created, or a scratch path the job's user cannot write, does this
wherever /tmp is not writable.

Each case runs as nobody (the checkout, the working directory, is root's) in a private
mount namespace with read-only tmpfs over /tmp and /var/tmp; the case's own dir, under
/tmp, is hidden with it, and the drivers do not use it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "tmpdir_unusable"
EXPECTED = ("CACHE_DIR_NOT_WRITABLE",)
READONLY = ("/tmp", "/var/tmp")
MISSING = {"TMPDIR": "/scratch/job-4242/tmp"}  # a job directory the scheduler never made
NOT_WRITABLE = {"TMPDIR": "/srv"}  # exists, root's, mode 755
CASES = (
    FaultCase(
        FAMILY,
        "compile_tmpdir_missing",
        EXPECTED,
        "TMPDIR=/scratch/job-4242/tmp (no such directory), /tmp and /var/tmp read-only tmpfs,"
        " the run as nobody from a directory it cannot write: a script that imports torch to"
        " torch.compile a step on CPU",
        env=MISSING,
        readonly=READONLY,
        run_as="nobody",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "datasets_map_tmpdir_not_writable",
        EXPECTED,
        "TMPDIR=/srv (root's, mode 755), /tmp and /var/tmp read-only tmpfs, the run as nobody"
        " from a directory it cannot write: a script that imports datasets to map a"
        " tokenizing function over in-memory prompts",
        env=NOT_WRITABLE,
        readonly=READONLY,
        run_as="nobody",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "pip_install_tmpdir_not_writable",
        EXPECTED,
        "TMPDIR=/srv (root's, mode 755), /tmp and /var/tmp read-only tmpfs, the run as nobody"
        " from a directory it cannot write: `pip install --dry-run --no-deps six` (PIP_NO_CACHE_DIR=1:"
        " nobody's HOME is root's, whose pip cache it may not use)",
        env={**NOT_WRITABLE, "PIP_NO_CACHE_DIR": "1"},
        readonly=READONLY,
        run_as="nobody",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "config_missing_tmpdir_unusable",
        (),
        "TMPDIR=/scratch/job-4242/tmp, /tmp and /var/tmp read-only, as nobody, not reached: the"
        " user's script opens configs/grpo.yaml, which is not there, before importing anything",
        env=MISSING,
        readonly=READONLY,
        run_as="nobody",
        timeout=90,
    ),
)


def compile_tmpdir_missing(work: Path) -> None:
    import torch

    def step(x, y):
        return torch.nn.functional.gelu(x @ y).sum(dim=-1)

    print(torch.compile(step)(torch.randn(64, 64), torch.randn(64, 64)).shape)


def datasets_map_tmpdir_not_writable(work: Path) -> None:
    from datasets import Dataset

    ds = Dataset.from_dict({"prompt": [f"What is {i} + {i}?" for i in range(64)]})
    print(ds.map(lambda row: {"words": row["prompt"].split()}))


def pip_install_tmpdir_not_writable(work: Path) -> None:
    # pip's own entry point, in this process: as nobody, a new exec of the venv's python
    # (a link into root's home) is refused before pip could start.
    from pip._internal.cli.main import main

    sys.exit(main(["install", "--dry-run", "--no-deps", "six"]))


def config_missing_tmpdir_unusable(work: Path) -> None:
    with open("configs/grpo.yaml", encoding="utf-8") as f:
        print(f.read())


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
