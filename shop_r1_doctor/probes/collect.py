"""Run every probe concurrently and assemble the snapshot (`shop-r1.snapshot/1`).

Each probe runs in its own daemon thread (a hung NVML call cannot keep the doctor
alive); probes that import torch or native extensions start child interpreters. How
each probe went is recorded under `probes`: ok / error / timeout / crash / skipped with
its seconds. A probe that raises leaves its sections out ("unknown") and becomes an
`error` record; the doctor always finishes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from shop_r1_doctor import __version__
from shop_r1_doctor.isolate import ChildResult
from shop_r1_doctor.probes import (
    cuda_toolkit,
    docker_probe,
    env,
    gpu,
    host,
    imports,
    limits,
    packages,
    ray_probe,
    torch_probe,
)
from shop_r1_doctor.probes.deps import DistRecord, ProbeDeps
from shop_r1_doctor.snapshot import SNAPSHOT_SCHEMA

__all__ = ["ProbeDeps", "collect_snapshot"]

# Probes that touch no child interpreter finish in milliseconds; this only guards hangs.
QUICK_PROBE_TIMEOUT = 10.0
SECTION_ORDER = (
    "host",
    "driver",
    "gpus",
    "topology",
    "cuda_toolkit",
    "packages",
    "torch",
    "imports",
    "ray",
    "docker",
    "limits",
    "env",
)


@dataclass
class Outcome:
    """What a probe function hands back: sections for the snapshot and how it went."""

    sections: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    detail: str = ""
    child_seconds: float | None = None

    @classmethod
    def of_child(cls, sections: dict[str, Any], child: ChildResult | None, note: str) -> Outcome:
        if child is None:
            status = "skipped" if note.startswith("skipped") else "ok"
            return cls(sections, status, note)
        return cls(sections, child.status, child.detail or note, child.seconds)


class _Slot:
    def __init__(self, name: str, timeout: float) -> None:
        self.name = name
        self.timeout = timeout
        self.done = threading.Event()
        self.outcome: Outcome | None = None
        self.seconds = 0.0

    def result(self, wait: float) -> Outcome | None:
        self.done.wait(wait)
        return self.outcome


def _run(slot: _Slot, fn: Callable[[], Outcome]) -> None:
    start = time.perf_counter()
    try:
        slot.outcome = fn()
    except Exception as exc:  # a probe bug or odd machine: recorded, never fatal
        slot.outcome = Outcome(status="error", detail=f"{type(exc).__name__}: {exc}")
    slot.seconds = time.perf_counter() - start
    slot.done.set()


def _sections(slot: _Slot) -> dict[str, Any]:
    return slot.outcome.sections if slot.outcome else {}


def collect_snapshot(
    *,
    fast: bool = False,
    deps: ProbeDeps | None = None,
    timeout: float = 20.0,
    on_started: Callable[[], object] | None = None,
    want_imports: Collection[str] = (),
) -> dict[str, Any]:
    """Probe this machine. `fast=True` starts no child that imports torch or extensions.

    `want_imports`: on-demand import groups (optional kernels such as liger_kernel) the
    caller's plan uses; only those are imported (and their answers cached), the others
    are read from the cache or their package metadata (`imports.ImportGroup`).

    The torch child is the critical path, so it is decided (cache or child) and spawned
    before the other probe threads start competing for the GIL. `on_started` is called
    once everything runs: the CLI loads the checks' knowledge then, off the critical path.
    """
    deps = deps or ProbeDeps()
    started = time.perf_counter()
    quick = min(timeout, QUICK_PROBE_TIMEOUT)

    @lru_cache(maxsize=1)
    def dists() -> Mapping[str, DistRecord]:
        return packages.installed(deps)

    slots: dict[str, _Slot] = {}
    jobs: dict[str, Callable[[], Outcome]] = {}

    def add(name: str, limit: float, fn: Callable[[], Outcome]) -> None:
        slots[name] = _Slot(name, limit)
        jobs[name] = fn

    def driver_version() -> str | None:
        # /proc/driver/nvidia/version answers at once on Linux; else wait for the gpu probe.
        proc = gpu.proc_driver_version(deps)
        if proc is not None:
            return proc
        if gpu.surely_no_driver(deps):
            return None  # native Linux without the NVIDIA kernel module: nothing to wait for
        gpu_out = slots["gpu"].result(wait=quick)
        driver = gpu_out.sections.get("driver") if gpu_out else None
        return driver.get("version") if isinstance(driver, dict) else None

    def gpu_job() -> Outcome:
        sections = gpu.probe_gpu(deps, timeout=quick)
        return Outcome(sections, detail=sections.pop("_detail", ""))

    torch_spawning = threading.Event()

    def torch_job() -> Outcome:
        try:
            return Outcome.of_child(
                *torch_probe.probe_torch(
                    deps,
                    dists(),
                    driver_version(),
                    timeout=timeout,
                    fast=fast,
                    before_child=torch_spawning.set,
                )
            )
        finally:
            torch_spawning.set()

    add("host", quick, lambda: Outcome({"host": host.probe_host(deps)}))
    add("gpu", quick, gpu_job)
    add("cuda_toolkit", quick, lambda: Outcome(cuda_toolkit.probe_cuda_toolkit(deps, quick)))
    add("packages", quick, lambda: Outcome(packages.probe_packages(deps)))
    add("env", quick, lambda: Outcome(env.probe_env(deps)))
    add("limits", quick, lambda: Outcome(limits.probe_limits(deps)))
    add("ray", quick, lambda: Outcome(ray_probe.probe_ray(deps, dists(), min(quick, 1.0))))
    add("docker", quick, lambda: Outcome(docker_probe.probe_docker(deps, min(quick, 1.0))))
    add("torch", timeout + quick, torch_job)

    present, absent = imports.installed_groups(deps)
    absent_imports = {group.key: None for group in absent}
    skipped_imports: list[str] = []
    for group in present:
        if fast:
            skipped_imports.append(group.key)
            continue

        def import_job(group: imports.ImportGroup = group) -> Outcome:
            if group.on_demand:
                return Outcome.of_child(
                    *imports.probe_on_demand(
                        deps, group, dists(), timeout, wanted=group.key in want_imports
                    )
                )
            sections, child = imports.probe_import_group(deps, group, timeout)
            return Outcome(sections, child.status, child.detail, child.seconds)

        add(f"imports.{group.key}", timeout + quick, import_job)

    def start(name: str) -> None:
        thread = threading.Thread(
            target=_run, args=(slots[name], jobs[name]), name=f"probe-{name}", daemon=True
        )
        try:
            thread.start()
        except RuntimeError:
            # "can't start new thread": the pids or process limit the limits probe is
            # there to report. Run the probe here, so the report still gets made.
            _run(slots[name], jobs[name])

    # Scanned once, here, before any thread competes for the GIL. A failure is raised
    # again (and recorded) by each probe that needs the dists.
    with contextlib.suppress(Exception):
        dists()
    start("torch")
    start("gpu")  # the torch key may wait for the driver version
    torch_spawning.wait(quick)
    for name in slots:
        if name not in ("torch", "gpu"):
            start(name)
    if on_started is not None:
        on_started()

    snapshot: dict[str, Any] = {
        "schema": SNAPSHOT_SCHEMA,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tool_version": __version__,
    }
    records: dict[str, Any] = {}
    merged: dict[str, Any] = {"imports": dict(absent_imports)} if slots or absent else {}
    for name, slot in slots.items():
        remaining = slot.timeout - (time.perf_counter() - started)
        if not slot.done.wait(max(remaining, 0.0)):
            records[name] = {
                "status": "timeout",
                "seconds": round(time.perf_counter() - started, 3),
                "detail": f"no answer in {slot.timeout:g} s",
            }
            continue
        outcome = slot.outcome or Outcome(status="error", detail="no outcome")
        record: dict[str, Any] = {"status": outcome.status, "seconds": round(slot.seconds, 3)}
        if outcome.detail:
            record["detail"] = outcome.detail
        records[name] = record
        for key, value in outcome.sections.items():
            if key == "imports" and isinstance(value, dict):
                merged.setdefault("imports", {}).update(value)
            else:
                merged[key] = value
    for key in skipped_imports:
        records[f"imports.{key}"] = {
            "status": "skipped",
            "seconds": 0.0,
            "detail": "skipped (--fast)",
        }
    for key in SECTION_ORDER:
        if key in merged:
            snapshot[key] = merged[key]
    snapshot["probes"] = records
    snapshot["probes_seconds"] = round(time.perf_counter() - started, 3)
    return snapshot
