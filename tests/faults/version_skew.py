"""An old release of one stack package put ahead of this environment's newer others.

What users do with `pip install --target` or a PYTHONPATH left from another project:
`prepare` downloads each old release's wheel (pip download --no-deps) and unpacks it into
the cache, one directory per release. The driver writes the user's script into the case's
directory and runs it with that directory first on PYTHONPATH, against this environment's
transformers 5.24, torch 2.13 and TRL 1.16. peft 0.6-0.10's own LoRA API (get_peft_model,
save/load, merge) works under transformers 5, and TRL 0.12's SFTTrainer with 0.9-era
arguments trains, so neither is a case; transformers' integrated adapter API and TRL 0.9
are. Without the wheels the cases cannot be caused (`Unavailable`, one line).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from .case import FaultCase, download_wheel, drive

FAMILY = "version_skew"
WHEELS = {
    "trl": "trl==0.9.6",
    "accelerate": "accelerate==0.25.0",
    "tokenizers": "tokenizers==0.15.2",
    "huggingface_hub": "huggingface_hub==0.20.3",
    "peft": "peft==0.10.0",
}
ENV = "SHOP_R1_FAULT_OLD_WHEELS"  # name=dir pairs, os.pathsep-separated
_SKEW = ("PACKAGE_VERSION_SKEW",)
_REQ = ("REQUIREMENT_CONFLICT", "PACKAGE_VERSION_SKEW")
CASES = (
    FaultCase(
        FAMILY,
        "trl_0_9_sft_trainer",
        _SKEW,
        "TRL 0.9.6 (first on PYTHONPATH) SFTTrainer(tokenizer=..., dataset_text_field=...,"
        " max_seq_length=...) on a tiny model, under transformers 5.24",
        prepare="prepare",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "accelerate_0_25_trainer",
        _REQ,
        "accelerate 0.25.0 (first on PYTHONPATH) under transformers 5.24's TrainingArguments"
        " (transformers[torch] needs accelerate>=1.1.0)",
        prepare="prepare",
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "tokenizers_0_15_import",
        _REQ,
        "tokenizers 0.15.2 (first on PYTHONPATH) when a script imports transformers 5.24"
        " (which requires tokenizers>=0.23.1,<0.24)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "huggingface_hub_0_20_import",
        _REQ,
        "huggingface_hub 0.20.3 (first on PYTHONPATH) when a script imports transformers 5.24",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "peft_0_10_add_adapter",
        _REQ,
        "peft 0.10.0 (first on PYTHONPATH): a tiny model's add_adapter(LoraConfig(...)),"
        " transformers 5.24's integrated PEFT API (it needs peft>=0.22.0)",
        prepare="prepare",
        timeout=60,
    ),
    FaultCase(
        FAMILY,
        "peft_0_10_target_modules_typo",
        (),
        "peft 0.10.0 (first on PYTHONPATH) get_peft_model with target_modules=['c_attn'], a"
        " module name the Qwen2-style model lacks (the user's own config bug)",
        prepare="prepare",
        timeout=60,
    ),
)


def prepare(cache: Path) -> dict[str, str]:
    """Unpack each old wheel once into `cache`; the driver's map of where they are."""
    pairs = []
    for name, spec in WHEELS.items():
        out = cache / spec.replace("==", "-")
        if not (out / name).is_dir():
            with zipfile.ZipFile(download_wheel(spec, cache)) as zf:
                zf.extractall(out)
        pairs.append(f"{name}={out}")
    return {ENV: os.pathsep.join(pairs)}


def _run(work: Path, package: str, script: str) -> None:
    where = dict(p.split("=", 1) for p in os.environ[ENV].split(os.pathsep))[package]
    (work / "train.py").write_text(script, encoding="utf-8")
    # the old release first, then what the environment already had on PYTHONPATH
    path = os.pathsep.join(p for p in (where, os.environ.get("PYTHONPATH", "")) if p)
    print(f"$ PYTHONPATH={where}:$PYTHONPATH python train.py", flush=True)
    proc = subprocess.run(
        [sys.executable, "train.py"], cwd=work, env={**os.environ, "PYTHONPATH": path}
    )
    sys.exit(proc.returncode)


SFT_SCRIPT = """\
from datasets import Dataset
from transformers import TrainingArguments
from trl import SFTTrainer

from shop_r1.tiny import make_tiny_model_and_tokenizer

texts = ["click buy now", "search for a red lamp"] * 8
model, tokenizer = make_tiny_model_and_tokenizer(texts)
dataset = Dataset.from_list([{"text": t} for t in texts])
args = TrainingArguments(output_dir="out", max_steps=1, per_device_train_batch_size=2)
trainer = SFTTrainer(
    model=model,
    args=args,
    train_dataset=dataset,
    tokenizer=tokenizer,
    dataset_text_field="text",
    max_seq_length=32,
)
trainer.train()
"""

TRAINER_SCRIPT = """\
from datasets import Dataset
from transformers import Trainer, TrainingArguments

from shop_r1.tiny import make_tiny_model_and_tokenizer

texts = ["click buy now", "search for a red lamp"] * 8
model, tokenizer = make_tiny_model_and_tokenizer(texts)
dataset = Dataset.from_list([dict(tokenizer(t)) for t in texts])
args = TrainingArguments(output_dir="out", max_steps=1, per_device_train_batch_size=2)
Trainer(model=model, args=args, train_dataset=dataset).train()
"""

IMPORT_SCRIPT = """\
from transformers import AutoModelForCausalLM, AutoTokenizer

print(AutoTokenizer, AutoModelForCausalLM)
"""

ADD_ADAPTER_SCRIPT = """\
from peft import LoraConfig

from shop_r1.tiny import model_from_config_dict, tiny_config_dict

model = model_from_config_dict(tiny_config_dict(512))
model.add_adapter(LoraConfig(r=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
model.print_trainable_parameters()
"""

TARGET_TYPO_SCRIPT = """\
from peft import LoraConfig, get_peft_model

from shop_r1.tiny import model_from_config_dict, tiny_config_dict

model = model_from_config_dict(tiny_config_dict(512))
model = get_peft_model(model, LoraConfig(r=8, target_modules=["c_attn"], task_type="CAUSAL_LM"))
model.print_trainable_parameters()
"""


def trl_0_9_sft_trainer(work: Path) -> None:
    _run(work, "trl", SFT_SCRIPT)


def accelerate_0_25_trainer(work: Path) -> None:
    _run(work, "accelerate", TRAINER_SCRIPT)


def tokenizers_0_15_import(work: Path) -> None:
    _run(work, "tokenizers", IMPORT_SCRIPT)


def huggingface_hub_0_20_import(work: Path) -> None:
    _run(work, "huggingface_hub", IMPORT_SCRIPT)


def peft_0_10_add_adapter(work: Path) -> None:
    _run(work, "peft", ADD_ADAPTER_SCRIPT)


def peft_0_10_target_modules_typo(work: Path) -> None:
    _run(work, "peft", TARGET_TYPO_SCRIPT)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
