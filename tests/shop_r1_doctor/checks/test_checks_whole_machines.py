"""Whole machines: the recorded real snapshots (H100, 2x H200) changed the way users'
machines differ, several faults at once, near misses and sparse probes.

Each case's expectations were decided from the failure-mode catalog and the compat facts
(`docs/checks.md`, ../shared/research) before the doctor was run on it:
- `must`: every code that has to be found (all faults of a multi-fault machine);
- `must_not`: codes that would be a false alarm on this near miss;
- `max_errors`: `0` for a machine that must raise no error at all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from machines import machine_snapshot

from shop_r1_doctor.checks import run_checks

GIB = 2**30


def real(name: str) -> dict[str, Any]:
    return machine_snapshot(name)


H100 = real("h100")
H200X2 = real("h200x2")


def gpu(index: int, name: str, cc: str, total_gib: float, used_gib: float = 0.5) -> dict:
    return {
        "index": index,
        "name": name,
        "compute_capability": cc,
        "memory_total_bytes": int(total_gib * GIB),
        "memory_used_bytes": int(used_gib * GIB),
        "processes": [],
    }


def torch_build(version: str, cuda: str | None, arch: list[str], caps: list[str]) -> dict:
    return {
        "version": version,
        "cuda": cuda,
        "hip": None,
        "cxx11_abi": True,
        "arch_list": arch,
        "nccl": "2.21.5" if cuda else None,
        "error": None,
        "cuda_available": bool(cuda and caps),
        "device_count": len(caps),
        "capabilities": caps,
        "bf16_supported": True,
    }


def dist(version: str, *requires: str) -> dict:
    return {"version": version, "requires": list(requires)}


Edit = Callable[[dict[str, Any]], None]


def on(base: dict[str, Any], *edits: Edit) -> dict[str, Any]:
    snap = copy.deepcopy(base)
    for edit in edits:
        edit(snap)
    return snap


def set_(path: str, value: Any) -> Edit:
    def edit(snap: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = snap
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = copy.deepcopy(value)

    return edit


def pkgs(**dists: dict | None) -> Edit:
    def edit(snap: dict[str, Any]) -> None:
        for name, value in dists.items():
            snap.setdefault("packages", {})[name.replace("_", "-")] = value

    return edit


def env(**values: str) -> Edit:
    def edit(snap: dict[str, Any]) -> None:
        snap.setdefault("env", {}).update(values)

    return edit


def drop(*sections: str) -> Edit:
    def edit(snap: dict[str, Any]) -> None:
        for name in sections:
            snap.pop(name, None)

    return edit


RTX5090 = [gpu(0, "NVIDIA GeForce RTX 5090", "12.0", 31.4)]
RTX4090X2 = [gpu(i, "NVIDIA GeForce RTX 4090", "8.9", 23.6) for i in (0, 1)]
V100 = [gpu(0, "Tesla V100-SXM2-32GB", "7.0", 31.7)]
B200 = [gpu(0, "NVIDIA B200", "10.0", 178.4)]
ARCH_CU124 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
ARCH_CU128 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
GRPO_2PROC = {"task": "grpo", "num_processes": 2, "bf16": True, "model_params": 494_000_000}


@dataclass
class Case:
    id: str
    snapshot: dict[str, Any]
    must: set[str] = field(default_factory=set)
    must_not: set[str] = field(default_factory=set)
    max_errors: int | None = None


CASES = [
    # ---- the real machines as recorded: healthy ----
    Case("h100-as-recorded", H100, max_errors=0),
    Case("h200x2-as-recorded", H200X2, max_errors=0),
    # ---- several faults at once ----
    Case(
        "h100-container-old-host-driver-small-shm-two-procs",
        on(
            H100,
            set_("driver", {"version": "535.183.01", "cuda_version": "12.2", "source": "nvml"}),
            set_("host.shm_bytes", 64 * 2**20),
            set_("plan", {"task": "sft", "num_processes": 2}),
            set_("gpus", [*H100["gpus"], {**H100["gpus"][0], "index": 1}]),
        ),
        # one fact (host driver CUDA 12.2 < 13.0), one finding: the container-specific code
        must={"CONTAINER_CUDA_GT_HOST_DRIVER", "NCCL_DOCKER_SHM_TOO_SMALL"},
        must_not={"DRIVER_TOO_OLD_FOR_TORCH_CUDA"},
    ),
    Case(
        "rtx5090-old-torch-old-vllm-old-flash-attn",
        on(
            H100,
            set_("gpus", RTX5090),
            set_("torch", torch_build("2.5.1+cu124", "12.4", ARCH_CU124, ["12.0"])),
            pkgs(
                torch=dist("2.5.1+cu124"),
                vllm=dist("0.6.4", "torch==2.5.1"),
                flash_attn=dist("2.6.3", "torch"),
            ),
        ),
        # torch without sm_120 under an installed vLLM: the vLLM code carries the fix
        must={"VLLM_WHEEL_NO_SM120", "FA_BLACKWELL_SM120_KERNELS"},
        must_not={"TORCH_NO_BLACKWELL_ARCH"},
    ),
    Case(
        "wsl-two-rtx4090-p2p-on-no-libcuda",
        on(
            H100,
            set_("gpus", RTX4090X2),
            set_("host.wsl", 2),
            set_("host.container", None),
            set_("host.libcuda_in_ldconfig", False),
            set_("plan", dict(GRPO_2PROC)),
        ),
        must={"NCCL_P2P_HANG_CONSUMER_GPUS", "WSL_LIBCUDA_NOT_LINKABLE", "WSL_MULTI_GPU_NCCL"},
    ),
    Case(
        "v100-with-cu130-torch-bf16-fa2",
        on(
            H100,
            set_("gpus", V100),
            set_(
                "torch",
                torch_build("2.11.0+cu130", "13.0", ARCH_CU128, ["7.0"]),
            ),
            set_("plan", {"task": "sft", "bf16": True, "attn_implementation": "flash_attention_2"}),
        ),
        must={"TORCH_ARCH_UNSUPPORTED_GPU", "BF16_PRE_AMPERE", "FA_PRE_AMPERE_GPU"},
    ),
    Case(
        "numpy2-with-numpy1-extension-old-xet-ray-small-shm",
        on(
            H200X2,
            pkgs(
                numpy=dist("2.1.0"),
                tensorflow_text=dist("2.15.0", "numpy<2"),
                hf_xet=dist("1.1.0"),
                ray=dist("2.40.0"),
            ),
            set_("host.shm_bytes", 2 * GIB),
        ),
        must={"NUMPY2_BINARY_INCOMPAT", "HF_XET_DOWNLOAD_STALL", "RAY_OBJECT_STORE_SMALL_SHM"},
    ),
    Case(
        "h100-flash-attn-for-another-torch-and-vllm-swapping-torch",
        on(
            H100,
            pkgs(flash_attn=dist("2.8.3", "torch"), vllm=dist("0.20.0", "torch==2.10.0")),
            set_(
                "imports.flash_attn",
                {
                    "ok": False,
                    "error": "ImportError: /usr/lib/python3/dist-packages/flash_attn_2_cuda."
                    "cpython-312-x86_64-linux-gnu.so: undefined symbol: "
                    "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_"
                    "traitsIcESaIcEEE",
                },
            ),
            set_("plan", {"task": "sft", "attn_implementation": "flash_attention_2"}),
        ),
        must={"FA_TORCH_ABI_UNDEFINED_SYMBOL", "VLLM_INSTALL_SWAPS_TORCH"},
    ),
    # ---- what a container hides: no process list, only memory in use ----
    Case(
        "h100-container-busy-gpu-no-process-list",
        on(H100, set_("gpus", [{**H100["gpus"][0], "memory_used_bytes": 60 * GIB}])),
        must={"GPU_BUSY_OTHER_PROCESSES"},
    ),
    # ---- one source failed, another knows ----
    Case(
        "rtx5090-nvml-failed-torch-saw-the-gpu",
        on(
            H100,
            drop("gpus", "driver"),
            set_("torch", torch_build("2.5.1+cu124", "12.4", ARCH_CU124, ["12.0"])),
            pkgs(torch=dist("2.5.1+cu124")),
        ),
        must={"TORCH_NO_BLACKWELL_ARCH"},
    ),
    # ---- severity in context: a remote proxy cannot reach 127.0.0.1 ----
    Case(
        "remote-proxy-no-no-proxy-vllm-server",
        on(
            H200X2,
            env(
                HTTP_PROXY="http://proxy.corp.example:3128",
                HTTPS_PROXY="http://proxy.corp.example:3128",
            ),
            pkgs(vllm=dist("0.26.0", "torch==2.11.0")),
            set_(
                "plan",
                {
                    "task": "grpo",
                    "use_vllm": True,
                    "vllm_mode": "server",
                    "vllm_server_host": "127.0.0.1",
                },
            ),
        ),
        must={"TRL_VLLM_SERVER_UNREACHABLE"},
    ),
    # ---- sparse: a pasted `pip list` and nothing else ----
    Case(
        "packages-only-vllm-pins-other-torch",
        {
            "schema": "shop-r1.snapshot/1",
            "packages": {"torch": dist("2.8.0"), "vllm": dist("0.10.1", "torch==2.7.1")},
        },
        must={"VLLM_INSTALL_SWAPS_TORCH"},
        must_not={"TORCH_CPU_ONLY_BUILD", "DOCKER_GPU_RUNTIME_MISSING", "TORCH_CUDA_UNAVAILABLE"},
    ),
    Case(
        "gpus-only-from-nvidia-smi",
        {"schema": "shop-r1.snapshot/1", "gpus": RTX4090X2},
        must_not={"NCCL_P2P_HANG_CONSUMER_GPUS", "TORCH_CPU_ONLY_BUILD"},
        max_errors=0,
    ),
    # ---- near misses: must not fire ----
    Case(
        "rtx5090-cu128-torch-covers-sm120",
        on(
            H100,
            set_("gpus", RTX5090),
            set_("torch", torch_build("2.7.1+cu128", "12.8", ARCH_CU128, ["12.0"])),
            pkgs(torch=dist("2.7.1+cu128")),
            set_("driver", {"version": "570.124.06", "cuda_version": "12.8", "source": "nvml"}),
            env(CUDA_VERSION="12.8.1"),
        ),
        must_not={"TORCH_NO_BLACKWELL_ARCH", "VLLM_WHEEL_NO_SM120"},
        max_errors=0,
    ),
    Case(
        "b200-arch-list-ptx-covers-it",
        on(
            H100,
            set_("gpus", B200),
            set_(
                "torch",
                torch_build("2.6.0+cu126", "12.6", [*ARCH_CU124, "compute_90"], ["10.0"]),
            ),
            set_("driver", {"version": "570.124.06", "cuda_version": "12.8", "source": "nvml"}),
        ),
        must_not={"TORCH_NO_BLACKWELL_ARCH", "TORCH_ARCH_UNSUPPORTED_GPU"},
    ),
    Case(
        "wsl-libcuda-linked",
        on(
            H100,
            set_("host.wsl", 2),
            set_("host.container", None),
            set_("host.libcuda_in_ldconfig", True),
        ),
        must_not={"WSL_LIBCUDA_NOT_LINKABLE"},
        max_errors=0,
    ),
    Case(
        "two-rtx4090-p2p-already-disabled",
        on(
            H100, set_("gpus", RTX4090X2), env(NCCL_P2P_DISABLE="1"), set_("plan", dict(GRPO_2PROC))
        ),
        must_not={"NCCL_P2P_HANG_CONSUMER_GPUS"},
    ),
    Case(
        "numpy2-with-opencv-that-supports-it",
        on(H100, pkgs(numpy=dist("2.2.6"), opencv_python=dist("4.12.0.88", "numpy>=2"))),
        must_not={"NUMPY2_BINARY_INCOMPAT", "NUMPY2_MEGATRON_VS_OPENCV"},
        max_errors=0,
    ),
    Case(
        "vllm-and-torch-pins-match",
        on(H100, pkgs(vllm=dist("0.26.0", "torch==2.11.0"))),
        must_not={"VLLM_INSTALL_SWAPS_TORCH"},
    ),
    Case(
        "local-proxy-is-not-certain-failure",
        on(
            H200X2,
            env(HTTP_PROXY="http://127.0.0.1:7890"),
            pkgs(vllm=dist("0.26.0", "torch==2.11.0")),
            set_(
                "plan",
                {
                    "task": "grpo",
                    "use_vllm": True,
                    "vllm_mode": "server",
                    "vllm_server_host": "127.0.0.1",
                },
            ),
        ),
        must_not=set(),
    ),
]


def _codes(snapshot: dict[str, Any]) -> tuple[set[str], list[str]]:
    findings = run_checks(snapshot)
    return {f.code for f in findings}, [f.code for f in findings if f.severity == "error"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_whole_machine(case: Case) -> None:
    codes, errors = _codes(case.snapshot)
    assert "CHECK_FAILED" not in codes
    assert case.must - codes == set(), f"missed on {case.id}"
    assert case.must_not & codes == set(), f"false alarm on {case.id}"
    if case.max_errors is not None:
        assert len(errors) <= case.max_errors, errors


def test_severity_of_proxy_follows_where_it_is() -> None:
    remote = next(c for c in CASES if c.id == "remote-proxy-no-no-proxy-vllm-server")
    local = next(c for c in CASES if c.id == "local-proxy-is-not-certain-failure")
    sev = {
        c.id: {
            f.severity for f in run_checks(c.snapshot) if f.code == "TRL_VLLM_SERVER_UNREACHABLE"
        }
        for c in (remote, local)
    }
    assert sev[remote.id] == {"error"}
    assert sev[local.id] <= {"warning"}


def test_one_finding_per_fact() -> None:
    """A machine's findings are deduplicated: no code appears twice with one title."""
    for case in CASES:
        findings = run_checks(case.snapshot)
        keys = [(f.code, f.title) for f in findings]
        assert len(keys) == len(set(keys)), case.id


