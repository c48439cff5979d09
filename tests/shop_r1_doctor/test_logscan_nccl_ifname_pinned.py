"""NCCL failing with a bare internal or system error in a run that pins
NCCL_SOCKET_IFNAME to one interface name: a hint that the nodes name their interfaces
differently. Codes and severities (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

FAILURE = (
    "fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to"
    " the NCCL developers / '\n"
)


@pytest.mark.parametrize(
    "launch",
    [
        "mpirun -np 2 -hostfile host.txt -x NCCL_SOCKET_IFNAME=enp6s0 ./all_reduce_perf -g 2\n",
        "export NCCL_SOCKET_IFNAME=eth0\ntorchrun --nnodes 2 --node-rank 0 train.py\n",
    ],
    ids=["mpirun", "export"],
)
def test_an_nccl_error_under_one_pinned_interface_is_a_hint(launch):
    assert lead(launch + FAILURE) == ("NCCL_SOCKET_IFNAME_NO_MATCH", "info")


@pytest.mark.parametrize(
    "launch",
    [
        "mpirun -np 2 -x NCCL_SOCKET_IFNAME=enp6s0,enp4s0 ./all_reduce_perf -g 2\n",  # both named
        "mpirun -np 2 ./all_reduce_perf -g 2\n",  # not pinned
    ],
    ids=["list", "unset"],
)
def test_a_list_of_names_or_no_pin_is_not_read_as_it(launch):
    assert "NCCL_SOCKET_IFNAME_NO_MATCH" not in codes(launch + FAILURE)
