"""Readings of extension builds that fail before any code of the user's runs: MSVC's STL
refusing an older nvcc (STL1002), CMake's failed test of nvcc, a compiler killed for RAM
in any build (flash-attn's own build keeps its code), and causal-conv1d / mamba-ssm
falling back to a source build when no release wheel matches torch. Codes and severities
only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

# --- MSVC's STL refusing an nvcc older than the CUDA release it supports -----------------

STL1002 = (
    "C:\\Program Files\\Microsoft Visual Studio\\2022\\Community\\VC\\Tools\\MSVC\\14.41.34120"
    '\\include\\yvals_core.h(902): error: static assertion failed with "error STL1002: '
    'Unexpected compiler version, expected CUDA 12.4 or newer."\n'
    '1 error detected in the compilation of "csrc/rasterize.cu".\n'
    "error: command 'C:\\\\Program Files\\\\NVIDIA GPU Computing Toolkit\\\\CUDA\\\\v11.6\\\\bin"
    "\\\\nvcc' failed with exit code 2\n"
)


@pytest.mark.parametrize(
    "log",
    [
        STL1002,
        # the older STL's #error form, with its `Update N` release
        "yvals_core.h(590): fatal error C1189: #error:  STL1002: Unexpected compiler version, "
        "expected CUDA 10.1 Update 2 or newer.\n",
    ],
)
def test_the_msvc_stl_refusing_an_older_nvcc_is_the_host_compiler_stated(log):
    assert lead(log) == ("NVCC_HOST_COMPILER_UNSUPPORTED", "error")


@pytest.mark.parametrize(
    "log",
    [
        # STL1001/STL1000: cl.exe or clang older than the STL headers, a mismatched VS install
        'yvals_core.h(912): error C2338: static_assert failed: "error STL1001: Unexpected '
        'compiler version, expected MSVC 19.44 or newer."\n',
        'yvals_core.h(908): error: static assertion failed with "error STL1000: Unexpected '
        'compiler version, expected Clang 19.0.0 or newer."\n',
    ],
)
def test_the_stl_refusing_its_own_compiler_is_not_nvccs_host_compiler(log):
    assert "NVCC_HOST_COMPILER_UNSUPPORTED" not in codes(log)


# --- nvcc's own refusal, kept only in its second half ------------------------------------


def test_the_override_sentence_alone_is_nvccs_refusal():
    log = (
        "   | ^~~~~\n"
        "are supported! The nvcc flag '-allow-unsupported-compiler' can be used to override "
        "this version check; however, using an unsupported host compiler may cause "
        "compilation failure or incorrect run time execution. Use at your own risk.\n"
    )
    assert lead(log) == ("NVCC_HOST_COMPILER_UNSUPPORTED", "error")


def test_the_override_flag_on_a_command_line_is_no_refusal():
    log = "nvcc -allow-unsupported-compiler -c kernel.cu -o kernel.o\nninja: build stopped\n"
    assert "NVCC_HOST_COMPILER_UNSUPPORTED" not in codes(log)


# --- CMake's failed test of nvcc -----------------------------------------------------------

CMAKE_HEAD = (
    "-- Check for working CUDA compiler: C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/"
    "v12.8/bin/nvcc.exe - broken\n"
    "CMake Error at C:/Program Files/CMake/share/cmake-4.1/Modules/CMakeTestCUDACompiler.cmake"
    ":56 (message):\n"
    "  The CUDA compiler\n\n"
    '    "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.8/bin/nvcc.exe"\n\n'
    "  is not able to compile a simple test program.\n\n"
    "  It fails with the following output:\n\n"
    "    Change Dir: 'C:/llama.cpp/build/CMakeFiles/CMakeScratch/TryCompile-x7k2'\n"
)


@pytest.mark.parametrize(
    "log",
    [
        CMAKE_HEAD + "    main.cu\n    ninja: build stopped: subcommand failed.\n",
        # an issue title holding only the message, the path unquoted
        "Compile bug: [Windows 11 Pro 25H2] The CUDA compiler nvcc.exe is not able to compile "
        "a simple test program\n",
    ],
)
def test_cmakes_failed_nvcc_test_is_a_host_compiler_hint(log):
    assert lead(log) == ("NVCC_HOST_COMPILER_UNSUPPORTED", "info")


def test_nvccs_refusal_in_cmakes_output_is_stated():
    log = CMAKE_HEAD + (
        "    C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\\include\\crt/"
        "host_config.h(153): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio "
        "version! Only the versions between 2017 and 2022 (inclusive) are supported!\n"
    )
    assert lead(log) == ("NVCC_HOST_COMPILER_UNSUPPORTED", "error")


@pytest.mark.parametrize(
    "other",
    [
        "    nvcc fatal   : Cannot find compiler 'cl.exe' in PATH\n",
        "    nvcc fatal   : Unsupported gpu architecture 'compute_120'\n",
        "    /usr/bin/ld: cannot find -lcudart_static: No such file or directory\n",
    ],
)
def test_cmakes_failed_nvcc_test_naming_another_cause_is_no_host_compiler_hint(other):
    assert "NVCC_HOST_COMPILER_UNSUPPORTED" not in codes(CMAKE_HEAD + other)


def test_cmake_finding_no_nvcc_is_not_the_failed_test():
    log = (
        "CMake Error at ggml/src/ggml-cuda/CMakeLists.txt:25 (enable_language):\n"
        "  No CMAKE_CUDA_COMPILER could be found.\n"
    )
    assert "NVCC_HOST_COMPILER_UNSUPPORTED" not in codes(log)


# --- a compiler killed for RAM -------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # the tflite_runtime wheel, a CMake C++ build with no flash-attn and no CUDA
        "Tried ubuntu 22.04 with python 3.10 / 3.11. I always get a fatal error: Killed "
        "signal terminated program cc1plus message.\n",
        "[ 42%] Building CXX object CMakeFiles/x.dir/a.cc.o\n"
        "c++: fatal error: Killed signal terminated program cc1plus\n"
        "compilation terminated.\n",
        "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n"
        "gmake[2]: *** [CMakeFiles/x.dir/build.make:538: a.cu.o] Error 9\n",
        "collect2: fatal error: ld terminated with signal 9 [Killed]\n",
        "clang++: error: unable to execute command: Killed\n",
    ],
)
def test_a_compiler_killed_in_a_build_is_host_ram_as_a_warning(log):
    assert lead(log) == ("HOST_OOM_KILLED", "warning")
    assert "FA_BUILD_OOM_NO_MAX_JOBS" not in codes(log)


def test_a_compiler_killed_with_an_oom_record_is_stated():
    log = (
        "c++: fatal error: Killed signal terminated program cc1plus\n"
        "[ 812.44] Out of memory: Killed process 5121 (cc1plus) total-vm:9123456kB\n"
    )
    assert lead(log) == ("HOST_OOM_KILLED", "error")


@pytest.mark.parametrize(
    "log",
    [
        # SIGTERM (a cancelled build) and a crash are not memory
        "c++: fatal error: Terminated signal terminated program cc1plus\n",
        "c++: internal compiler error: Segmentation fault signal terminated program cc1plus\n",
    ],
)
def test_other_signals_ending_the_compiler_are_not_host_ram(log):
    assert "HOST_OOM_KILLED" not in codes(log)


def test_the_same_kill_in_flash_attns_own_build_keeps_its_code():
    log = (
        "Building wheel for flash-attn (setup.py) ... \n"
        "  /usr/local/cuda/bin/nvcc -c csrc/flash_attn/src/flash_fwd_hdim128_fp16_sm80.cu\n"
        "  c++: fatal error: Killed signal terminated program cc1plus\n"
    )
    assert lead(log) == ("FA_BUILD_OOM_NO_MAX_JOBS", "warning")
    assert ("HOST_OOM_KILLED", "warning") in readings(log)


def test_max_jobs_in_another_build_does_not_make_it_flash_attns():
    log = (
        "$ MAX_JOBS=8 pip install -v .\n"
        "  c++: fatal error: Killed signal terminated program cc1plus\n"
    )
    assert lead(log) == ("HOST_OOM_KILLED", "warning")
    assert "FA_BUILD_OOM_NO_MAX_JOBS" not in codes(log)


# --- no prebuilt causal-conv1d / mamba-ssm wheel for this torch ----------------------------

CC_URL = (
    "https://github.com/Dao-AILab/causal-conv1d/releases/download/v1.5.0.post8/"
    "causal_conv1d-1.5.0.post8+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
)
MAMBA_URL = (
    "https://github.com/state-spaces/mamba/releases/download/v2.2.4/"
    "mamba_ssm-2.2.4+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
)


@pytest.mark.parametrize("url", [CC_URL, MAMBA_URL])
def test_the_setup_py_fallback_after_its_guessed_url_is_no_wheel_for_this_torch(url):
    log = (
        "  torch.__version__  = 2.6.0+cu124\n"
        f"  Guessing wheel URL:  {url}\n"
        "  Precompiled wheel not found. Building from source...\n"
        "  running build_ext\n"
    )
    assert lead(log) == ("EXT_NO_PREBUILT_WHEEL_FOR_TORCH", "warning")
    assert "FA_NO_PREBUILT_WHEEL" not in codes(log)


def test_the_fallback_line_in_a_mamba_build_without_the_url():
    log = (
        "Building wheel for mamba-ssm (setup.py) ... error\n"
        "  Precompiled wheel not found. Building from source...\n"
    )
    assert lead(log) == ("EXT_NO_PREBUILT_WHEEL_FOR_TORCH", "warning")
    assert "FA_NO_PREBUILT_WHEEL" not in codes(log)


def test_the_fallback_line_with_no_package_named_stays_flash_attns():
    log = "Precompiled wheel not found. Building from source...\n"
    assert "EXT_NO_PREBUILT_WHEEL_FOR_TORCH" not in codes(log)
    assert lead(log) == ("FA_NO_PREBUILT_WHEEL", "warning")


def test_a_guessed_url_that_downloaded_is_no_fallback():
    log = (
        f"  Guessing wheel URL:  {CC_URL}\n"
        "  Raw wheel path dist/causal_conv1d-1.5.0.post8-cp311-cp311-linux_x86_64.whl\n"
        "Successfully installed causal-conv1d-1.5.0.post8\n"
    )
    assert "EXT_NO_PREBUILT_WHEEL_FOR_TORCH" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        # pip's summary only, as a notebook shows it
        "  Building wheel for causal-conv1d (setup.py) ... error\n"
        "  ERROR: Failed building wheel for causal-conv1d\n"
        "  Running setup.py clean for causal-conv1d\n"
        "Failed to build causal-conv1d\n",
        # uv's
        "  × Failed to build `mamba-ssm==2.2.4`\n  ├─▶ The build backend returned an error\n",
    ],
)
def test_a_failed_mamba_kernels_wheel_build_is_a_hint_of_no_wheel(log):
    assert lead(log) == ("EXT_NO_PREBUILT_WHEEL_FOR_TORCH", "info")


@pytest.mark.parametrize(
    "log",
    [
        "  Building wheel for causal-conv1d (setup.py) ... done\n"
        "Successfully built causal-conv1d\n",
        # another package whose name starts the same
        "  ERROR: Failed building wheel for causal-conv1d-lite\n",
    ],
)
def test_a_built_or_other_package_is_no_hint(log):
    assert "EXT_NO_PREBUILT_WHEEL_FOR_TORCH" not in codes(log)


def test_the_compilers_own_error_leads_the_failed_build_hint():
    # uv prints its summary first and the build's output under it
    log = (
        "  × Failed to build `causal-conv1d==1.5.0.post8`\n"
        "  ├─▶ The build backend returned an error\n"
        "      OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA "
        "install root.\n"
    )
    found = readings(log)
    assert found[0][0] == "CUDA_HOME_UNSET_EXT_BUILD"
    assert ("EXT_NO_PREBUILT_WHEEL_FOR_TORCH", "info") in found


def test_a_failed_flash_attn_wheel_build_is_a_hint_of_its_own_no_wheel():
    log = "  ERROR: Failed building wheel for flash-attn\nFailed to build flash-attn\n"
    assert lead(log) == ("FA_NO_PREBUILT_WHEEL", "info")
    assert "EXT_NO_PREBUILT_WHEEL_FOR_TORCH" not in codes(log)
    done = "  Building wheel for flash-attn (setup.py) ... done\nSuccessfully built flash-attn\n"
    assert "FA_NO_PREBUILT_WHEEL" not in codes(done)
