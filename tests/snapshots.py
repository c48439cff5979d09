"""The one builder of hand-made snapshots for tests: sections from the project's typed
models (shop_r1_doctor/facts.py's Structs, runplan.RunPlan), encoded to the snapshot's
JSON shape and checked by snapshot.validate_snapshot.

A test names the facts it needs and nothing else (`snapshot(gpus=[gpu("T4", "7.5")])`);
a field renamed in a model breaks here, at the keyword, not in every test file. A test of
odd input (a string where a number belongs) passes the raw value and `validate=False`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from machines import machine_snapshot as recorded

from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, GpuProcess, PackageFacts, TorchFacts
from shop_r1_doctor.runplan import RunPlan
from shop_r1_doctor.snapshot import SNAPSHOT_SCHEMA, validate_snapshot

GIB = 1024**3
H100 = "NVIDIA H100 80GB HBM3"

__all__ = [
    "GIB",
    "H100",
    "NOT_PROBED",
    "facts",
    "gpu",
    "pkg",
    "plain",
    "plan",
    "proc",
    "recorded",
    "snapshot",
    "torch",
]


def proc(pid: int, name: str | None = "python", used: int | None = None) -> GpuProcess:
    return GpuProcess(pid=pid, name=name, used_bytes=used)


def gpu(
    name: str | None = H100,
    cc: str | None = "9.0",
    index: int = 0,
    total: int | None = 80 * GIB,
    used: int | None = 0,
    procs: list[GpuProcess] | None = None,
    **fields: Any,
) -> GpuFacts:
    """One GPU record; `procs=None` leaves the process list unprobed, `[]` says none."""
    return GpuFacts(
        index=index,
        name=name,
        compute_capability=cc,
        memory_total_bytes=total,
        memory_used_bytes=used,
        processes=NOT_PROBED if procs is None else tuple(procs),
        **fields,
    )


def torch(version: str | None = "2.11.0+cu130", **fields: Any) -> TorchFacts:
    return TorchFacts(version=version, **fields)


def pkg(version: str, *requires: str) -> PackageFacts:
    """An installed distribution with its (marker-evaluated) requirements."""
    return PackageFacts(version=version, requires=tuple(requires))


def plan(**fields: Any) -> RunPlan:
    return RunPlan(**fields)


def plain(value: Any) -> Any:
    # msgspec drops NOT_PROBED fields and RunPlan's unset ones: the JSON a probe writes
    if isinstance(value, msgspec.Struct):
        return msgspec.json.decode(msgspec.json.encode(value))  # tuples become lists
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def snapshot(base: dict[str, Any] | None = None, *, validate: bool = True, **sections: Any) -> dict:
    """A snapshot dict: `base` (or an empty one) with each given section replaced.

    Sections take typed records or plain values: `gpus=[gpu(...)]`, `torch=torch(...)`,
    `packages={"vllm": pkg("0.11.2")}`, `plan=plan(...)` or a plain dict (checked against
    RunPlan), `host={...}`, `env={...}`; None writes an explicit null ("looked: absent")."""
    snap: dict[str, Any] = json.loads(json.dumps(base)) if base else {}
    snap.setdefault("schema", SNAPSHOT_SCHEMA)
    for name, value in sections.items():
        if name == "plan" and isinstance(value, dict) and validate:
            value = RunPlan(**value)  # an unknown plan field fails here, by name
        snap[name] = plain(value)
    return validate_snapshot(snap, "<test snapshot>") if validate else snap


def facts(base: dict[str, Any] | None = None, **sections: Any) -> Facts:
    return Facts(snapshot(base, **sections))
