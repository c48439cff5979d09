"""A weights file that holds text, not weights: the three-line pointer Git leaves in a
clone made without git-lfs, or an HTML page (a login or error page) saved under the
weights file's name by a download that fetched the wrong URL. Loaded as a user does:
transformers' from_pretrained of the model directory, torch.load, safetensors' load_file.

The drivers save a tiny model with save_pretrained (safetensors, or pytorch_model.bin
with safe_serialization=False), then overwrite its weights file with the text: the LFS
pointer carries the real file's sha256 and size, as git writes it; the HTML page is the
kind a web server returns for a page that needs a login.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "weights_not_weights"
EXPECTED = ("CHECKPOINT_NOT_WEIGHTS",)
CASES = (
    FaultCase(
        FAMILY,
        "lfs_pointer_safetensors_from_pretrained",
        EXPECTED,
        "a tiny model saved with save_pretrained, its model.safetensors replaced by the Git LFS"
        " pointer git writes without git-lfs (version/oid sha256/size lines):"
        " AutoModelForCausalLM.from_pretrained(<dir>)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "lfs_pointer_bin_from_pretrained",
        EXPECTED,
        "a tiny model directory in the older layout (config.json and a torch.save'd"
        " pytorch_model.bin, no safetensors), pytorch_model.bin replaced by its Git LFS pointer:"
        " AutoModelForCausalLM.from_pretrained(<dir>)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "html_page_safetensors_load_file",
        EXPECTED,
        "an HTML login page saved as model.safetensors (wget of a page that needs a login):"
        " safetensors.torch.load_file(<file>)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "html_page_torch_load",
        EXPECTED,
        "the same HTML page saved as pytorch_model.bin: torch.load(<file>, map_location='cpu')",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "state_dict_key_typo",
        (),
        "the user's own bug: a complete torch.save'd checkpoint {'model': ..., 'step': ...}"
        " read as state['model_state'] (KeyError)",
        timeout=60,
    ),
)

HTML = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in</title></head>
<body>
<form action="/login" method="post">
<input type="text" name="username"><input type="password" name="password">
<button type="submit">Sign in</button>
</form>
</body>
</html>
"""


def _lfs_pointer(path: Path) -> None:
    """Overwrite `path` with the pointer git leaves for it when git-lfs is not installed."""
    data = path.read_bytes()
    oid = hashlib.sha256(data).hexdigest()
    text = f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n"
    path.write_text(text, encoding="ascii")


def _save_tiny(out: Path, safe: bool = True) -> None:
    """save_pretrained's directory; without `safe`, the older layout: pytorch_model.bin."""
    import torch

    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    model = model_from_config_dict(tiny_config_dict(4096, hidden=64))
    model.save_pretrained(out)
    if not safe:
        (out / "model.safetensors").unlink()
        torch.save(model.state_dict(), out / "pytorch_model.bin")


def lfs_pointer_safetensors_from_pretrained(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    out = work / "tiny-qwen2"
    _save_tiny(out)
    _lfs_pointer(out / "model.safetensors")
    AutoModelForCausalLM.from_pretrained(out)


def lfs_pointer_bin_from_pretrained(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    out = work / "tiny-qwen2"
    _save_tiny(out, safe=False)
    _lfs_pointer(out / "pytorch_model.bin")
    AutoModelForCausalLM.from_pretrained(out)


def html_page_safetensors_load_file(work: Path) -> None:
    from safetensors.torch import load_file

    path = work / "model.safetensors"
    path.write_text(HTML, encoding="utf-8")
    state = load_file(path)
    print(len(state))


def html_page_torch_load(work: Path) -> None:
    import torch

    path = work / "pytorch_model.bin"
    path.write_text(HTML, encoding="utf-8")
    state = torch.load(path, map_location="cpu")
    print(len(state))


def state_dict_key_typo(work: Path) -> None:
    import torch

    ckpt = work / "checkpoint-1000.pt"
    torch.save({"model": {"w": torch.randn(8, 8)}, "step": 1000}, ckpt)
    state = torch.load(ckpt, map_location="cpu")
    print(state["model_state"]["w"].shape)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
