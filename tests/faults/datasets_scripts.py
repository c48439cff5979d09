"""Code that datasets >= 4 and transformers no longer run unasked: a dataset loading
script (load_dataset of a script, or of a directory holding <dir name>.py), which datasets
4 dropped (`Dataset scripts are no longer supported`), and a local model directory whose
config.json maps Auto classes to its own Python files (auto_map), which transformers
loads only with trust_remote_code=True.

Expected: DATASET_SCRIPT_UNSUPPORTED and TRUST_REMOTE_CODE_REQUIRED.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "datasets_scripts"
CASES = (
    FaultCase(
        FAMILY,
        "load_dataset_script_file",
        ("DATASET_SCRIPT_UNSUPPORTED",),
        "load_dataset('<dir>/shop_sessions/shop_sessions.py') of a GeneratorBasedBuilder"
        " loading script under datasets 4",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "load_dataset_script_dir_trust_remote_code",
        ("DATASET_SCRIPT_UNSUPPORTED",),
        "load_dataset('<dir>/shop_sessions', trust_remote_code=True) of a directory holding"
        " only its loading script shop_sessions.py under datasets 4",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "auto_config_custom_code",
        ("TRUST_REMOTE_CODE_REQUIRED",),
        "AutoConfig.from_pretrained of a local model dir whose config.json has model_type"
        " shop_tiny and an auto_map to configuration_shop_tiny.py, without trust_remote_code"
        " (stdin not a terminal, so no prompt)",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "unknown_split",
        (),
        "the user's own split name: load_dataset('json', data_files={'train': ...},"
        " split='validation') of a local JSON Lines file",
        timeout=60,
    ),
)

SCRIPT = """import datasets


class ShopSessions(datasets.GeneratorBasedBuilder):
    def _info(self):
        return datasets.DatasetInfo(features=datasets.Features({"prompt": datasets.Value("string")}))

    def _split_generators(self, dl_manager):
        return [datasets.SplitGenerator(name=datasets.Split.TRAIN)]

    def _generate_examples(self):
        yield 0, {"prompt": "search shoes"}
"""


def _script_dir(work: Path) -> Path:
    d = work / "shop_sessions"
    d.mkdir()
    (d / "shop_sessions.py").write_text(SCRIPT)
    return d


def load_dataset_script_file(work: Path) -> None:
    from datasets import load_dataset

    d = _script_dir(work)
    print(load_dataset(str(d / "shop_sessions.py"), split="train"))


def load_dataset_script_dir_trust_remote_code(work: Path) -> None:
    from datasets import load_dataset

    d = _script_dir(work)
    print(load_dataset(str(d), split="train", trust_remote_code=True))


def auto_config_custom_code(work: Path) -> None:
    from transformers import AutoConfig

    d = work / "shop-tiny"
    d.mkdir()
    config = {
        "model_type": "shop_tiny",
        "architectures": ["ShopTinyModel"],
        "auto_map": {
            "AutoConfig": "configuration_shop_tiny.ShopTinyConfig",
            "AutoModel": "modeling_shop_tiny.ShopTinyModel",
        },
        "hidden_size": 8,
    }
    (d / "config.json").write_text(json.dumps(config))
    (d / "configuration_shop_tiny.py").write_text(
        "from transformers import PreTrainedConfig\n\n\n"
        "class ShopTinyConfig(PreTrainedConfig):\n    model_type = 'shop_tiny'\n"
    )
    print(AutoConfig.from_pretrained(str(d)))


def unknown_split(work: Path) -> None:
    from datasets import load_dataset

    path = work / "train.jsonl"
    path.write_text('{"prompt": "search shoes"}\n{"prompt": "buy now"}\n')
    print(load_dataset("json", data_files={"train": str(path)}, split="validation"))


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
