"""wandb asked to log from a job with no API key, no terminal and no network, WANDB_MODE
unset: a batch job (sbatch, nohup, a container) started on a node where nobody ran
`wandb login`.

`prepare` makes, once per cache, a venv with `pip install wandb` from the package index;
a .pth after its own site-packages adds this environment's (torch, transformers), so the
venv's python runs the Trainer too. The driver runs the user's script with that python,
HOME the case's dir (no ~/.netrc, no ~/.config/wandb), WANDB_* and tty absent, in a
network namespace with no interface up.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

from .case import FaultCase, Unavailable, drive

FAMILY = "wandb_no_key"
EXPECTED = ("WANDB_API_KEY_MISSING",)
ENV = "SHOP_R1_FAULT_WANDB_VENV"
WANDB = "wandb==0.31.0"
CASES = (
    FaultCase(
        FAMILY,
        "wandb_init_no_key",
        EXPECTED,
        "a venv with `pip install wandb==0.31.0`: `python train.py` calling"
        " wandb.init(project='shop-r1') with no WANDB_API_KEY, no ~/.netrc, stdin and stdout"
        " not a tty, no network, WANDB_MODE unset",
        no_network=True,
        prepare="prepare",
        timeout=120,
    ),
    FaultCase(
        FAMILY,
        "trainer_report_to_wandb",
        EXPECTED,
        "the same venv and conditions: a transformers Trainer of a tiny model with"
        " TrainingArguments(report_to='wandb'), trainer.train()",
        no_network=True,
        prepare="prepare",
        timeout=180,
    ),
    FaultCase(
        FAMILY,
        "wandb_log_before_init",
        (),
        "the user's own bug, WANDB_MODE=offline: wandb.log({...}) called before wandb.init()",
        env={"WANDB_MODE": "offline"},
        no_network=True,
        prepare="prepare",
        timeout=120,
    ),
)

SCRIPTS = {
    "wandb_init_no_key": """import wandb

run = wandb.init(project="shop-r1", config={"lr": 1e-5})
run.log({"loss": 1.0})
run.finish()
""",
    "trainer_report_to_wandb": """import torch
from transformers import Trainer, TrainingArguments

from shop_r1.tiny import model_from_config_dict, tiny_config_dict

model = model_from_config_dict(tiny_config_dict(256, hidden=32))
ids = torch.randint(0, 256, (8, 16))
train = [{"input_ids": row, "labels": row} for row in ids]
args = TrainingArguments(
    output_dir="out", report_to="wandb", max_steps=2, per_device_train_batch_size=4,
    use_cpu=True, logging_steps=1,
)
Trainer(model=model, args=args, train_dataset=train).train()
""",
    "wandb_log_before_init": """import wandb

wandb.log({"loss": 1.0})
""",
}


def prepare(cache: Path) -> dict[str, str]:
    venv = cache / "wandb-venv"
    if not (venv / "bin" / "python").exists():
        base = Path(sys.base_prefix) / "bin" / "python3"
        subprocess.run(["rm", "-rf", str(venv)], check=True)
        subprocess.run([str(base), "-m", "venv", str(venv)], check=True)
        argv = [str(venv / "bin" / "pip"), "install", "-q", WANDB]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
        if proc.returncode != 0:
            subprocess.run(["rm", "-rf", str(venv)], check=True)
            last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            raise Unavailable(f"pip could not install wandb: {last}")
        site = next((venv / "lib").glob("python3.*")) / "site-packages"
        ours = sysconfig.get_paths()["purelib"]
        (site / "zz-environment.pth").write_text(
            f"import site; site.addsitedir({ours!r})\n", encoding="utf-8"
        )
    return {ENV: str(venv)}


def _run(work: Path, name: str) -> None:
    python = Path(os.environ[ENV]) / "bin" / "python"
    (work / "train.py").write_text(SCRIPTS[name], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    if "WANDB_MODE" in os.environ and name == "wandb_log_before_init":
        env["WANDB_MODE"] = os.environ["WANDB_MODE"]
    env["HOME"] = str(work)
    argv = [str(python), "train.py"]
    print("+", shlex.join(argv), flush=True)
    code = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, check=False)
    sys.exit(code.returncode)


def wandb_init_no_key(work: Path) -> None:
    _run(work, "wandb_init_no_key")


def trainer_report_to_wandb(work: Path) -> None:
    _run(work, "trainer_report_to_wandb")


def wandb_log_before_init(work: Path) -> None:
    _run(work, "wandb_log_before_init")


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
