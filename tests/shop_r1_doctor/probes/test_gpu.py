"""GPU probe over outputs recorded on a real H100 and a 2x H200 box, plus old/missing tools."""

from __future__ import annotations

import pytest
from doctor_fakes import (
    GPU,
    QUERY_APPS,
    QUERY_GPU,
    QUERY_GPU_NOCC,
    BrokenNVML,
    FakeNVML,
    ReplayRunner,
    make_deps,
    missing_runner,
    smi_runner,
)

from shop_r1_doctor.probes.gpu import (
    cuda_version_from_int,
    parse_cuda_version,
    parse_topo,
    probe_gpu,
)

MIB = 1024 * 1024


def test_nvml_h100_recorded(tmp_path):
    nvml = FakeNVML.recorded("h100")
    out = probe_gpu(make_deps(tmp_path, nvml=nvml, runner=missing_runner))
    assert out["driver"] == {"version": "580.159.04", "cuda_version": "13.0", "source": "nvml"}
    assert out["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "compute_capability": "9.0",
            "memory_total_bytes": 85520809984,
            "memory_used_bytes": 503316480,
            "processes": [],
        }
    ]
    assert "topology" not in out  # one GPU
    assert nvml.inited == 0  # nvmlShutdown after nvmlInit


def test_nvml_processes_get_names(tmp_path):
    nvml = FakeNVML.recorded("h100", processes={0: [(4242, 2_000_000_000)]})
    deps = make_deps(tmp_path, nvml=nvml, proc_name={4242: "VLLM::EngineCore"}.get)
    (gpu,) = probe_gpu(deps)["gpus"]
    assert gpu["processes"] == [
        {"pid": 4242, "name": "VLLM::EngineCore", "used_bytes": 2_000_000_000}
    ]


def test_nvml_h200x2_topology_p2p(tmp_path):
    out = probe_gpu(make_deps(tmp_path, nvml=FakeNVML.recorded("h200x2")))
    assert [g["name"] for g in out["gpus"]] == ["NVIDIA H200", "NVIDIA H200"]
    assert {g["compute_capability"] for g in out["gpus"]} == {"9.0"}
    # The recording has P2P status but no NVLink/ancestor answers: link stays unknown.
    assert out["topology"] == {
        "source": "nvml",
        "pairs": [{"gpus": [0, 1], "p2p": True, "p2p_nvlink": True}],
    }


def test_nvidia_smi_fallback_h100_recorded(tmp_path):
    runner = smi_runner("h100", busy=True)
    deps = make_deps(tmp_path, nvml=None, runner=runner)
    out = probe_gpu(deps)
    assert out["driver"] == {
        "version": "580.159.04",
        "cuda_version": "13.0",
        "source": "nvidia-smi",
    }
    assert out["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA H100 80GB HBM3",
            "compute_capability": "9.0",
            "memory_total_bytes": 81559 * MIB,
            "memory_used_bytes": 0,
            "processes": [{"pid": 456, "name": "python3", "used_bytes": 1542 * MIB}],
        }
    ]
    assert "NVML unavailable" in out["_detail"]
    assert ("nvidia-smi", "topo", "-m") not in runner.calls  # one GPU: no topology call


def test_nvidia_smi_fallback_h200x2_topology(tmp_path):
    out = probe_gpu(make_deps(tmp_path, nvml=BrokenNVML(), runner=smi_runner("h200x2")))
    assert len(out["gpus"]) == 2
    assert out["topology"] == {
        "source": "nvidia-smi",
        "pairs": [{"gpus": [0, 1], "link": "NV18", "p2p": True}],
    }
    assert "Driver Not Loaded" in out["_detail"]


def test_old_nvidia_smi_without_compute_cap(tmp_path):
    folder = GPU / "old-470"
    runner = ReplayRunner(
        folder,
        {
            QUERY_GPU: (2, "query-gpu-header.csv"),
            QUERY_GPU_NOCC: (0, "query-gpu-nocc.csv"),
            ("nvidia-smi",): (0, "nvidia-smi.txt"),
            QUERY_APPS: (0, "query-compute-apps.csv"),
        },
    )
    out = probe_gpu(make_deps(tmp_path, runner=runner))
    assert out["driver"]["version"] == "470.182.03"
    assert out["driver"]["cuda_version"] == "11.4"
    (gpu,) = out["gpus"]
    assert gpu["name"] == "Tesla T4"
    assert gpu["compute_capability"] == "7.5"
    assert gpu["compute_capability_source"] == "name-table"


def test_no_nvml_no_nvidia_smi_means_no_gpu(tmp_path):
    out = probe_gpu(make_deps(tmp_path, nvml=None, runner=missing_runner))
    assert out["driver"] is None
    assert out["gpus"] == []
    assert "nvidia-smi: not found" in out["_detail"]


def test_nvidia_smi_failing_reports_driver_error(tmp_path):
    (tmp_path / "err.txt").write_text(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    )
    runner = ReplayRunner(tmp_path, {QUERY_GPU: (9, "err.txt")})
    out = probe_gpu(make_deps(tmp_path, runner=runner))
    assert out["gpus"] == []
    assert out["driver"]["version"] is None
    assert "couldn't communicate" in out["driver"]["error"]


def test_parse_topo_strips_ansi_header():
    text = (GPU / "h100" / "topo-m.txt").read_text()
    assert parse_topo(text) == []  # one GPU: no pairs
    assert "\x1b[4m" in text  # the recording really has the escape codes


@pytest.mark.parametrize(("raw", "text"), [(13000, "13.0"), (12080, "12.8"), (11040, "11.4")])
def test_cuda_version_from_nvml_int(raw, text):
    assert cuda_version_from_int(raw) == text


def test_cuda_version_from_header():
    assert parse_cuda_version((GPU / "h100" / "nvidia-smi.txt").read_text()) == "13.0"
    assert parse_cuda_version("no header") is None


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Oct 30 2025\n",
            "580.159.04",
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n",
            "580.95.05",
        ),
    ],
)
def test_driver_version_from_proc(tmp_path, text, version):
    from shop_r1_doctor.probes.gpu import proc_driver_version

    deps = make_deps(tmp_path)
    assert proc_driver_version(deps) is None  # no driver loaded
    (deps.root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (deps.root / "proc" / "driver" / "nvidia" / "version").write_text(text)
    assert proc_driver_version(deps) == version
