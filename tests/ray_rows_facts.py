"""Facts shared by the decision rows of checks/ray.py
(tests/shop_r1_doctor/checks/test_ray_rows.py)."""

from __future__ import annotations

from typing import Any

GIB = 1024**3
# the 2x H200 machine's RAM (tests/fixtures/machines/h200x2): 251.8 GiB
RAM = 270_334_464_000
DOCKER_SHM = 64 * 2**20  # docker's default --shm-size


def ray_facts(**kw: Any) -> dict[str, Any]:
    """What the Ray probe writes when Ray is installed and no head is found, with `kw` over it."""
    return {
        "version": "2.51.1",
        "cluster": "none",
        "address": None,
        "source": None,
        "nodes": 0,
        "error": None,
        "temp_dir": None,
        "dashboard": None,
        "gcs_healthy": None,
        "head_version": None,
        "cluster_file": None,
        "local_heads": [],
        "client": {"ray_address": None, "action": "start-local", "address": None, "error": None},
        **kw,
    }
