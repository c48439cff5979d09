"""Liger's kernel dispatcher against nvidia-cutlass-dsl (checks/packages.py's
liger_cutedsl, knowledge/compat.yaml's liger_cutedsl): Liger 0.8.5..0.8.x takes its CuTe
DSL kernels whenever `cutlass.cute` imports, measured 3.9x slower for packed SFT at the
1.5B shape on an H100; LIGER_KERNEL_IMPL[_<OP>] is the user's own choice and is kept."""

from __future__ import annotations

import pytest
from check_wording import assert_row
from snapshots import pkg, plan, snapshot

from shop_r1_doctor.api import liger_triton_pins
from shop_r1_doctor.checks.packages import liger_cutedsl
from shop_r1_doctor.facts import Facts

PINS = {
    "LIGER_KERNEL_IMPL_ROPE": "nvidia-triton",
    "LIGER_KERNEL_IMPL_RMS_NORM": "nvidia-triton",
    "LIGER_KERNEL_IMPL_SWIGLU": "nvidia-triton",
}


def _snap(liger="0.8.5", dsl="4.4.2", env=None, **sections):
    packages = {"torch": pkg("2.11.0")}
    if liger:
        packages["liger-kernel"] = pkg(liger)
    if dsl:
        packages["nvidia-cutlass-dsl"] = pkg(dsl)
    return snapshot(packages=packages, env={} if env is None else env, **sections)


SNAPSHOTS = [
    ("liger 0.8.5 with cutlass dsl", _snap()),
    ("liger 0.8.9 with cutlass dsl", _snap(liger="0.8.9")),
]


@pytest.mark.parametrize(
    ("snap", "expected"),
    [
        (_snap(), [("LIGER_CUTEDSL_AUTOSELECTED", "warning", "0.8.5", "nvidia-cutlass-dsl 4.4.2")]),
        (_snap(liger="0.8.9"), [("LIGER_CUTEDSL_AUTOSELECTED", "warning", "0.8.9")]),
        (_snap(liger="0.8.4"), []),  # before the dispatcher
        (_snap(liger="0.9.0"), []),  # not measured: outside the range
        (_snap(dsl=None), []),  # Triton is what Liger picks without the DSL
        (_snap(liger=None), []),
        (_snap(env={"LIGER_KERNEL_IMPL_ROPE": "nvidia-cutedsl"}), []),  # chosen by the user
        (_snap(env={"LIGER_KERNEL_IMPL": "nvidia-triton"}), []),
        (_snap(plan=plan(use_liger_kernel=False)), []),
        (_snap(plan=plan(use_liger_kernel=True)), [("LIGER_CUTEDSL_AUTOSELECTED", "warning")]),
    ],
    ids=[
        "0.8.5+dsl", "0.8.9+dsl", "0.8.4", "0.9.0", "no dsl", "no liger", "rope chosen",
        "impl chosen", "plan off", "plan on",
    ],
)  # fmt: skip
def test_liger_cutedsl_row(snap, expected):
    assert_row(liger_cutedsl, snap, expected)


def test_an_unprobed_environment_is_no_finding():
    snap = _snap()
    del snap["env"]
    assert_row(liger_cutedsl, snap, [])


def test_the_fix_sets_what_the_trainer_sets():
    (found,) = liger_cutedsl(Facts(_snap()))
    assert all(f"{k}={v}" in found.fix for k, v in PINS.items())
    assert liger_triton_pins("0.8.5", {}) == PINS


@pytest.mark.parametrize(
    ("version", "environ", "pins"),
    [
        ("0.8.5", {}, PINS),
        ("0.8.5", {"LIGER_KERNEL_BACKEND": "triton"}, {}),
        ("0.8.5", {"LIGER_KERNEL_IMPL_SWIGLU": "nvidia-cutedsl"}, {}),
        ("0.8.4", {}, {}),
        (None, {}, {}),
        ("not-a-version", {}, {}),
    ],
)
def test_trainer_pins(version, environ, pins):
    assert liger_triton_pins(version, environ) == pins
