"""Decision rows for the plan checks (shop_r1_doctor/checks/plan.py): bf16, Liger, the
self-certainty term, dataset paths and env references. Batch arithmetic and truncation:
test_plan_rows_batch.py; vLLM server mode: test_plan_rows_server.py; disk:
test_plan_rows_disk.py."""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.plan import (
    bf16_pre_ampere,
    dataset_path,
    env_references,
    liger_requested,
    self_certainty_group_scaled,
)
from shop_r1_doctor.facts import Facts

A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
H200 = {"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}
T4 = {"index": 0, "name": "Tesla T4", "compute_capability": "7.5"}
V100 = {"index": 0, "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}


def _found(check, snap: dict) -> list[tuple[str, str, str, str, str | None]]:
    return [(f.code, f.severity, f.title, f.detail, f.fix) for f in check(Facts(snap))]


# ----------------------------------------------------------------- bf16 before Ampere
BF16_DETAIL = "'Bfloat16 is only supported on GPUs with compute capability of at least 8.0.'"
BF16_FIX = "bf16: false, fp16: true in the config (vLLM: --dtype half)"

# (case, bf16, gpus, expected title or None)
BF16_ROWS = [
    ("a T4", True, [T4], "bf16 requested but Tesla T4 is cc 7.5 (bf16 needs 8.0)"),
    ("an A100: exactly 8.0", True, [A100], None),
    (
        "two V100s",
        True,
        [V100, {**V100, "index": 1}],
        "bf16 requested but 2x Tesla V100-SXM2-32GB is cc 7.0 (bf16 needs 8.0)",
    ),
    (
        "an H100 and a T4: the T4",
        True,
        [H100, T4],
        "bf16 requested but Tesla T4 is cc 7.5 (bf16 needs 8.0)",
    ),
    ("a GPU whose capability is unknown", True, [{"index": 0, "name": "NVIDIA Mystery"}], None),
    ("a T4, bf16 off", False, [T4], None),
    ("a T4, bf16 not said", None, [T4], None),
]


@pytest.mark.parametrize(
    ("bf16", "gpus", "title"), [r[1:] for r in BF16_ROWS], ids=[r[0] for r in BF16_ROWS]
)
def test_bf16_rows(bf16, gpus, title) -> None:
    rows = _found(bf16_pre_ampere, {"gpus": gpus, "plan": {"bf16": bf16}})
    assert rows == ([("BF16_PRE_AMPERE", "error", title, BF16_DETAIL, BF16_FIX)] if title else [])


# ----------------------------------------------------------------- Liger requested
LIGER_FIX = (
    "python3 -m pip install liger-kernel (Linux + CUDA: it needs Triton), or liger_kernel: off"
)
LIGER_MISSING = (
    "transformers raises 'You need to install liger-kernel version ... to use this option' "
    "when the Trainer starts."
)
ABSENT = object()

# (case, use_liger_kernel, liger-kernel record (ABSENT: not looked), import ok, error, expected (title, detail))
LIGER_ROWS = [
    (
        "requested, not installed",
        True,
        None,
        None,
        "",
        ("use_liger_kernel requested but liger-kernel is not installed", LIGER_MISSING),
    ),
    (
        "requested, installed, does not import",
        True,
        {"version": "0.6.2"},
        False,
        "ImportError: cannot import name 'triton'",
        (
            "use_liger_kernel requested but liger_kernel does not import (liger-kernel 0.6.2)",
            "ImportError: cannot import name 'triton'",
        ),
    ),
    (
        "requested, not looked for, does not import",
        True,
        ABSENT,
        False,
        "ModuleNotFoundError: No module named 'liger_kernel'",
        (
            "use_liger_kernel requested but liger_kernel does not import",
            "ModuleNotFoundError: No module named 'liger_kernel'",
        ),
    ),
    ("requested, installed, imports", True, {"version": "0.6.2"}, True, "", None),
    ("requested, installed, import unknown", True, {"version": "0.6.2"}, None, "", None),
    ("not requested, not installed", False, None, None, "", None),
    ("not said, not installed", None, None, None, "", None),
]


@pytest.mark.parametrize(
    ("use", "record", "ok", "error", "expected"),
    [r[1:] for r in LIGER_ROWS],
    ids=[r[0] for r in LIGER_ROWS],
)
def test_liger_rows(use, record, ok, error, expected) -> None:
    snap: dict = {"plan": {"use_liger_kernel": use}, "packages": {}}
    if record is not ABSENT:
        snap["packages"]["liger-kernel"] = record
    if ok is not None:
        snap["imports"] = {"liger_kernel.transformers": {"ok": ok, "error": error}}
    rows = _found(liger_requested, snap)
    if expected is None:
        assert rows == []
    else:
        title, detail = expected
        assert rows == [("LIGER_REQUESTED_NOT_INSTALLED", "error", title, detail, LIGER_FIX)]


# ----------------------------------------------------------------- self-certainty under group scaling
SC_DETAIL = (
    "On an H100 (28M model, synthetic sessions) 38-65% of groups tied without it; with it "
    "GRPO sharpened the rationale and held-out exact match fell 3 points (16.1% -> 13.2%); "
    "without it the same SFT model rose to 19.7%."
)
SC_FIX = (
    "self_certainty_weight: 0 (the trainer's default), or keep it and watch held-out exact "
    "match, not the training reward"
)

# (case, plan, expected weight text or None)
SC_ROWS = [
    ("grpo, 0.1, TRL's default scaling", {"task": "grpo", "self_certainty_weight": 0.1}, "0.1"),
    (
        "grpo, 0.05, scale_rewards=group",
        {"task": "grpo", "self_certainty_weight": 0.05, "scale_rewards": "group"},
        "0.05",
    ),
    ("grpo, weight 1 (an integer)", {"task": "grpo", "self_certainty_weight": 1}, "1"),
    (
        "grpo, scale_rewards=batch",
        {"task": "grpo", "self_certainty_weight": 0.1, "scale_rewards": "batch"},
        None,
    ),
    (
        "grpo, scale_rewards=none",
        {"task": "grpo", "self_certainty_weight": 0.1, "scale_rewards": "none"},
        None,
    ),
    ("grpo, weight 0", {"task": "grpo", "self_certainty_weight": 0}, None),
    ("grpo, no weight", {"task": "grpo"}, None),
    ("sft with a weight", {"task": "sft", "self_certainty_weight": 0.1}, None),
]


@pytest.mark.parametrize(("plan", "weight"), [r[1:] for r in SC_ROWS], ids=[r[0] for r in SC_ROWS])
def test_self_certainty_rows(plan, weight) -> None:
    rows = _found(self_certainty_group_scaled, {"plan": plan})
    title = (
        f"self_certainty_weight {weight} with scale_rewards=group: the confidence term alone "
        "sets the advantage in groups whose task rewards tie"
    )
    expected = ("GRPO_SELF_CERTAINTY_GROUP_SCALED", "warning", title, SC_DETAIL, SC_FIX)
    assert rows == ([expected] if weight else [])


# ----------------------------------------------------------------- a dataset repository root
ROOT_DETAIL = "load_dataset('parquet', data_files=...) needs files: a repo root fails to resolve."

# (case, dataset, expected (title path, fix) or None)
DATASET_ROWS = [
    (
        "a repository root",
        "hf://datasets/ecom/sessions",
        "dataset: hf://datasets/ecom/sessions/data/<file>.parquet "
        "(or load_dataset('ecom/sessions'))",
    ),
    (
        "a root with a slash",
        "hf://datasets/ecom/sessions/",
        "dataset: hf://datasets/ecom/sessions/data/<file>.parquet "
        "(or load_dataset('ecom/sessions'))",
    ),
    (
        "a root at a revision",
        "hf://datasets/ecom/sessions@v1",
        "dataset: hf://datasets/ecom/sessions@v1/data/<file>.parquet "
        "(or load_dataset('ecom/sessions@v1'))",
    ),
    ("a parquet file", "hf://datasets/ecom/sessions/data/train-00000.parquet", None),
    ("a local file", "data/sessions.jsonl", None),
    ("a model repository", "hf://ecom/sessions", None),
    ("not said", None, None),
]


@pytest.mark.parametrize(
    ("path", "fix"), [r[1:] for r in DATASET_ROWS], ids=[r[0] for r in DATASET_ROWS]
)
def test_dataset_path_rows(path, fix) -> None:
    rows = _found(dataset_path, {"plan": {"dataset": path}})
    title = f"dataset={path} is a dataset repository root, not data files"
    assert rows == ([("DATASET_PATH_NOT_FILES", "error", title, ROOT_DETAIL, fix)] if fix else [])


# ----------------------------------------------------------------- ${VAR} in the config
ENV_DETAIL = "An empty value becomes None and fails config validation with a TypeError."

# (case, env_refs, env section (ABSENT: not collected), expected [(name, state)])
ENV_ROWS = [
    ("set", ["WANDB_PROJECT"], {"WANDB_PROJECT": "shop"}, []),
    ("unset", ["WANDB_PROJECT"], {"HF_HOME": "/data/hf"}, [("WANDB_PROJECT", "unset")]),
    ("empty", ["WANDB_PROJECT"], {"WANDB_PROJECT": ""}, [("WANDB_PROJECT", "empty")]),
    (
        "a value that is not text",
        ["WANDB_PROJECT"],
        {"WANDB_PROJECT": 5},
        [("WANDB_PROJECT", "unset")],
    ),
    (
        "two, in the config's order",
        ["RUN_NAME", "DATA_DIR"],
        {"DATA_DIR": ""},
        [("RUN_NAME", "unset"), ("DATA_DIR", "empty")],
    ),
    ("env not collected", ["WANDB_PROJECT"], ABSENT, []),
    ("a pasted dump that does not list it", ["WANDB_PROJECT"], "dump", []),
    (
        "a pasted dump that lists it empty",
        ["WANDB_PROJECT"],
        "dump-empty",
        [("WANDB_PROJECT", "empty")],
    ),
    ("no references", None, {}, []),
]


@pytest.mark.parametrize(
    ("refs", "env", "expected"), [r[1:] for r in ENV_ROWS], ids=[r[0] for r in ENV_ROWS]
)
def test_env_reference_rows(refs, env, expected) -> None:
    snap: dict = {"plan": {"env_refs": refs}}
    if env == "dump":
        snap.update(source={"kind": "dump"}, env={"VLLM_USE_V1": "1"})
    elif env == "dump-empty":
        snap.update(source={"kind": "dump"}, env={"WANDB_PROJECT": ""})
    elif env is not ABSENT:
        snap["env"] = env
    rows = _found(env_references, snap)
    assert rows == [
        (
            "CFG_ENV_INTERPOLATION",
            "error",
            f"the config reads ${{{name}}}, which is {state}",
            ENV_DETAIL,
            f"export {name}=<value> (or give the config a default: ${{oc.env:{name},<default>}})",
        )
        for name, state in expected
    ]
