"""Fault injection: fake packages whose import raises, aborts or hangs; the doctor finishes."""

from __future__ import annotations

import json

import pytest
from doctor_fakes import FAKEPKGS, dists, make_deps

from shop_r1_doctor.probes.collect import collect_snapshot
from shop_r1_doctor.probes.imports import GROUPS, installed_groups, probe_import_group

FLASH = next(g for g in GROUPS if g.key == "flash_attn")


def _deps(tmp_path, pkg, **kw):
    return make_deps(tmp_path, extra_path=(str(FAKEPKGS / pkg),), **kw)


def test_undefined_symbol_is_an_error_with_the_message(tmp_path):
    sections, child = probe_import_group(_deps(tmp_path, "undefined_symbol"), FLASH, timeout=20)
    assert child.status == "error"
    assert "undefined symbol: _ZN3c104cuda9SetDeviceEi" in child.detail
    rec = sections["imports"]["flash_attn"]
    assert rec["ok"] is False
    assert rec["error"].startswith("ImportError: ")
    assert "_ZN3c104cuda9SetDeviceEi" in rec["error"]


def test_abort_is_a_crash_naming_the_signal(tmp_path):
    sections, child = probe_import_group(_deps(tmp_path, "abort"), FLASH, timeout=20)
    assert child.status == "crash"
    assert "SIGABRT" in child.detail
    assert "double free" in child.detail
    assert sections["imports"]["flash_attn"]["ok"] is False


def test_hang_is_a_timeout(tmp_path):
    # the child sleeps 600 s: returning at all is the timeout working
    sections, child = probe_import_group(_deps(tmp_path, "hang"), FLASH, timeout=1.0)
    assert child.status == "timeout"
    assert sections["imports"]["flash_attn"]["ok"] is False


def test_healthy_import_reports_version(tmp_path):
    sections, child = probe_import_group(_deps(tmp_path, "ok"), FLASH, timeout=20)
    assert child.status == "ok"
    assert sections["imports"]["flash_attn"] == {"ok": True, "error": None, "version": "2.8.3"}
    assert sections["imports"]["flash_attn_2_cuda"]["ok"] is True


def test_only_installed_packages_are_imported(tmp_path):
    present, absent = installed_groups(_deps(tmp_path, "ok"))
    assert [g.key for g in present] == ["flash_attn"]
    assert "vllm" in [g.key for g in absent]


@pytest.mark.parametrize(
    ("pkg", "status", "detail"),
    [
        ("undefined_symbol", "error", "undefined symbol"),
        ("abort", "crash", "SIGABRT"),
        ("hang", "timeout", "no answer"),
    ],
)
def test_doctor_finishes_whatever_the_import_does(tmp_path, pkg, status, detail):
    deps = _deps(tmp_path, pkg, dists=dists(numpy="2.2.6"))
    snap = collect_snapshot(deps=deps, timeout=1.5)
    rec = snap["probes"]["imports.flash_attn"]
    assert rec["status"] == status
    assert detail in rec["detail"]
    assert snap["imports"]["flash_attn"]["ok"] is False
    assert snap["imports"]["vllm"] is None  # not installed: looked, absent
    for name in ("host", "gpu", "cuda_toolkit", "packages", "env", "ray", "torch"):
        assert snap["probes"][name]["status"] == "ok", name
    json.dumps(snap)  # the snapshot stays plain JSON


def test_fast_skips_the_import_children(tmp_path):
    started = []
    snap = collect_snapshot(
        deps=_deps(tmp_path, "hang"), fast=True, timeout=30, on_started=lambda: started.append(1)
    )
    assert started == [1]
    assert snap["probes"]["imports.flash_attn"]["status"] == "skipped"
    assert "flash_attn" not in snap["imports"]  # unknown, not "absent"


def test_torch_cuda_init_abort_is_a_crash(tmp_path):
    deps = _deps(tmp_path, "torch_abort", dists=dists(torch="2.11.0+cu130"))
    snap = collect_snapshot(deps=deps, timeout=20)
    rec = snap["probes"]["torch"]
    assert rec["status"] == "crash"
    assert "SIGABRT" in rec["detail"]
    assert snap["torch"]["error"].startswith("crash")


def test_a_probe_that_raises_becomes_an_error(tmp_path):
    def broken_dists():
        raise OSError("site-packages unreadable")

    snap = collect_snapshot(deps=make_deps(tmp_path, dists=broken_dists), timeout=5)
    assert snap["probes"]["packages"] == {
        "status": "error",
        "seconds": snap["probes"]["packages"]["seconds"],
        "detail": "OSError: site-packages unreadable",
    }
    assert "packages" not in snap  # unknown, never a guess
    assert snap["probes"]["host"]["status"] == "ok"
