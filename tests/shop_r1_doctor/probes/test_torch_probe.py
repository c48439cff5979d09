"""Torch facts from a child (a fake torch on its path) and the cache that skips it."""

from __future__ import annotations

import json

from doctor_fakes import FAKEPKGS, GPU, dists, make_deps
from doctor_replay import TORCH_KEYS

from shop_r1_doctor.probes.torch_probe import probe_torch

RECORDED = json.loads((GPU / "h100" / "torch.json").read_text())


def _deps(tmp_path, **kw):
    return make_deps(tmp_path, extra_path=(str(FAKEPKGS / "torch_cuda"),), **kw)


def _run(deps, installed, driver="580.159.04", fast=False):
    return probe_torch(deps, installed(), driver, timeout=20, fast=fast)


def test_child_reports_the_contract_fields(tmp_path):
    sections, child, _ = _run(_deps(tmp_path), dists(torch="2.11.0+cu130"))
    assert child is not None and child.status == "ok"
    facts = sections["torch"]
    for key in TORCH_KEYS:  # the snapshot contract's torch fields
        assert facts[key] == RECORDED[key], key
    assert facts["error"] is None
    assert facts["capabilities"] == ["9.0"]


def test_second_run_is_served_from_cache(tmp_path):
    deps, installed = _deps(tmp_path), dists(torch="2.11.0+cu130")
    first, _, _ = _run(deps, installed)
    second, child, note = _run(deps, installed)
    assert child is None and note == "cached"
    assert second == first
    # --fast may use a valid cache: it starts no child either way.
    assert _run(deps, installed, fast=True)[2] == "cached"


def test_any_change_invalidates_the_cache(tmp_path):
    deps, installed = _deps(tmp_path), dists(torch="2.11.0+cu130")
    _run(deps, installed)
    assert _run(deps, dists(torch="2.11.0+cu128"))[1] is not None  # another torch
    assert _run(deps, dists(torch="2.11.0+cu130", nvidia_nccl_cu13="2.28.9"))[1] is not None
    assert _run(deps, installed, driver="575.57.08")[1] is not None  # driver update
    deps.environ = {**deps.environ, "CUDA_VISIBLE_DEVICES": "1"}
    assert _run(deps, installed)[1] is not None  # env torch reads at init


def test_fast_without_cache_is_skipped(tmp_path):
    sections, child, note = _run(_deps(tmp_path), dists(torch="2.11.0+cu130"), fast=True)
    assert sections == {} and child is None and note.startswith("skipped")


def test_torch_not_installed_is_null(tmp_path):
    sections, child, _ = _run(_deps(tmp_path), dists(numpy="2.2.6"))
    assert sections == {"torch": None} and child is None


def test_unwritable_cache_only_costs_speed(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    deps = _deps(tmp_path, cache_dir=blocker / "cache")
    sections, child, _ = _run(deps, dists(torch="2.11.0+cu130"))
    assert child is not None and child.status == "ok"
    assert sections["torch"]["version"] == "2.11.0+cu130"
