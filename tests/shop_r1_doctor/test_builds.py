"""Which torch build a machine runs: GPUs and driver together (compat.yaml tables)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from shop_r1_doctor.builds import choose_torch_build, index_for

V = Version

# (torch, profile's variant, GPUs, driver) -> variant chosen (None: no build runs)
ROWS = [
    # the machine: RTX 5090 on driver 570 runs CUDA <= 12.8, never cu130
    ("2.11.0", "cu130", [(12, 0)], "570.172.08", "cu128"),
    ("2.11.0", "cu130", [(12, 0)], "580.65.06", "cu130"),
    ("2.11.0", "cu130", [(9, 0)], "575.51.03", "cu129"),
    # no driver known (a plan for another machine): the profile's
    ("2.11.0", "cu130", [(9, 0)], None, "cu130"),
    # 550 runs CUDA 12.4; torch 2.11 has no build that old
    ("2.11.0", "cu130", [(12, 0)], "550.54.15", None),
    # cu126 builds stop at sm_90: an sm_120 on a 560 driver has no runnable 2.11 build
    ("2.11.0", "cu130", [(12, 0)], "560.35.03", None),
    ("2.11.0", "cu130", [(8, 0)], "560.35.03", "cu126"),
    # torch 2.12 dropped cu128 (compat.yaml): 570 leaves cu126, which has no sm_120
    ("2.12.0", "cu130", [(8, 6)], "570.26", "cu126"),
    ("2.13.0", "cpu", [], None, "cpu"),
]


@pytest.mark.parametrize(("torch", "variant", "ccs", "driver", "want"), ROWS)
def test_build_for_gpus_and_driver(torch, variant, ccs, driver, want):
    got = choose_torch_build(V(torch), variant, ccs, V(driver) if driver else None)
    assert (got.variant if got else None) == want
    if got is not None and want != variant:
        assert got.downgraded_from == variant
        assert got.index_url.endswith("/" + want)


def test_a_mirror_keeps_its_host_with_the_variant_swapped():
    assert index_for("cu128", "http://mirror/whl/cu130", "cu130") == "http://mirror/whl/cu128"
    assert index_for("cu128") == "https://download.pytorch.org/whl/cu128"
