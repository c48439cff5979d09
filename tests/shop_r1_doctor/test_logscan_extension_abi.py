"""Readings learned from held-out batch 19, on text shapes beyond the batch's own pastes:
a compiled extension built for another torch, xformers' library built for another torch
or Python, and the allocator's out-of-memory under a memory fraction. Codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

# --- EXT_TORCH_ABI_UNDEFINED_SYMBOL: an extension's .so needs another torch's symbol ------


@pytest.mark.parametrize(
    "line",
    [
        # mamba's selective scan (an at:: op), causal-conv1d (c10::Warning), exllamav2
        "ImportError: /venv/lib/python3.10/site-packages/selective_scan_cuda.cpython-310-x86_64"
        "-linux-gnu.so: undefined symbol: _ZN2at4_ops10zeros_like4callERKNS_6TensorE",
        "ImportError: /home/u/envs/m/lib/python3.8/site-packages/causal_conv1d_cuda.cpython-38-"
        "x86_64-linux-gnu.so: undefined symbol: _ZN3c107WarningC1ENS_7variantIJNS0_11UserWarningE",
        "ImportError: /usr/local/lib/python3.10/dist-packages/exllamav2_ext.cpython-310-x86_64-"
        "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
        # a torch.utils.cpp_extension JIT build, a torch:: symbol, a const member function
        "ImportError: /root/.cache/torch_extensions/py311_cu121/fused_adam/fused_adam.so:"
        " undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSs",
        "OSError: /opt/apex/amp_C.so: undefined symbol: _ZNK3c1010TensorImpl4sizeEl",
    ],
)
def test_an_extension_needing_another_torchs_symbol_is_the_abi(line):
    assert readings(line)[0] == ("EXT_TORCH_ABI_UNDEFINED_SYMBOL", "error")


@pytest.mark.parametrize(
    "text",
    [
        # flash-attn's and vLLM's extensions have their own codes
        "ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
        "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
        # a CUDA runtime symbol, a plain C symbol: not torch's ABI
        "ImportError: /venv/lib/python3.10/site-packages/foo_cuda.so: undefined symbol:"
        " cudaGetDriverEntryPointByVersion",
        "ImportError: /venv/lib/python3.10/site-packages/bar.so: undefined symbol: PyInit_bar",
    ],
)
def test_other_undefined_symbols_are_not_this_code(text):
    assert "EXT_TORCH_ABI_UNDEFINED_SYMBOL" not in codes(text)


# --- XFORMERS_WHEEL_MISMATCH: xformers' library built for another torch or Python ---------

XF = "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"


@pytest.mark.parametrize(
    "versions",
    [
        "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.0.1+cu118)\n"
        "    Python  3.10.11 (you have 3.10.11)\n",
        "    PyTorch 2.5.1+cu121 with CUDA 1201 (you have 2.5.1+cu121)\n"
        "    Python  3.12.7 (you have 3.11.7)\n",
    ],
)
def test_xformers_built_for_another_torch_or_python_is_a_warning(versions):
    assert readings(XF + versions)[0] == ("XFORMERS_WHEEL_MISMATCH", "warning")


def test_xformers_differing_only_in_build_tag_and_patch_is_no_finding():
    # LlamaFactory #5050: vLLM went on with this warning; nothing failed
    text = (
        XF + "    PyTorch 2.3.0+cu121 with CUDA 1201 (you have 2.3.0)\n"
        "    Python  3.11.9 (you have 3.11.7)\n"
    )
    assert "XFORMERS_WHEEL_MISMATCH" not in codes(text)


# --- GPU_OUT_OF_MEMORY: the allocator's words under a memory fraction ----------------------


def test_allocation_over_allowed_memory_is_gpu_oom():
    text = (
        "torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory."
        " (out of memory)\nCurrently allocated     : 21.55 GiB\nRequested               :"
        " 952.00 MiB\nDevice limit            : 24.00 GiB\n"
    )
    assert readings(text)[0] == ("GPU_OUT_OF_MEMORY", "error")


def test_host_allowed_memory_words_are_not_gpu_oom():
    assert "GPU_OUT_OF_MEMORY" not in codes("MemoryError: allocation would exceed allowed memory")
