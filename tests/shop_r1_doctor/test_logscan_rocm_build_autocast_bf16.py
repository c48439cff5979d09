"""Readings learned from managed environments (batch 31): a ROCm torch that finds no AMD GPU
(an image that took the rocm index on an NVIDIA machine), and torch.amp.autocast asked for
bfloat16 on a GPU without it. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

from logscan_readings import codes, lead


def test_a_rocm_torch_finding_no_hip_gpu_is_a_build_without_cuda_hint():
    assert lead("RuntimeError: No HIP GPUs are available\n") == ("TORCH_CPU_ONLY_BUILD", "warning")


def test_a_cuda_torch_finding_no_gpu_is_not_the_build():
    # the CUDA build's own words: the GPUs are hidden or absent, not a wrong build
    assert "TORCH_CPU_ONLY_BUILD" not in codes("RuntimeError: No CUDA GPUs are available\n")


def test_autocast_refusing_bfloat16_is_bf16_before_ampere():
    log = (
        '  File "/usr/local/lib/python3.10/dist-packages/torch/amp/autocast_mode.py", line 305\n'
        "    raise RuntimeError(\n"
        "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to"
        " float16.\n"
    )
    assert lead(log)[0] == "BF16_PRE_AMPERE"


def test_inductor_skipping_bf16_compilation_is_not_a_refusal():
    # torch/_inductor/compile_fx.py's warning: the run goes on
    log = "UserWarning: cpu does not support bfloat16 compilation natively, skipping\n"
    assert "BF16_PRE_AMPERE" not in codes(log)
