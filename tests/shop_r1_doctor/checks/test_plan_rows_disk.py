"""Decision rows for DISK_FULL_AT_CHECKPOINT (shop_r1_doctor/checks/plan.py): how much the
checkpoints need and where the free space is read.

Hand-worked: a checkpoint holds the weights and AdamW's two moments in the training dtype
(4 bytes/param, 2 only in pure half precision: master_fp32 false with bf16 or fp16), or
the weights alone with save_only_model; need = save_total_limit (default 1) x checkpoint
+ the final model (weights); it fires when need > free. The free space is the probe's
value for the output dir (a relative dir joined to the probed cwd, or found by its tail
when no cwd was recorded), else that of the longest recorded path containing it.
"""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from shop_r1_doctor.checks.plan import disk_at_checkpoint
from shop_r1_doctor.facts import Facts

GIB = 1024**3
B = 1_000_000_000
FIX = "free disk space, save_total_limit: 1, save_only_model: true, or another output_dir"
TAIL = " plus the final model: 'No space left on device' hours into the run."


def _found(snap: dict) -> list[tuple[str, str, str, str, str | None]]:
    return [(f.code, f.severity, f.title, f.detail, f.fix) for f in disk_at_checkpoint(Facts(snap))]


def _snap(plan: dict, free: int, out: str = "/data/out") -> dict:
    return {"host": {"disk_free_bytes": {out: free}}, "plan": {"output_dir": out, **plan}}


# (case, plan (1B params unless said), free bytes, expected (title, detail) or None)
SIZE_ROWS = [
    (
        "fp32 + AdamW: 12 GB + the 4 GB model > 15 GB",
        {},
        15 * B,
        (
            "checkpoints need ~14.9 GiB; 14.0 GiB free at /data/out",
            "1 checkpoint(s) of ~11.2 GiB (weights + optimizer state)",
        ),
    ),
    ("fp32 + AdamW: exactly 16 GB free", {}, 16 * B, None),
    (
        "fp32 + AdamW: one byte short",
        {},
        16 * B - 1,
        (
            "checkpoints need ~14.9 GiB; 14.9 GiB free at /data/out",
            "1 checkpoint(s) of ~11.2 GiB (weights + optimizer state)",
        ),
    ),
    (
        "save_only_model, 3 kept: 3 x 4 + 4 GB",
        {"save_only_model": True, "save_total_limit": 3},
        15 * B,
        (
            "checkpoints need ~14.9 GiB; 14.0 GiB free at /data/out",
            "3 checkpoint(s) of ~3.7 GiB (weights)",
        ),
    ),
    (
        "save_only_model, 3 kept: 16 GB free",
        {"save_only_model": True, "save_total_limit": 3},
        16 * B,
        None,
    ),
    (
        "pure bf16, 2 kept: 2 x 6 + 2 GB",
        {"master_fp32": False, "bf16": True, "save_total_limit": 2},
        13 * B,
        (
            "checkpoints need ~13.0 GiB; 12.1 GiB free at /data/out",
            "2 checkpoint(s) of ~5.6 GiB (weights + optimizer state)",
        ),
    ),
    (
        "pure bf16, 2 kept: 14 GB free",
        {"master_fp32": False, "bf16": True, "save_total_limit": 2},
        14 * B,
        None,
    ),
    (
        "pure fp16, 2 kept: 14 GB free",
        {"master_fp32": False, "fp16": True, "save_total_limit": 2},
        14 * B,
        None,
    ),
    (
        "bf16 autocast over fp32 weights, 2 kept: 2 x 12 + 4 GB",
        {"bf16": True, "save_total_limit": 2},
        14 * B,
        (
            "checkpoints need ~26.1 GiB; 13.0 GiB free at /data/out",
            "2 checkpoint(s) of ~11.2 GiB (weights + optimizer state)",
        ),
    ),
    (
        "master_fp32 false without a half dtype: fp32",
        {"master_fp32": False, "bf16": False, "fp16": False, "save_total_limit": 2},
        14 * B,
        (
            "checkpoints need ~26.1 GiB; 13.0 GiB free at /data/out",
            "2 checkpoint(s) of ~11.2 GiB (weights + optimizer state)",
        ),
    ),
    ("model size unknown", {"model_params": None}, 1, None),
    ("model size 0", {"model_params": 0}, 1, None),
]


@pytest.mark.parametrize(
    ("plan", "free", "expected"), [r[1:] for r in SIZE_ROWS], ids=[r[0] for r in SIZE_ROWS]
)
def test_checkpoint_size_rows(plan, free, expected) -> None:
    rows = _found(_snap({"model_params": B, **plan}, free))
    if expected is None:
        assert rows == []
    else:
        title, detail = expected
        assert rows == [("DISK_FULL_AT_CHECKPOINT", "error", title, detail + TAIL, FIX)]


