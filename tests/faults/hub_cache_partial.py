"""HF_HUB_OFFLINE=1 with a model's snapshot in the Hub cache, but not every file the load
needs: the tokenizer files were never downloaded (`hf download --include "*.safetensors"
"config.json"`), or a shard the index lists is missing (a download that broke off).

The drivers write the snapshot with the real savers (save_pretrained of a tiny model and
tokenizer) into the layout huggingface_hub keeps (hub/models--shop--tiny-qwen2, refs/main,
snapshots/<commit>), remove what the case lacks, then load through transformers and
huggingface_hub.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "hub_cache_partial"
REPO = "shop/tiny-qwen2"
COMMIT = "5b0c2e8a7f3d4c1b9a6e0f2d8c7b5a4e3d2c1b0a"
_OFFLINE = {"HF_HUB_OFFLINE": "1"}
CASES = (
    FaultCase(
        FAMILY,
        "tokenizer_files_missing",
        ("TOKENIZER_FILES_MISSING", "HF_HUB_UNREACHABLE"),
        f"HF_HUB_OFFLINE=1; a Hub-cache snapshot of {REPO} (refs/main) with config.json and"
        " model.safetensors but no tokenizer files: AutoTokenizer.from_pretrained (an empty"
        " tokenizer, no error), then tokenize a prompt and generate (TOKENIZER_FILES_MISSING"
        " is a proposed code, not in codes.yaml: the model's tokenizer files are absent)",
        env=_OFFLINE,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "index_shard_missing",
        ("HF_HUB_UNREACHABLE", "HF_DOWNLOAD_INCOMPLETE"),
        f"HF_HUB_OFFLINE=1; a Hub-cache snapshot of {REPO} saved in two shards"
        " (max_shard_size) whose model.safetensors.index.json lists"
        " model-00002-of-00002.safetensors, absent: AutoModelForCausalLM.from_pretrained",
        env=_OFFLINE,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "hf_hub_download_missing_file",
        ("HF_HUB_UNREACHABLE",),
        f"HF_HUB_OFFLINE=1; huggingface_hub.hf_hub_download({REPO!r}, 'tokenizer.json') with"
        " the repo's snapshot cached without it",
        env=_OFFLINE,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "complete_cache_user_key_error",
        (),
        f"HF_HUB_OFFLINE=1; a complete Hub-cache snapshot of {REPO}; model and tokenizer load,"
        " then the user's own KeyError (batch['input_id'])",
        env=_OFFLINE,
        timeout=60,
    ),
)


def _snapshot(shards: bool = False) -> Path:
    """The repo's snapshot as huggingface_hub lays it out, model and tokenizer saved."""
    from shop_r1.tiny import make_tiny_model_and_tokenizer

    repo = Path(os.environ["HF_HOME"]) / "hub" / f"models--{REPO.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    texts = [f"a shopper looks for item {i} in the catalog" for i in range(200)]
    model, tokenizer = make_tiny_model_and_tokenizer(texts, vocab_size=300)
    model.save_pretrained(snapshot, max_shard_size="100KB" if shards else "5GB")
    tokenizer.save_pretrained(snapshot)
    return snapshot


def _remove_tokenizer(snapshot: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (snapshot / name).unlink(missing_ok=True)
    for extra in ("vocab.json", "merges.txt", "chat_template.jinja"):
        (snapshot / extra).unlink(missing_ok=True)


def tokenizer_files_missing(work: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _remove_tokenizer(_snapshot())
    # transformers 5 builds an empty tokenizer here without a word; the run fails later
    tokenizer = AutoTokenizer.from_pretrained(REPO)
    model = AutoModelForCausalLM.from_pretrained(REPO)
    batch = tokenizer(["a shopper looks for item 3"], return_tensors="pt")
    print(model.generate(**batch, max_new_tokens=4))


def index_shard_missing(work: Path) -> None:
    from transformers import AutoModelForCausalLM

    snapshot = _snapshot(shards=True)
    shards = sorted(snapshot.glob("model-*-of-*.safetensors"))
    shards[-1].unlink()
    AutoModelForCausalLM.from_pretrained(REPO)


def hf_hub_download_missing_file(work: Path) -> None:
    from huggingface_hub import hf_hub_download

    _remove_tokenizer(_snapshot())
    print(hf_hub_download(REPO, "tokenizer.json"))


def complete_cache_user_key_error(work: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _snapshot()
    tokenizer = AutoTokenizer.from_pretrained(REPO)
    model = AutoModelForCausalLM.from_pretrained(REPO)
    batch = tokenizer(["a shopper looks for item 3"], return_tensors="pt")
    print(model(input_ids=batch["input_id"]).logits.shape)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
