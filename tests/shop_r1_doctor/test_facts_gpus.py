"""The gpus section typed: per-GPU records whose unrecorded fields are NOT_PROBED."""

from __future__ import annotations

import pytest

from shop_r1_doctor.checks.gpu_driver import gpu_processes, gpu_runtime_in_container
from shop_r1_doctor.facts import NOT_PROBED, Facts, GpuFacts, GpuProcess
from shop_r1_doctor.profiles.match import best_profile
from shop_r1_doctor.profiles.model import load_profiles

GIB = 1024**3
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}


@pytest.mark.parametrize(
    ("snapshot", "listed"),
    [
        ({}, NOT_PROBED),  # no GPU probe ran
        ({"gpus": None}, None),
        ({"gpus": "junk"}, NOT_PROBED),  # odd input is unknown, never a crash
        ({"gpus": []}, []),  # looked: no GPU
        ({"gpus": [H100, "junk"]}, [GpuFacts(**H100)]),
    ],
)
def test_the_section(snapshot, listed):
    assert Facts(snapshot).listed_gpus == listed


@pytest.mark.parametrize(
    ("record", "total", "used"),
    [
        ({}, NOT_PROBED, NOT_PROBED),  # NVML refused the memory query (MIG, vGPU)
        ({"memory_total_bytes": 80 * GIB, "memory_used_bytes": GIB}, 80 * GIB, GIB),
        ({"memory_total_bytes": "80 GiB", "memory_used_bytes": None}, NOT_PROBED, None),
    ],
)
def test_a_field(record, total, used):
    (gpu,) = Facts({"gpus": [{**H100, **record}]}).gpus
    assert (gpu.memory_total_bytes, gpu.memory_used_bytes) == (total, used)
    assert (gpu.index, gpu.name, gpu.compute_capability) == (0, H100["name"], "9.0")


@pytest.mark.parametrize(
    ("processes", "decoded"),
    [
        (NOT_PROBED, NOT_PROBED),  # the probe could not list them
        (None, NOT_PROBED),
        ([], ()),  # it looked: none
        (
            [
                {"pid": 7, "name": "python", "used_bytes": GIB},
                "junk",
                {"pid": "x", "used_bytes": 5},
            ],
            (GpuProcess(pid=7, name="python", used_bytes=GIB), GpuProcess(used_bytes=5)),
        ),
    ],
)
def test_processes_decode_one_by_one(processes, decoded):
    record = dict(H100) if processes is NOT_PROBED else {**H100, "processes": processes}
    (gpu,) = Facts({"gpus": [record]}).gpus
    assert gpu.processes == decoded


def test_torch_devices_stand_in_for_an_empty_list():
    facts = Facts({"gpus": [], "torch": {"capabilities": ["8.6", "8.6"]}})
    assert facts.listed_gpus == []
    assert facts.gpus == [
        GpuFacts(index=i, compute_capability="8.6", source="torch") for i in (0, 1)
    ]


# 70 GiB in use, no process seen: only a probe that looked and listed none says "another
# namespace holds it"; a probe that could not list processes says nothing.
@pytest.mark.parametrize(
    ("record", "codes"),
    [
        ({"memory_total_bytes": 80 * GIB, "memory_used_bytes": 70 * GIB}, []),
        (
            {"memory_total_bytes": 80 * GIB, "memory_used_bytes": 70 * GIB, "processes": []},
            ["GPU_BUSY_OTHER_PROCESSES"],
        ),
    ],
)
def test_processes_not_probed_and_none_decide_differently(record, codes):
    facts = Facts({"gpus": [{**H100, **record}]})
    assert [f.code for f in gpu_processes(facts)] == codes


@pytest.mark.parametrize(
    ("snapshot", "codes", "profile"),
    [
        ({}, [], None),  # the GPUs were not probed: no verdict
        ({"gpus": []}, ["DOCKER_GPU_RUNTIME_MISSING"], "cpu"),  # looked: none
    ],
)
def test_section_not_probed_and_empty_decide_differently(snapshot, codes, profile):
    facts = Facts({**snapshot, "host": {"container": "docker"}})
    assert [f.code for f in gpu_runtime_in_container(facts)] == codes
    found = best_profile(facts, load_profiles())
    assert (found[0].name if found else None) == profile
