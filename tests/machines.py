"""The recorded machines (tests/fixtures/machines/<name>/), found in one place.

Each folder holds what was recorded on one machine: raw outputs the probes parse
(nvidia-smi, NVML dump, /proc files, packages; replayed by tests/doctor_replay.py)
and/or its `snapshot.json` (the doctor's facts). See tests/fixtures/machines/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repo_paths import FIXTURES

MACHINES = FIXTURES / "machines"


def snapshot_path(name: str) -> Path:
    """`tests/fixtures/machines/<name>/snapshot.json`."""
    return MACHINES / name / "snapshot.json"


def machine_snapshot(name: str) -> dict[str, Any]:
    """The machine's snapshot, parsed (a fresh copy each call: tests may edit it)."""
    return json.loads(snapshot_path(name).read_text())
