"""`shop-r1 doctor` on this machine with odd limits-related variables: findings with the
value seen, never a traceback; with none set, this machine gets none of the limits codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from repo_paths import ROOT

LIMITS_CODES = {
    "DATALOADER_FD_LIMIT",
    "PROCESS_LIMIT_REACHED",
    "ADDRESS_SPACE_LIMIT",
    "CACHE_DIR_NOT_WRITABLE",
    "NCCL_SOCKET_IFNAME_NO_MATCH",
    "CUDA_ALLOC_CONF_INVALID",
}


def _doctor(**env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYTORCH_", "NCCL_", "GLOO_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "shop_r1.cli", "doctor", "--fast", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**keep, "PYTHONPATH": str(ROOT), **env},
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc, json.loads(proc.stdout)


def test_this_machine_gets_none_of_the_limits_codes() -> None:
    _, doc = _doctor()
    assert {f["code"] for f in doc["findings"]} & LIMITS_CODES == set()
    assert doc["snapshot"]["probes"]["limits"]["status"] == "ok"


def test_garbage_values_are_findings_not_tracebacks() -> None:
    proc, doc = _doctor(
        PYTORCH_CUDA_ALLOC_CONF="[[,:,::,expandable_segments",
        NCCL_SOCKET_IFNAME="^",
        GLOO_SOCKET_IFNAME=",",
    )
    got = [(f["code"], f["severity"]) for f in doc["findings"] if f["code"] in LIMITS_CODES]
    # torch is installed here: the allocator entries are read; a bare ^ or , excludes or
    # names nothing, which is no finding
    assert got and {c for c, _ in got} == {"CUDA_ALLOC_CONF_INVALID"}, got
    assert {s for _, s in got} == {"error"}
    assert proc.returncode == 1  # errors found
