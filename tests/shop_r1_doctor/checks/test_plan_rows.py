"""Decision rows for the plan checks (shop_r1_doctor/checks/plan.py): bf16, Liger, the
self-certainty term, dataset paths, env references and the disk the checkpoints need;
each row's codes, severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/plan.txt. Batch arithmetic and truncation:
test_plan_rows_batch.py; vLLM server mode: test_plan_rows_server.py.

Disk, hand-worked: a checkpoint holds the weights and AdamW's two moments in the training
dtype (4 bytes/param, 2 only in pure half precision: master_fp32 false with bf16 or
fp16), or the weights alone with save_only_model; need = save_total_limit (default 1) x
checkpoint + the final model (weights); it fires when need > free. The free space is the
probe's value for the output dir (a relative dir joined to the probed cwd, or found by
its tail when no cwd was recorded), else that of the longest recorded path containing it.
"""

from __future__ import annotations

import json

import pytest
from check_wording import assert_row, found
from repo_paths import FIXTURES

from shop_r1_doctor.checks.plan import (
    bf16_pre_ampere,
    dataset_path,
    disk_at_checkpoint,
    env_references,
    liger_requested,
    self_certainty_group_scaled,
)

A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
T4 = {"index": 0, "name": "Tesla T4", "compute_capability": "7.5"}
V100 = {"index": 0, "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}


# ----------------------------------------------------------------- bf16 before Ampere
def _bf16(gpu: str, cc: str) -> list[tuple]:
    return [("BF16_PRE_AMPERE", "error", gpu, f"cc {cc}", "8.0", "bf16: false", "fp16: true")]


def _bf16_snap(bf16: bool | None, gpus: list[dict]) -> dict:
    return {"gpus": gpus, "plan": {"bf16": bf16}}


BF16_ROWS = [
    ("a T4", _bf16_snap(True, [T4]), _bf16("Tesla T4", "7.5")),
    ("an A100: exactly 8.0", _bf16_snap(True, [A100]), []),
    (
        "two V100s",
        _bf16_snap(True, [V100, {**V100, "index": 1}]),
        _bf16("2x Tesla V100-SXM2-32GB", "7.0"),
    ),
    ("an H100 and a T4: the T4", _bf16_snap(True, [H100, T4]), _bf16("Tesla T4", "7.5")),
    (
        "a GPU whose capability is unknown",
        _bf16_snap(True, [{"index": 0, "name": "NVIDIA Mystery"}]),
        [],
    ),
    ("a T4, bf16 off", _bf16_snap(False, [T4]), []),
    ("a T4, bf16 not said", _bf16_snap(None, [T4]), []),
]


@pytest.mark.parametrize(("case", "s", "want"), BF16_ROWS, ids=[r[0] for r in BF16_ROWS])
def test_bf16_rows(case, s, want) -> None:
    assert_row(bf16_pre_ampere, s, want)


# ----------------------------------------------------------------- Liger requested
ABSENT = object()


def _liger_snap(use: bool | None, record=ABSENT, ok: bool | None = None, error: str = "") -> dict:
    snap: dict = {"plan": {"use_liger_kernel": use}, "packages": {}}
    if record is not ABSENT:
        snap["packages"]["liger-kernel"] = record
    if ok is not None:
        snap["imports"] = {"liger_kernel.transformers": {"ok": ok, "error": error}}
    return snap


def _liger(*named: str) -> list[tuple]:
    fix = ("pip install liger-kernel", "liger_kernel: off")
    return [("LIGER_REQUESTED_NOT_INSTALLED", "error", "use_liger_kernel", *named, *fix)]


TRITON = "ImportError: cannot import name 'triton'"
NO_LIGER = "ModuleNotFoundError: No module named 'liger_kernel'"
LIGER_ROWS = [
    ("requested, not installed", _liger_snap(True, None), _liger("not installed")),
    (
        "requested, installed, does not import",
        _liger_snap(True, {"version": "0.6.2"}, False, TRITON),
        _liger("does not import", "(liger-kernel 0.6.2)", TRITON),
    ),
    (
        "requested, not looked for, does not import",
        _liger_snap(True, ABSENT, False, NO_LIGER),
        _liger("does not import", NO_LIGER),
    ),
    ("requested, installed, imports", _liger_snap(True, {"version": "0.6.2"}, True), []),
    ("requested, installed, import unknown", _liger_snap(True, {"version": "0.6.2"}), []),
    ("not requested, not installed", _liger_snap(False, None), []),
    ("not said, not installed", _liger_snap(None, None), []),
]


@pytest.mark.parametrize(("case", "s", "want"), LIGER_ROWS, ids=[r[0] for r in LIGER_ROWS])
def test_liger_rows(case, s, want) -> None:
    assert_row(liger_requested, s, want)


def test_liger_not_looked_for_names_no_version() -> None:
    (f,) = found(liger_requested, LIGER_ROWS[2][1])
    assert "liger-kernel 0" not in f.title


# ----------------------------------------------------------------- self-certainty under group scaling
def _sc(weight: str) -> list[tuple]:
    return [
        (
            "GRPO_SELF_CERTAINTY_GROUP_SCALED",
            "warning",
            f"self_certainty_weight {weight} ",
            "scale_rewards=group",
            "self_certainty_weight: 0",
        )
    ]


SC_ROWS = [
    ("grpo, 0.1, TRL's default scaling", {"task": "grpo", "self_certainty_weight": 0.1}, _sc("0.1")),
    (
        "grpo, 0.05, scale_rewards=group",
        {"task": "grpo", "self_certainty_weight": 0.05, "scale_rewards": "group"},
        _sc("0.05"),
    ),
    ("grpo, weight 1 (an integer)", {"task": "grpo", "self_certainty_weight": 1}, _sc("1")),
    (
        "grpo, scale_rewards=batch",
        {"task": "grpo", "self_certainty_weight": 0.1, "scale_rewards": "batch"},
        [],
    ),
    (
        "grpo, scale_rewards=none",
        {"task": "grpo", "self_certainty_weight": 0.1, "scale_rewards": "none"},
        [],
    ),
    ("grpo, weight 0", {"task": "grpo", "self_certainty_weight": 0}, []),
    ("grpo, no weight", {"task": "grpo"}, []),
    ("sft with a weight", {"task": "sft", "self_certainty_weight": 0.1}, []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "plan", "want"), SC_ROWS, ids=[r[0] for r in SC_ROWS])
def test_self_certainty_rows(case, plan, want) -> None:
    assert_row(self_certainty_group_scaled, {"plan": plan}, want)


# ----------------------------------------------------------------- a dataset repository root
def _root(path: str, repo: str, files: str) -> list[tuple]:
    return [
        (
            "DATASET_PATH_NOT_FILES",
            "error",
            f"dataset={path} ",
            f"dataset: {files}/data/<file>.parquet",
            f"load_dataset('{repo}')",
        )
    ]


SESSIONS = "hf://datasets/ecom/sessions"
DATASET_ROWS = [
    ("a repository root", SESSIONS, _root(SESSIONS, "ecom/sessions", SESSIONS)),
    ("a root with a slash", SESSIONS + "/", _root(SESSIONS + "/", "ecom/sessions", SESSIONS)),
    (
        "a root at a revision",
        SESSIONS + "@v1",
        _root(SESSIONS + "@v1", "ecom/sessions@v1", SESSIONS + "@v1"),
    ),
    ("a parquet file", SESSIONS + "/data/train-00000.parquet", []),
    ("a local file", "data/sessions.jsonl", []),
    ("a model repository", "hf://ecom/sessions", []),
    ("not said", None, []),
]


@pytest.mark.parametrize(("case", "path", "want"), DATASET_ROWS, ids=[r[0] for r in DATASET_ROWS])
def test_dataset_path_rows(case, path, want) -> None:
    assert_row(dataset_path, {"plan": {"dataset": path}}, want)


# ----------------------------------------------------------------- ${VAR} in the config
def _env(name: str, state: str) -> tuple:
    return ("CFG_ENV_INTERPOLATION", "error", f"${{{name}}}", state, f"export {name}=")


def _env_snap(refs: list[str] | None, env=ABSENT) -> dict:
    snap: dict = {"plan": {"env_refs": refs}}
    if env == "dump":
        snap.update(source={"kind": "dump"}, env={"VLLM_USE_V1": "1"})
    elif env == "dump-empty":
        snap.update(source={"kind": "dump"}, env={"WANDB_PROJECT": ""})
    elif env is not ABSENT:
        snap["env"] = env
    return snap


W = ["WANDB_PROJECT"]
ENV_ROWS = [
    ("set", _env_snap(W, {"WANDB_PROJECT": "shop"}), []),
    ("unset", _env_snap(W, {"HF_HOME": "/data/hf"}), [_env("WANDB_PROJECT", "unset")]),
    ("empty", _env_snap(W, {"WANDB_PROJECT": ""}), [_env("WANDB_PROJECT", "empty")]),
    ("a value that is not text", _env_snap(W, {"WANDB_PROJECT": 5}), [_env("WANDB_PROJECT", "unset")]),
    (
        "two, in the config's order",
        _env_snap(["RUN_NAME", "DATA_DIR"], {"DATA_DIR": ""}),
        [_env("RUN_NAME", "unset"), _env("DATA_DIR", "empty")],
    ),
    ("env not collected", _env_snap(W), []),
    ("a pasted dump that does not list it", _env_snap(W, "dump"), []),
    ("a pasted dump that lists it empty", _env_snap(W, "dump-empty"), [_env("WANDB_PROJECT", "empty")]),
    ("no references", _env_snap(None, {}), []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "s", "want"), ENV_ROWS, ids=[r[0] for r in ENV_ROWS])
def test_env_reference_rows(case, s, want) -> None:
    assert_row(env_references, s, want)


# ----------------------------------------------------------------- the disk the checkpoints need
GIB = 1024**3
B = 1_000_000_000
DISK_FIX = ("save_total_limit: 1", "save_only_model: true", "output_dir")


def _disk(need: str, free: str, where: str, kept: int, each: str) -> list[tuple]:
    return [
        (
            "DISK_FULL_AT_CHECKPOINT",
            "error",
            f"~{need} GiB",
            f" {free} GiB",
            where,
            f"{kept} checkpoint(s)",
            f"~{each} GiB",
            *DISK_FIX,
        )
    ]


def _disk_snap(plan: dict, free: int, out: str = "/data/out") -> dict:
    plan = {"model_params": B, "output_dir": out, **plan}
    return {"host": {"disk_free_bytes": {out: free}}, "plan": plan}


HALF_BF16 = {"master_fp32": False, "bf16": True, "save_total_limit": 2}
SIZE_ROWS = [
    (
        "fp32 + AdamW: 12 GB + the 4 GB model > 15 GB",
        _disk_snap({}, 15 * B),
        _disk("14.9", "14.0", "/data/out", 1, "11.2"),
    ),
    ("fp32 + AdamW: exactly 16 GB free", _disk_snap({}, 16 * B), []),
    (
        "fp32 + AdamW: one byte short",
        _disk_snap({}, 16 * B - 1),
        _disk("14.9", "14.9", "/data/out", 1, "11.2"),
    ),
    (
        "save_only_model, 3 kept: 3 x 4 + 4 GB",
        _disk_snap({"save_only_model": True, "save_total_limit": 3}, 15 * B),
        _disk("14.9", "14.0", "/data/out", 3, "3.7"),
    ),
    (
        "save_only_model, 3 kept: 16 GB free",
        _disk_snap({"save_only_model": True, "save_total_limit": 3}, 16 * B),
        [],
    ),
    (
        "pure bf16, 2 kept: 2 x 6 + 2 GB",
        _disk_snap(HALF_BF16, 13 * B),
        _disk("13.0", "12.1", "/data/out", 2, "5.6"),
    ),
    ("pure bf16, 2 kept: 14 GB free", _disk_snap(HALF_BF16, 14 * B), []),
    (
        "pure fp16, 2 kept: 14 GB free",
        _disk_snap({"master_fp32": False, "fp16": True, "save_total_limit": 2}, 14 * B),
        [],
    ),
    (
        "bf16 autocast over fp32 weights, 2 kept: 2 x 12 + 4 GB",
        _disk_snap({"bf16": True, "save_total_limit": 2}, 14 * B),
        _disk("26.1", "13.0", "/data/out", 2, "11.2"),
    ),
    (
        "master_fp32 false without a half dtype: fp32",
        _disk_snap(
            {"master_fp32": False, "bf16": False, "fp16": False, "save_total_limit": 2}, 14 * B
        ),
        _disk("26.1", "13.0", "/data/out", 2, "11.2"),
    ),
    ("model size unknown", _disk_snap({"model_params": None}, 1), []),
    ("model size 0", _disk_snap({"model_params": 0}, 1), []),
]


def _recorded_h100() -> dict:
    """tests/fixtures/machines/h100: 68_670_930_944 bytes (64.0 GiB) free under the probed
    cwd /srv/shop-r1; a relative output dir lies under it. 7B in fp32 + AdamW: 84 GB per
    checkpoint + 28 GB = 112 GB (104.3 GiB)."""
    snap = json.loads((FIXTURES / "machines" / "h100" / "snapshot.json").read_text())
    snap["plan"] = {"model_params": 7 * B, "output_dir": "runs/sft"}
    return snap


SIZE_ROWS.append(
    ("recorded H100, a 7B model", _recorded_h100(), _disk("104.3", "64.0", "runs/sft", 1, "78.2"))
)


@pytest.mark.parametrize(("case", "s", "want"), SIZE_ROWS, ids=[r[0] for r in SIZE_ROWS])
def test_checkpoint_size_rows(case, s, want) -> None:
    assert_row(disk_at_checkpoint, s, want)


# A 1T-parameter plan always fires; the finding names which free value was read.
# (case, output_dir, cwd, disk_free_bytes, free GiB read or None)
WHERE_ROWS = [
    ("the output dir itself", "/data/out", None, {"/data": 20 * GIB, "/data/out": 10 * GIB}, "10.0"),
    ("the longest containing path", "/data/runs/a", None, {"/": 5 * GIB, "/data": 20 * GIB}, "20.0"),
    ("the longest, listed first", "/data/runs/a", None, {"/data": 20 * GIB, "/": 5 * GIB}, "20.0"),
    ("a sibling path does not contain it", "/data2/out", None, {"/data": 20 * GIB}, None),
    ("relative, joined to the probed cwd", "out", "/srv/shop-r1",
     {"/srv/shop-r1/out": 3 * GIB, "/srv/shop-r1": 64 * GIB}, "3.0"),
    ("relative, under the probed cwd", "out", "/srv/shop-r1",
     {"/srv/shop-r1": 64 * GIB, "/tmp": GIB}, "64.0"),
    ("relative, no cwd: found by its tail", "./out/", None,
     {"/home/u/proj/out": 2 * GIB, "/": 9 * GIB}, "2.0"),
    ("relative, no cwd, tail not a number: cwd's entry", "out", None,
     {"/x/out": "n/a", ".": 4 * GIB}, "4.0"),
    ("absolute: another dir's tail does not count", "/scratch/out", None,
     {"/home/u/out": 2 * GIB, "/scratch": 7 * GIB}, "7.0"),
    ("the cwd entry covers any path", "/elsewhere/out", None, {"cwd": 6 * GIB}, "6.0"),
    ("the output_dir entry", "/elsewhere/out", None, {"output_dir": 6 * GIB}, "6.0"),
    ("/ and . are as long: the first listed", "/x/out", None, {"/": 5 * GIB, ".": 4 * GIB}, "5.0"),
    ("odd keys and values are skipped", "/x/out", None, {5: GIB, "/x": None, "/": 3 * GIB}, "3.0"),
    ("no output dir: the cwd's entry", None, None, {".": 4 * GIB}, "4.0"),
    ("no output dir, only paths", None, None, {"/srv/shop-r1": 64 * GIB}, None),
    ("relative, no cwd: the first tail with a free value", "out", None,
     {"/a/out": None, "/b/out": 2 * GIB}, "2.0"),
    ("no output dir, the root only: not read as a tail", None, None, {"/": 5 * GIB}, None),
    ("relative, no cwd, a name ending in X", "./run-X/", None, {"/home/u/run-X": 2 * GIB}, "2.0"),
    ("a containing path beats the cwd entry", "/data/runs/a", None,
     {"cwd": GIB, "/data": 20 * GIB}, "20.0"),
    ("disk not probed", "/data/out", None, None, None),
    ("disk facts not a mapping", "/data/out", None, [GIB], None),
]  # fmt: skip


def _where_snap(out: str | None, cwd: str | None, table) -> dict:
    host: dict = {"disk_free_bytes": table}
    if cwd:
        host["paths"] = {"cwd": cwd}
    return {"host": host, "plan": {"model_params": 1000 * B, "output_dir": out}}


@pytest.mark.parametrize(
    ("case", "out", "cwd", "table", "free"), WHERE_ROWS, ids=[r[0] for r in WHERE_ROWS]
)
def test_free_space_rows(case, out, cwd, table, free) -> None:
    want = [] if free is None else _disk("14901.2", free, out or "the output dir", 1, "11175.9")
    assert_row(disk_at_checkpoint, _where_snap(out, cwd, table), want)


SNAPSHOTS = [
    *[(r[0], r[1]) for r in BF16_ROWS + LIGER_ROWS + ENV_ROWS + SIZE_ROWS],
    *[(c, {"plan": plan}) for c, plan, _ in SC_ROWS],
    *[(c, {"plan": {"dataset": path}}) for c, path, _ in DATASET_ROWS],
    *[(r[0], _where_snap(*r[1:4])) for r in WHERE_ROWS],
]
