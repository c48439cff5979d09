"""Device memory running out in an engine's own words (llama.cpp's ggml, Vulkan, TensorFlow,
XLA, torch's XPU/NPU back ends, ExLlama): a GPU_OUT_OF_MEMORY warning below any specific
reading; host-memory forms and lines that only mention memory are not read as the GPU's.
Codes and severities (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

from shop_r1_doctor.logscan import diagnose_log

ENGINE_LINES = {
    "ggml-cuda": "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 590.07 MiB on device 0:"
    " cudaMalloc failed: out of memory",
    "ggml-alloc": "alloc_tensor_range: failed to allocate CUDA0 buffer of size 1879048192",
    "ollama": "Error: llama runner process has terminated: error loading model: unable to"
    " allocate CUDA0 buffer",
    "ggml-rocm": "alloc_tensor_range: failed to allocate ROCm0 buffer of size 5064192000",
    "vulkan": "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory",
    "tensorflow-gpu": "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when"
    " allocating tensor with shape[32,4096,4096] and type float on"
    " /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
    "xla": "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying"
    " to allocate 1234567890 bytes.",
    "torch-xpu": "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has"
    " a total capacity of 15.11 GiB. Of the allocated memory 13.00 GiB is allocated by PyTorch",
    "torch-npu": "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB"
    " total capacity; 58.00 GiB already allocated)",
    "exllama": "RuntimeError: Insufficient VRAM for model and cache",
}


@pytest.mark.parametrize("line", ENGINE_LINES.values(), ids=ENGINE_LINES.keys())
def test_an_engines_own_out_of_memory_line_is_a_gpu_oom_warning(line):
    assert lead(line) == ("GPU_OUT_OF_MEMORY", "warning")
    assert diagnose_log(line).lead.signature.id == "any-engine-device-oom"


def test_a_line_a_specific_reading_knows_keeps_that_reading():
    # torch's ROCm build: the generic shape (`HIP out of memory`) and torch's own message
    line = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a"
        " total capacity of 23.98 GiB of which 1.02 GiB is free."
    )
    assert lead(line) == ("GPU_OUT_OF_MEMORY", "error")
    assert diagnose_log(line).lead.signature.id == "rocm-hip-oom"


@pytest.mark.parametrize(
    "line",
    [
        # TensorFlow's host allocator: the RAM, not a GPU
        "ResourceExhaustedError: OOM when allocating tensor with shape[6040,32] and type float"
        " on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
        # a line that speaks of GPU memory without any allocation failing
        "INFO: GPU memory usage: 12.3 GiB / 80.0 GiB (peak 14.1 GiB)",
        "Loading model with device_map='auto': not offloading, the model fits in GPU memory",
    ],
    ids=["tensorflow-cpu", "usage-line", "fits-line"],
)
def test_lines_that_are_not_the_gpu_running_out_are_not_read_as_it(line):
    assert "GPU_OUT_OF_MEMORY" not in codes(line)
