"""scripts/refresh_compat.py against recorded index metadata (no network)."""

from __future__ import annotations

import subprocess
import sys

from packaging.version import Version
from repo_paths import ROOT, load_script

from shop_r1_doctor.knowledge import COMPAT_PATH, load_compat, load_compat_file

INDEX = ROOT / "tests" / "fixtures" / "index"
SCRIPT = ROOT / "scripts" / "refresh_compat.py"


def _module():
    return load_script("scripts/refresh_compat.py")


def test_profiles_refresh_reads_torch_pins_from_recorded_metadata():
    rc = _module()
    pins = rc.vllm_torch_pins(rc.recorded_fetch(INDEX), Version("0.8.0"))
    assert pins[Version("0.26.0")] == Version("2.11.0")
    assert pins[Version("0.16.0")] == Version("2.9.1")  # compat.md: "sources conflict"
    assert pins[Version("0.33.0")] == Version("2.14.0")  # compat.md: "not found"
    assert pins[Version("0.8.1")] is None  # no recording: unreadable, not guessed


def test_profiles_refresh_check_reports_drift_and_write_removes_it(tmp_path):
    compat = tmp_path / "compat.yaml"
    compat.write_text(COMPAT_PATH.read_text())
    base = [sys.executable, str(SCRIPT), "--index-dir", str(INDEX), "--compat", str(compat)]
    check = subprocess.run([*base, "--check"], capture_output=True, text=True)
    if "drift: vllm" in check.stdout:
        assert check.returncode == 1
    write = subprocess.run([*base, "--write"], capture_output=True, text=True)
    assert write.returncode == 0, write.stderr
    after = subprocess.run([*base, "--check"], capture_output=True, text=True)
    assert "drift: vllm" not in after.stdout
    refreshed = load_compat_file(compat)
    assert refreshed.vllm_torch_pin(Version("0.33.0")).value == "2.14.0"
    assert refreshed.vllm_torch_pin(Version("0.26.0")).extra == "13.0"  # CUDA kept
    assert refreshed.vllm_torch_pin(Version("0.6.4")) == load_compat().vllm_torch_pin(
        Version("0.6.4")
    )


def test_profiles_refresh_flags_flash_attn_coverage_gap(tmp_path):
    rc = _module()
    drift = rc.flash_attn_drift(rc.recorded_fetch(INDEX), load_compat())
    texts = [str(d) for d in drift]
    assert any(t.startswith("note: flash-attn v2.8.2: release assets unavailable") for t in texts)
    counted = [d for d in drift if d.counts]
    for item in counted:
        assert "flash-attn v2.8.3" in item.what


def test_profiles_refresh_a_missing_index_exits_2(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--index-dir", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "cannot read the vLLM index" in proc.stderr