def test_recorded_h100_with_a_7b_model() -> None:
    """tests/fixtures/machines/h100: 68_670_930_944 bytes (64.0 GiB) free under the probed
    cwd /srv/shop-r1; a relative output dir lies under it. 7B in fp32 + AdamW: 84 GB per
    checkpoint + 28 GB = 112 GB (104.3 GiB)."""
    snap = json.loads((FIXTURES / "machines" / "h100" / "snapshot.json").read_text())
    snap["plan"] = {"model_params": 7 * B, "output_dir": "runs/sft"}
    assert _found(snap) == [
        (
            "DISK_FULL_AT_CHECKPOINT",
            "error",
            "checkpoints need ~104.3 GiB; 64.0 GiB free at runs/sft",
            "1 checkpoint(s) of ~78.2 GiB (weights + optimizer state)" + TAIL,
            FIX,
        )
    ]


# ----------------------------------------------------------------- where the free space is read
# A 1T-parameter plan always fires; the title shows which free value was read.
# (case, output_dir, cwd, disk_free_bytes, expected free text or None)
WHERE_ROWS = [
    (
        "the output dir itself",
        "/data/out",
        None,
        {"/data": 20 * GIB, "/data/out": 10 * GIB},
        "10.0",
    ),
    (
        "the longest containing path",
        "/data/runs/a",
        None,
        {"/": 5 * GIB, "/data": 20 * GIB},
        "20.0",
    ),
    ("the longest, listed first", "/data/runs/a", None, {"/data": 20 * GIB, "/": 5 * GIB}, "20.0"),
    ("a sibling path does not contain it", "/data2/out", None, {"/data": 20 * GIB}, None),
    (
        "relative, joined to the probed cwd",
        "out",
        "/srv/shop-r1",
        {"/srv/shop-r1/out": 3 * GIB, "/srv/shop-r1": 64 * GIB},
        "3.0",
    ),
    (
        "relative, under the probed cwd",
        "out",
        "/srv/shop-r1",
        {"/srv/shop-r1": 64 * GIB, "/tmp": GIB},
        "64.0",
    ),
    (
        "relative, no cwd: found by its tail",
        "./out/",
        None,
        {"/home/u/proj/out": 2 * GIB, "/": 9 * GIB},
        "2.0",
    ),
    (
        "relative, no cwd, tail not a number: cwd's entry",
        "out",
        None,
        {"/x/out": "n/a", ".": 4 * GIB},
        "4.0",
    ),
    (
        "absolute: another dir's tail does not count",
        "/scratch/out",
        None,
        {"/home/u/out": 2 * GIB, "/scratch": 7 * GIB},
        "7.0",
    ),
    ("the cwd entry covers any path", "/elsewhere/out", None, {"cwd": 6 * GIB}, "6.0"),
    ("the output_dir entry", "/elsewhere/out", None, {"output_dir": 6 * GIB}, "6.0"),
    ("/ and . are as long: the first listed", "/x/out", None, {"/": 5 * GIB, ".": 4 * GIB}, "5.0"),
    ("odd keys and values are skipped", "/x/out", None, {5: GIB, "/x": None, "/": 3 * GIB}, "3.0"),
    ("no output dir: the cwd's entry", None, None, {".": 4 * GIB}, "4.0"),
    ("no output dir, only paths", None, None, {"/srv/shop-r1": 64 * GIB}, None),
    (
        "relative, no cwd: the first tail with a free value",
        "out",
        None,
        {"/a/out": None, "/b/out": 2 * GIB},
        "2.0",
    ),
    ("no output dir, the root only: not read as a tail", None, None, {"/": 5 * GIB}, None),
    ("relative, no cwd, a name ending in X", "./run-X/", None, {"/home/u/run-X": 2 * GIB}, "2.0"),
    (
        "a containing path beats the cwd entry",
        "/data/runs/a",
        None,
        {"cwd": GIB, "/data": 20 * GIB},
        "20.0",
    ),
    ("disk not probed", "/data/out", None, None, None),
    ("disk facts not a mapping", "/data/out", None, [GIB], None),
]


@pytest.mark.parametrize(
    ("out", "cwd", "table", "free"), [r[1:] for r in WHERE_ROWS], ids=[r[0] for r in WHERE_ROWS]
)
def test_free_space_rows(out, cwd, table, free) -> None:
    host: dict = {"disk_free_bytes": table}
    if cwd:
        host["paths"] = {"cwd": cwd}
    rows = _found({"host": host, "plan": {"model_params": 1000 * B, "output_dir": out}})
    if free is None:
        assert rows == []
    else:
        assert [r[2] for r in rows] == [
            f"checkpoints need ~14901.2 GiB; {free} GiB free at {out or 'the output dir'}"
        ]
