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


def test_a_package_imported_from_its_source_checkout_without_its_compiled_part():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/data/package/pytorch/torch_npu/__init__.py", line 14, in <module>\n'
        "    import torch_npu.npu\n"
        '  File "/data/package/pytorch/torch_npu/npu/utils.py", line 11, in <module>\n'
        "    import torch_npu._C\n"
        "ModuleNotFoundError: No module named 'torch_npu._C'\n"
    )
    assert lead(log) == ("MODULE_SHADOWED_BY_LOCAL_FILE", "warning")


def test_the_installed_package_missing_its_compiled_part_is_not_a_checkout():
    # the frames are site-packages': a broken install (or vLLM on native Windows), not a
    # source tree in the way
    log = (
        '  File "C:\\\\venv\\\\Lib\\\\site-packages\\\\vllm\\\\__init__.py", line 3, in <module>\n'
        "    import vllm._C\n"
        "ModuleNotFoundError: No module named 'vllm._C'\n"
    )
    assert "MODULE_SHADOWED_BY_LOCAL_FILE" not in codes(log)


def test_another_packages_compiled_part_missing_is_not_this_checkout():
    log = (
        '  File "/home/u/src/myproj/train.py", line 3, in <module>\n'
        "    import torch_npu._C\n"
        "ModuleNotFoundError: No module named 'torch_npu._C'\n"
    )
    assert "MODULE_SHADOWED_BY_LOCAL_FILE" not in codes(log)


def test_webui_start_up_check_is_no_usable_gpu():
    log = (
        "RuntimeError: Torch is not able to use GPU; add --skip-torch-cuda-test to"
        " COMMANDLINE_ARGS variable to disable this check\n"
    )
    assert lead(log) == ("TORCH_CUDA_UNAVAILABLE", "warning")


def test_cudnn_s_loader_line_without_its_dlerror_is_a_missing_library_hint():
    assert lead("Error: Could not load library libcudnn_cnn_infer.so.8\n") == (
        "CUDA_RUNTIME_LIB_MISSING",
        "warning",
    )


def test_cudnn_s_loader_line_naming_the_driver_is_not_a_runtime_library():
    # libcuda.so is the driver's (WSL2's /usr/lib/wsl/lib): not read as a missing runtime
    log = (
        "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open"
        " shared object file: No such file or directory\n"
    )
    assert "CUDA_RUNTIME_LIB_MISSING" not in codes(log)


def test_triton_3_beside_a_torch_that_imports_triton_common_is_a_version_skew():
    assert lead("ModuleNotFoundError: No module named 'triton.common'\n") == (
        "PACKAGE_VERSION_SKEW",
        "error",
    )
    assert lead("ModuleNotFoundError: No module named 'triton. common'\n")[0] == (
        "PACKAGE_VERSION_SKEW"
    )


def test_triton_missing_altogether_is_not_the_skew():
    assert "PACKAGE_VERSION_SKEW" not in codes("ModuleNotFoundError: No module named 'triton'\n")
