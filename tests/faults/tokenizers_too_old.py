"""A tokenizer.json written by a newer tokenizers, read by an older one: tokenizers 0.20+
writes a BPE model's merges as pairs (["a", "b"]), which 0.19 and older cannot parse, as
when a model saved with a current stack is loaded in an older environment.

The driver trains a tiny BPE tokenizer with this environment's tokenizers and saves it
(tokenizer.json, and with transformers' PreTrainedTokenizerFast.save_pretrained the
tokenizer_config.json beside it). `prepare` makes, once per cache, a venv with
tokenizers 0.14.1 and transformers 4.35.2 (which requires tokenizers>=0.14,<0.15) from
the package index; the driver runs the loading script with that venv's python.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "tokenizers_too_old"
EXPECTED = ("TOKENIZERS_TOO_OLD_FOR_FILE",)
OLD = ("tokenizers==0.14.1", "transformers==4.35.2")
ENV = "SHOP_R1_FAULT_OLD_TOKENIZERS_VENV"
CASES = (
    FaultCase(
        FAMILY,
        "tokenizer_from_file",
        EXPECTED,
        "a BPE tokenizer.json saved by tokenizers 0.23 (merges as pairs), read in a venv with"
        " tokenizers 0.14.1: `Tokenizer.from_file('tokenizer.json')`",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "autotokenizer_from_pretrained",
        EXPECTED,
        "the same tokenizer saved with save_pretrained, its tokenizer_config.json naming"
        " tokenizer_class PreTrainedTokenizerFast (as transformers 4.x writes it), loaded in"
        " the venv with transformers 4.35.2 and tokenizers 0.14.1:"
        " AutoTokenizer.from_pretrained(<dir>)",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "autotokenizer_transformers5_class",
        ("TRANSFORMERS_TOO_OLD_FOR_MODEL",),
        "the same tokenizer as transformers 5's save_pretrained leaves it (tokenizer_class"
        " TokenizersBackend), loaded in the venv with transformers 4.35.2:"
        " AutoTokenizer.from_pretrained(<dir>) (the installed transformers predates the"
        " files' writer)",
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "tokenizer_json_hand_edit_typo",
        (),
        "the user's own bug: a tokenizer.json edited by hand to add a special token, left with"
        " a trailing comma (invalid JSON), read by this environment's tokenizers",
        timeout=120,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    venv = cache / "old-tokenizers"
    if not (venv / "bin" / "python").exists():
        partial = venv.with_name(venv.name + ".partial")
        subprocess.run(["rm", "-rf", str(partial)], check=True)
        base = Path(sys.base_prefix) / "bin" / "python3"
        subprocess.run([str(base), "-m", "venv", str(partial)], check=True)
        argv = [str(partial / "bin" / "pip"), "install", "-q", *OLD]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            raise Unavailable(f"pip could not install {' '.join(OLD)}: {last}")
        # A venv's scripts name its directory: made again in place rather than moved.
        subprocess.run(["rm", "-rf", str(venv)], check=True)
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
        site = next((partial / "lib").glob("python3.*")) / "site-packages"
        dest = next((venv / "lib").glob("python3.*")) / "site-packages"
        subprocess.run(["cp", "-a", f"{site}/.", str(dest)], check=True)
        subprocess.run(["rm", "-rf", str(partial)], check=True)
    return {ENV: str(venv)}


def _save(work: Path) -> Path:
    """A tiny BPE tokenizer trained and saved by this environment's tokenizers/transformers."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>", "</s>"])
    text = ["search for running shoes", "click buy now", "add to cart"] * 50
    tok.train_from_iterator(text, trainer)
    out = work / "tokenizer"
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="</s>")
    fast.save_pretrained(out)
    return out


def _old_python(work: Path, script: str) -> None:
    python = Path(os.environ[ENV]) / "bin" / "python"
    (work / "load.py").write_text(script, encoding="utf-8")
    argv = [str(python), "load.py"]
    print("+", shlex.join(argv), flush=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    sys.exit(subprocess.run(argv, cwd=work, env=env, check=False).returncode)


def tokenizer_from_file(work: Path) -> None:
    _save(work)
    script = """from tokenizers import Tokenizer

tok = Tokenizer.from_file("tokenizer/tokenizer.json")
print(tok.encode("buy now").tokens)
"""
    _old_python(work, script)


def autotokenizer_from_pretrained(work: Path) -> None:
    import json

    config = _save(work) / "tokenizer_config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["tokenizer_class"] = "PreTrainedTokenizerFast"
    config.write_text(json.dumps(data, indent=2), encoding="utf-8")
    _autotokenizer(work)


def autotokenizer_transformers5_class(work: Path) -> None:
    _save(work)
    _autotokenizer(work)


def _autotokenizer(work: Path) -> None:
    script = """from transformers import AutoTokenizer

tok = AutoTokenizer.from_pretrained("tokenizer")
print(tok("buy now"))
"""
    _old_python(work, script)


def tokenizer_json_hand_edit_typo(work: Path) -> None:
    from tokenizers import Tokenizer

    path = _save(work) / "tokenizer.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"added_tokens": [', '"added_tokens": [,', 1), encoding="utf-8")
    print(Tokenizer.from_file(str(path)).encode("buy now").tokens)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
