"""`_compat` patches of private TRL methods are gated on the versions they were verified
on, and fail loudly here when the installed method changes."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from shop_r1 import _compat

PATCHES = [_compat.PADDED_LOGPS]


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.method)
def test_patched_private_method_is_the_one_verified(patch):
    pytest.importorskip(patch.dist)
    from packaging.specifiers import SpecifierSet

    have = _compat._version(patch.dist)
    assert have in SpecifierSet(patch.verified), (
        f"{patch.dist} {have} is outside {patch.verified}: re-verify {patch.method} "
        "(tests/shop_r1/test_train_grpo_padding.py), then widen `verified`"
    )
    names, sha = patch.fingerprint()
    assert names == patch.params, f"{patch.method} signature changed: {names}"
    assert sha == patch.source_sha256, (
        f"{patch.owner}.{patch.method} changed in {patch.dist} {have}: re-verify the patch "
        f"and set source_sha256 = {sha!r}"
    )
    assert patch.why_not() is None


def test_outside_the_verified_range_the_patch_is_not_applied():
    pytest.importorskip("trl")
    gated = dataclasses.replace(_compat.PADDED_LOGPS, verified=">=99")
    assert "outside >=99" in gated.why_not()
    renamed = dataclasses.replace(_compat.PADDED_LOGPS, params=("self", "model", "ids"))
    assert "now takes" in renamed.why_not()
    missing = dataclasses.replace(_compat.PADDED_LOGPS, method="_no_such_method")
    assert "no longer exists" in missing.why_not()


def test_guard_warns_and_leaves_the_trainer_alone_when_gated(monkeypatch):
    pytest.importorskip("trl")
    monkeypatch.setattr(
        _compat, "PADDED_LOGPS", dataclasses.replace(_compat.PADDED_LOGPS, verified="<1")
    )

    class Trainer:
        def _get_per_token_logps_and_entropies(self, *a):
            return a

    trainer = Trainer()
    before = trainer._get_per_token_logps_and_entropies
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _compat.guard_padded_logps(trainer) is False
    assert trainer._get_per_token_logps_and_entropies == before
    assert any("not applied" in str(w.message) for w in caught)
