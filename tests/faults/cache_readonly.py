"""Caches and outputs the run cannot write: HF_HOME (or an output directory) on a
read-only mount, as in containers that mount a shared cache `:ro`; or an HF_HOME that
root owns while the job runs as another user, as on shared clusters.

The data and model files the drivers read sit in a fresh temp directory on the real
disk; only the cache (or output) is read-only. No finding code names this cause;
CACHE_DIR_NOT_WRITABLE and OUTPUT_DIR_NOT_WRITABLE are proposed ones.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "cache_readonly"
CACHE = ("CACHE_DIR_NOT_WRITABLE",)  # proposed: not in codes.yaml
OUTPUT = ("OUTPUT_DIR_NOT_WRITABLE",)  # proposed: not in codes.yaml
_RO_HOME = ("hf-home",)  # the run's HF_HOME
CASES = (
    FaultCase(
        FAMILY,
        "datasets_readonly_home",
        CACHE,
        "HF_HOME a read-only tmpfs (proposed code CACHE_DIR_NOT_WRITABLE): datasets.load_dataset"
        "('json', data_files=<a local file>) builds its cache under HF_HOME/datasets",
        readonly=_RO_HOME,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "remote_code_readonly_home",
        CACHE,
        "HF_HOME a read-only tmpfs (proposed code CACHE_DIR_NOT_WRITABLE):"
        " AutoConfig.from_pretrained(<local dir with custom code>, trust_remote_code=True)"
        " copies the code into HF_HOME/modules",
        readonly=_RO_HOME,
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "save_pretrained_readonly_output",
        OUTPUT,
        "the output directory a read-only tmpfs (proposed code OUTPUT_DIR_NOT_WRITABLE): a"
        " tiny model's save_pretrained('<out>/checkpoint-500')",
        readonly=("out",),
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "datasets_home_owned_by_root",
        CACHE,
        "HF_HOME a directory root owns (mode 755), the driver run as nobody (proposed code"
        " CACHE_DIR_NOT_WRITABLE): datasets.load_dataset('json', data_files=<a local file>)",
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "remote_code_home_owned_by_root",
        CACHE,
        "HF_HOME owned by root, the driver run as nobody (proposed code CACHE_DIR_NOT_WRITABLE):"
        " AutoConfig.from_pretrained(<local dir with custom code>, trust_remote_code=True)",
        run_as="nobody",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "map_key_error_readonly_home",
        (),
        "HF_HOME a read-only tmpfs, not written: an in-memory Dataset.map whose function reads"
        " a column the rows lack (KeyError, the user's bug)",
        readonly=_RO_HOME,
        timeout=60,
    ),
)


def _data_file() -> Path:
    src = Path(tempfile.mkdtemp()) / "train.jsonl"
    rows = [{"prompt": f"find shoes size {i}", "completion": "click"} for i in range(200)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return src


def _load_json() -> None:
    from datasets import load_dataset

    ds = load_dataset("json", data_files=str(_data_file()), split="train")
    print(len(ds))


def datasets_readonly_home(work: Path) -> None:
    _load_json()


def datasets_home_owned_by_root(work: Path) -> None:
    _load_json()


_CUSTOM_CONFIG = """
from transformers import PretrainedConfig


class ShopConfig(PretrainedConfig):
    model_type = "shop_custom"

    def __init__(self, hidden_size=64, **kwargs):
        self.hidden_size = hidden_size
        super().__init__(**kwargs)
"""


def _remote_code_config() -> None:
    from transformers import AutoConfig

    model_dir = Path(tempfile.mkdtemp()) / "shop-custom"
    model_dir.mkdir()
    (model_dir / "configuration_shop.py").write_text(_CUSTOM_CONFIG)
    config = {
        "model_type": "shop_custom",
        "auto_map": {"AutoConfig": "configuration_shop.ShopConfig"},
        "hidden_size": 64,
    }
    (model_dir / "config.json").write_text(json.dumps(config))
    print(AutoConfig.from_pretrained(str(model_dir), trust_remote_code=True))


def remote_code_readonly_home(work: Path) -> None:
    _remote_code_config()


def remote_code_home_owned_by_root(work: Path) -> None:
    _remote_code_config()


def save_pretrained_readonly_output(work: Path) -> None:
    from shop_r1.tiny import model_from_config_dict, tiny_config_dict

    model = model_from_config_dict(tiny_config_dict(512))
    model.save_pretrained(work / "out" / "checkpoint-500")


def map_key_error_readonly_home(work: Path) -> None:
    from datasets import Dataset

    ds = Dataset.from_list([{"prompt": f"row {i}", "completion": "x"} for i in range(50)])
    ds = ds.map(lambda row: {"text": row["prompt"] + row["answer"]})
    print(len(ds))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