def _driver_too_old_and_cuda_unavailable() -> dict[str, Any]:
    return on(
        H100,
        set_("host.container", None),
        set_("driver", {"version": "535.183.01", "cuda_version": "12.2", "source": "nvml"}),
        set_("torch.cuda_available", False),
        set_(
            "torch.error",
            "RuntimeError: The NVIDIA driver on your system is too old (found version 12020).",
        ),
        set_("torch.device_count", 0),
        set_("torch.capabilities", []),
    )


def test_root_cause_takes_its_symptom_out_of_the_summary() -> None:
    """TORCH_CUDA_UNAVAILABLE is documented 'when nothing else explains it': beside the
    too-old driver that explains it, it is annotated and the summary counts one error."""
    from shop_r1_doctor.diagnose import diagnose
    from shop_r1_doctor.render.terminal import render_terminal

    diagnosis = diagnose(_driver_too_old_and_cuda_unavailable())
    by_code = {f.code: f for f in diagnosis.findings}
    assert by_code["TORCH_CUDA_UNAVAILABLE"].explained_by == "DRIVER_TOO_OLD_FOR_TORCH_CUDA"
    assert by_code["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].explained_by is None
    assert diagnosis.summary.errors == 1
    assert diagnosis.exit_code == 1
    text = render_terminal(diagnosis)
    assert "follows from DRIVER_TOO_OLD_FOR_TORCH_CUDA" in text
    assert "Doctor summary (profile: hopper): 1 error," in text
    report = diagnosis.to_json()
    assert report["summary"]["errors"] == 1
    explained = [f for f in report["findings"] if f.get("explained_by")]
    assert [f["code"] for f in explained] == ["TORCH_CUDA_UNAVAILABLE"]


def test_a_symptom_alone_still_counts() -> None:
    snap = on(_driver_too_old_and_cuda_unavailable(), set_("driver", H100["driver"]))
    findings = run_checks(snap)
    symptom = [f for f in findings if f.code == "TORCH_CUDA_UNAVAILABLE"]
    assert symptom and symptom[0].explained_by is None


def test_explains_names_only_known_codes(tmp_path: Path) -> None:
    from shop_r1_doctor.errors import ToolError
    from shop_r1_doctor.knowledge import parse_codes

    data = {
        "schema": "shop-r1.codes/1",
        "codes": {
            "A": {
                "severity": "error",
                "subject": "x",
                "trigger": "t",
                "fix": "f",
                "urls": [],
                "explains": ["B"],
            },
        },
    }
    with pytest.raises(ToolError, match=r"codes\.A\.explains.*B"):
        parse_codes(data, "codes.yaml")
