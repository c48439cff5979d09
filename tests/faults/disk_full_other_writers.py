"""A full file system under writers the disk_full, compile_tmp_full and disk_quota families
do not cover: a tokenizer's save_pretrained, a Dataset.map's Arrow cache file, pip's
temporary build directory (pip install --target unpacks there before it moves the files).

The file system is a small tmpfs in a private mount namespace: the case's dir, or /var/tmp
with TMPDIR pointing at it (a node's small scratch or /tmp partition).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .case import FaultCase, default_cache, download_wheel, drive

FAMILY = "disk_full_other_writers"
SYMPY = "sympy==1.14.0"  # a pure-Python wheel of 6 MB that unpacks to about 30 MB
ENV = "SHOP_R1_FAULT_WHEEL"
CASES = (
    FaultCase(
        FAMILY,
        "tokenizer_save_pretrained",
        ("DISK_FULL_AT_CHECKPOINT",),
        "a BPE tokenizer trained with tokenizers (vocab 8000) wrapped in transformers'"
        " PreTrainedTokenizerFast: save_pretrained into the case's dir, a 128 kB tmpfs",
        tmpfs=("work", "128k"),
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "datasets_map_cache_file",
        ("DISK_FULL_AT_CHECKPOINT",),
        "Dataset.from_dict of 20000 prompts, then .map(tokenize, batched=True,"
        " cache_file_name=<case dir>/cache/tokenized.arrow) with the case's dir a 1 MB tmpfs"
        " (the map's Arrow writer fills it)",
        tmpfs=("work", "1m"),
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "pip_target_tmpdir_full",
        ("DISK_LOW", "DISK_FULL_AT_CHECKPOINT"),
        f"TMPDIR=/var/tmp, a 2 MB tmpfs: `pip install --no-index --no-deps --target <case"
        f" dir>/site <{SYMPY} wheel>` (downloaded beforehand; pip unpacks the 30 MB it holds"
        " under TMPDIR before moving it to the target)",
        tmpfs=("/var/tmp", "2m"),
        env={"TMPDIR": "/var/tmp"},
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "map_function_key_error",
        (),
        "the case's dir a 1 MB tmpfs, not reached: Dataset.map(tokenize, cache_file_name=<case"
        " dir>/cache/tokenized.arrow) whose function reads the column 'prompt' the rows lack"
        " (they hold 'text'): the user's KeyError",
        tmpfs=("work", "1m"),
        timeout=90,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """The sympy wheel, downloaded once."""
    del cache
    return {ENV: str(download_wheel(SYMPY, default_cache() / "sympy-wheel"))}


def tokenizer_save_pretrained(work: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    words = [f"item{i} color{i % 97} size{i % 13} brand{i % 211}" for i in range(20000)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    tok.train_from_iterator(words, trainers.BpeTrainer(vocab_size=8000, special_tokens=["<unk>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    print(f"tokenizer trained: vocab {fast.vocab_size}", flush=True)
    fast.save_pretrained(str(work / "tokenizer"))
    print("tokenizer saved", flush=True)


def _map(work: Path, column: str) -> None:
    from datasets import Dataset

    ds = Dataset.from_dict({"text": [f"a product page for item {i} " * 8 for i in range(20000)]})

    def tokenize(batch):
        return {"input_ids": [[ord(c) for c in t] for t in batch[column]]}

    (work / "cache").mkdir()
    out = ds.map(tokenize, batched=True, cache_file_name=str(work / "cache" / "tokenized.arrow"))
    print(f"tokenized {len(out)} rows", flush=True)


def datasets_map_cache_file(work: Path) -> None:
    _map(work, "text")


def map_function_key_error(work: Path) -> None:
    _map(work, "prompt")


def pip_target_tmpdir_full(work: Path) -> None:
    import subprocess

    argv = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps"]
    argv += ["--disable-pip-version-check", "--target", str(work / "site"), os.environ[ENV]]
    print("$ pip", " ".join(argv[3:]), flush=True)
    sys.exit(subprocess.run(argv, check=False).returncode)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
