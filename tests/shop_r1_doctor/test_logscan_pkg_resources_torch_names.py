"""Readings learned from failures after an upgrade (batch 33): setuptools 82 without
pkg_resources, and a package of the stack using a torch name the installed torch lacks.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead


def test_pkg_resources_gone_is_a_version_skew_hint():
    log = (
        '  File "/venv/lib/python3.12/site-packages/tensorboard/default.py", line 30, in <module>\n'
        "    import pkg_resources\n"
        "ModuleNotFoundError: No module named 'pkg_resources'\n"
    )
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "warning")


def test_a_submodule_of_pkg_resources_or_another_name_is_not_it():
    assert "PACKAGE_VERSION_SKEW" not in codes(
        "ModuleNotFoundError: No module named 'my_pkg_resources'\n"
    )


@pytest.mark.parametrize(
    "log",
    [
        # a one-line summary naming the package's file, as a reporter pasted it
        "transformers/integrations/finegrained_fp8.py:45: _UE8M0_SF_DTYPE = torch.float8_e8m0fnu\n"
        "AttributeError: module 'torch' has no attribute 'float8_e8m0fnu'\n",
        # the traceback's own frame
        '  File "/venv/lib/python3.11/site-packages/peft/tuners/lora/layer.py", line 12, in <module>\n'
        "    from torch.nn.attention import sdpa_kernel\n"
        "AttributeError: module 'torch.nn' has no attribute 'attention'\n",
    ],
)
def test_a_torch_name_missing_in_a_stack_packages_frame_is_torch_too_old(log):
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "warning")


def test_a_torch_name_missing_in_the_users_own_code_is_not_read():
    log = (
        '  File "/home/u/train.py", line 8, in <module>\n'
        "    x = torch.flot32\n"
        "AttributeError: module 'torch' has no attribute 'flot32'\n"
    )
    assert "PACKAGE_VERSION_SKEW" not in codes(log)
