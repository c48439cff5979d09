"""The install plan's rules: order, one constraints file naming the chosen torch build,
vLLM only on a torch of its CUDA, MAX_JOBS from RAM, every command in the new venv."""

from __future__ import annotations

import pytest
from packaging.version import Version

from shop_r1_doctor.builds import GIB
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.profiles import get_profile
from shop_r1_doctor.setup.install import Target, build_jobs, install_plan

H100_580 = Target(ccs=((9, 0),), driver=Version("580.95.05"), ram_bytes=64 * GIB, cpus=32)
RTX5090_570 = Target(ccs=((12, 0),), driver=Version("570.172.08"))


def plan(profile: str, target: Target, installer: str = "pip"):
    return install_plan(
        get_profile(profile),
        (),
        target,
        venv="/v",
        base_python="python3.12",
        installer=installer,  # type: ignore[arg-type]
    )


def names(p) -> list[str]:
    return [s.name for s in p.steps]


def test_torch_first_alone_then_vllm_then_flash_attn_then_the_rest():
    p = plan("hopper", H100_580)
    assert names(p) == [
        "venv",
        "torch",
        "vllm",
        "flash-attn-helpers",
        "flash-attn",
        "libraries",
        "shop-r1",
        "doctor",
    ]
    torch = p.steps[1]
    assert "-c" not in torch.argv and "torch==2.11.0+cu130" in torch.argv


def test_every_install_after_torch_runs_under_the_constraints_naming_that_build():
    p = plan("hopper", H100_580)
    assert "torch==2.11.0+cu130" in p.constraints.splitlines()
    for step in p.steps[2:-1]:
        assert (
            "-c" in step.argv
            and step.argv[step.argv.index("-c") + 1] == "/v/shop-r1-setup/constraints.txt"
        ), step.name


def test_every_command_runs_the_new_venvs_interpreter():
    for installer in ("pip", "uv"):
        p = plan("hopper", H100_580, installer)
        for step in p.steps[1:]:
            assert "/v/bin/python" in step.argv, (installer, step.name)
            assert step.argv[0] in ("/v/bin/python", "uv"), step.shell()


def test_driver_570_gets_cu128_and_no_vllm_built_for_cuda_13():
    p = plan("blackwell-rtx", RTX5090_570)
    assert p.torch.variant == "cu128"
    assert "torch==2.11.0+cu128" in p.constraints.splitlines()
    assert "vllm" not in names(p)
    assert any(s.startswith("vLLM 0.26.0") and "580.65.06" in s for s in p.skipped)
    assert not any("cu130" in s.shell() for s in p.steps)


def test_no_runnable_build_is_one_line_naming_the_driver():
    with pytest.raises(ToolError, match=r"driver 550.54.15 runs CUDA <= 12.4.*>= 580.65.06"):
        plan("blackwell-rtx", Target(ccs=((12, 0),), driver=Version("550.54.15")))


@pytest.mark.parametrize(
    ("ram_gib", "cpus", "jobs"), [(64, 32, 7), (16, 32, 1), (512, 16, 16), (None, None, 4)]
)
def test_max_jobs_from_ram_capped_by_cpus(ram_gib, cpus, jobs):
    target = Target(ram_bytes=ram_gib * GIB if ram_gib else None, cpus=cpus)
    assert build_jobs(get_profile("hopper"), target)[0] == jobs


def test_source_build_flags_come_from_the_profile_and_ram():
    p = plan("blackwell", H100_580.__class__(ccs=((10, 0), (12, 0)), ram_bytes=40 * GIB, cpus=8))
    fa = next(s for s in p.steps if s.name == "flash-attn")
    assert dict(fa.env) == {
        "MAX_JOBS": "4",
        "NVCC_THREADS": "2",
        "FLASH_ATTN_CUDA_ARCHS": "100;120",
        "FLASH_ATTENTION_FORCE_BUILD": "TRUE",
    }


def test_cpu_profile_has_no_vllm_or_flash_attn():
    p = plan("cpu", Target())
    assert names(p) == ["venv", "torch", "libraries", "shop-r1", "doctor"]
    assert p.torch.local == "2.13.0+cpu"
