"""Packaging, Python-version, Windows and system-library failures, read from the messages
pip, setuptools, CPython, the loader, torch, torchvision, protobuf, NumPy and transformers
print (log_signatures.yaml's section of that name). Each reading: the framework's own form,
another spelling where one exists, and a near miss it must not claim. Codes and severities
only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

PIP_NONE = "ERROR: Could not find a version that satisfies the requirement {} (from versions: none)"
RETRY = (
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None))"
    " after connection broken by '{}('<pip._vendor.urllib3.connection.HTTPSConnection object"
    " at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name"
    " resolution')': /simple/{}/"
)

# (log, the lead's code, its severity)
POSITIVES = [
    # 1. pip: nothing at all for this platform / the index not reached / a +cu pin on PyPI
    (
        PIP_NONE.format("torch==2.1.0")
        + "\nERROR: No matching distribution found for torch==2.1.0",
        "NO_RELEASE_FOR_THIS_PLATFORM",
        "warning",
    ),
    ("Collecting vllm\n" + PIP_NONE.format("vllm>=0.6"), "NO_RELEASE_FOR_THIS_PLATFORM", "warning"),
    (
        RETRY.format("NewConnectionError", "torch")
        + "\n"
        + PIP_NONE.format("torch")
        + "\nERROR: No matching distribution found for torch",
        "PACKAGE_INDEX_UNREACHABLE",
        "error",
    ),
    (
        RETRY.format("ProxyError", "numpy") + "\nERROR: No matching distribution found for numpy",
        "PACKAGE_INDEX_UNREACHABLE",
        "error",
    ),
    (
        "ERROR: Could not find a version that satisfies the requirement torch==2.1.0+cu121 (from"
        " versions: 2.2.0, 2.2.1, 2.3.0)",
        "TORCH_LOCAL_VERSION_NEEDS_INDEX",
        "error",
    ),
    (
        "ERROR: Could not find a version that satisfies the requirement torchvision===0.16.0+cpu"
        " (from versions: 0.17.0, 0.18.0)",
        "TORCH_LOCAL_VERSION_NEEDS_INDEX",
        "error",
    ),
    (
        "ERROR: Could not find a version that satisfies the requirement click==8.2.1 (from"
        " versions: 8.1.7, 8.1.8)",
        "PYTHON_TOO_OLD_FOR_PACKAGE",
        "info",
    ),
    # a pin older than every offered version: a release made before this Python (numpy
    # 1.26.0 was the first with cp312 wheels), not one made after it
    (
        "ERROR: Could not find a version that satisfies the requirement numpy==1.21.0 (from"
        " versions: 1.26.0, 1.26.4, 2.0.0)",
        "PYTHON_TOO_NEW_FOR_PACKAGE",
        "info",
    ),
    # 2. Windows
    (
        'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Users\\'
        'me\\venv\\lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.',
        "WIN_DLL_LOAD_FAILED",
        "error",
    ),
    (
        "ImportError: DLL load failed while importing _C: The specified module could not be found.",
        "WIN_DLL_LOAD_FAILED",
        "error",
    ),
    (
        "ImportError: DLL load failed: The specified procedure could not be found.",
        "WIN_DLL_LOAD_FAILED",
        "error",
    ),
    (
        "OSError: [WinError 1455] The paging file is too small for this operation to complete."
        ' Error loading "C:\\Python310\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or'
        " one of its dependencies.",
        "WIN_PAGING_FILE_TOO_SMALL",
        "error",
    ),
    ("OSError: [WinError 1455] 页面文件太小，无法完成操作。", "WIN_PAGING_FILE_TOO_SMALL", "error"),
    # 3. the system's Python
    ("error: externally-managed-environment", "SYSTEM_PYTHON_NOT_WRITABLE", "error"),
    (
        "error: externally-managed-environment\n\n× This environment is externally managed\n"
        "╰─> To install Python packages system-wide, try apt install",
        "SYSTEM_PYTHON_NOT_WRITABLE",
        "error",
    ),
    (
        "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied:"
        " '/usr/local/lib/python3.10/dist-packages/torch'\nConsider using the `--user` option or"
        " check the permissions.",
        "SYSTEM_PYTHON_NOT_WRITABLE",
        "error",
    ),
    (
        "ERROR: Could not install packages due to an EnvironmentError: [Errno 13] Permission denied:"
        " '/opt/conda/lib/python3.8/site-packages/numpy-1.19.dist-info'",
        "SYSTEM_PYTHON_NOT_WRITABLE",
        "error",
    ),
    # 4. Python too new / too old for a package
    (
        "AttributeError: module 'pkgutil' has no attribute 'ImpImporter'. Did you mean:"
        " 'zipimporter'?",
        "PYTHON_TOO_NEW_FOR_PACKAGE",
        "error",
    ),
    ("ModuleNotFoundError: No module named 'imp'", "PYTHON_TOO_NEW_FOR_PACKAGE", "error"),
    (
        '  File "/home/u/.venv/lib/python3.12/site-packages/foo/build.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'distutils'",
        "PYTHON_TOO_NEW_FOR_PACKAGE",
        "error",
    ),
    (
        "ModuleNotFoundError: No module named 'distutils.util'",
        "PYTHON_TOO_NEW_FOR_PACKAGE",
        "warning",
    ),
    (
        '  File "/opt/conda/lib/python3.9/site-packages/foo/types.py", line 12, in <module>\n'
        "    def f(x: int | None = None): ...\n"
        "TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'",
        "PYTHON_TOO_OLD_FOR_PACKAGE",
        "error",
    ),
    (
        '  File "C:\\Python38\\Lib\\site-packages\\bar\\api.py", line 5, in Config\n'
        "    items: list[str] | None\n"
        "TypeError: unsupported operand type(s) for |: 'GenericAlias' and 'NoneType'",
        "PYTHON_TOO_OLD_FOR_PACKAGE",
        "error",
    ),
    # 5. no MSVC
    (
        'error: Microsoft Visual C++ 14.0 or greater is required. Get it with "Microsoft C++ Build'
        ' Tools": https://visualstudio.microsoft.com/visual-cpp-build-tools/',
        "EXT_BUILD_NO_C_COMPILER",
        "error",
    ),
    (
        'error: Microsoft Visual C++ 14.0 is required. Get it with "Build Tools for Visual Studio"',
        "EXT_BUILD_NO_C_COMPILER",
        "error",
    ),
    # 6. version skew
    (
        "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major"
        " versions. PyTorch has CUDA Version=11.8 and torchvision has CUDA Version=12.1.",
        "TORCHVISION_TORCH_MISMATCH",
        "error",
    ),
    (
        "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA"
        " versions. PyTorch has CUDA Version=10.2 and torchvision has CUDA Version=10.1.",
        "TORCHVISION_TORCH_MISMATCH",
        "error",
    ),
    (
        "RuntimeError: operator torchvision::nms does not exist",
        "TORCHVISION_TORCH_MISMATCH",
        "error",
    ),
    (
        "RuntimeError: operator torchvision::deform_conv2d does not exist",
        "TORCHVISION_TORCH_MISMATCH",
        "error",
    ),
    (
        "TypeError: Descriptors cannot be created directly.\nIf this call came from a _pb2.py file,"
        " your generated code is out of date",
        "PACKAGE_VERSION_SKEW",
        "error",
    ),
    ("TypeError: Descriptors cannot not be created directly.", "PACKAGE_VERSION_SKEW", "error"),
    (
        "ImportError: cannot import name 'packaging' from 'pkg_resources'"
        " (/usr/lib/python3/dist-packages/pkg_resources/__init__.py)",
        "PACKAGE_VERSION_SKEW",
        "error",
    ),
    ("ModuleNotFoundError: No module named 'triton.ops'", "PACKAGE_VERSION_SKEW", "error"),
    (
        "ModuleNotFoundError: No module named 'triton.ops.matmul_perf_model'",
        "PACKAGE_VERSION_SKEW",
        "error",
    ),
    (
        "AttributeError: module 'numpy' has no attribute 'float'.\n`np.float` was a deprecated alias"
        " for the builtin `float`.",
        "PACKAGE_VERSION_SKEW",
        "warning",
    ),
    ("AttributeError: module 'numpy' has no attribute 'bool'.", "PACKAGE_VERSION_SKEW", "warning"),
    (
        "AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64`"
        " instead.",
        "PACKAGE_VERSION_SKEW",
        "warning",
    ),
    # 7. transformers' backends
    (
        "ImportError: LlamaTokenizer requires the SentencePiece library but it was not found in your"
        " environment.",
        "PACKAGE_REQUESTED_NOT_INSTALLED",
        "error",
    ),
    (
        "ImportError: load_dataset requires the 🤗 Datasets library but it was not found in your"
        " environment.",
        "PACKAGE_REQUESTED_NOT_INSTALLED",
        "error",
    ),
    (
        "ValueError: Loading a Quark quantized model requires the `quark` library but it was not"
        " found in the environment.",
        "PACKAGE_REQUESTED_NOT_INSTALLED",
        "error",
    ),
    # 8. a system library
    (
        "ImportError: libGL.so.1: cannot open shared object file: No such file or directory",
        "SYSTEM_LIB_MISSING",
        "error",
    ),
    (
        "ImportError: libgthread-2.0.so.0: cannot open shared object file: No such file or"
        " directory",
        "SYSTEM_LIB_MISSING",
        "error",
    ),
    (
        "OSError: /usr/lib/x86_64-linux-gnu/libsndfile.so.1: cannot open shared object file",
        "SYSTEM_LIB_MISSING",
        "error",
    ),
    (
        "python: error while loading shared libraries: libaio.so.1: cannot open shared object file:"
        " No such file or directory",
        "SYSTEM_LIB_MISSING",
        "error",
    ),
    (
        "ImportError: dlopen(/x/_C.so, 0x0002): Library not loaded: @rpath/libomp.dylib",
        "SYSTEM_LIB_MISSING",
        "error",
    ),
]


@pytest.mark.parametrize(("log", "code", "severity"), POSITIVES)
def test_the_frameworks_own_form_reads_as_its_cause(log, code, severity):
    assert readings(log)[0] == (code, severity)


# near misses: the same words about something else, or the cause another reading owns
NEAR_MISSES = [
    # an SSL failure is the TLS reading's, a pin that is listed is not absent
    (
        RETRY.replace("NewConnectionError", "SSLError")
        .format("x", "torch")
        .replace("Failed to establish a new connection", "certificate verify failed")
        + "\n"
        + PIP_NONE.format("torch"),
        "PACKAGE_INDEX_UNREACHABLE",
    ),
    # pip that never reached the index did not judge this platform
    (
        RETRY.format("NewConnectionError", "torch") + "\n" + PIP_NONE.format("torch"),
        "NO_RELEASE_FOR_THIS_PLATFORM",
    ),
    (
        "ERROR: Could not find a version that satisfies the requirement numpy==1.26.4 (from"
        " versions: 1.26.0, 1.26.4)",
        "PYTHON_TOO_OLD_FOR_PACKAGE",
    ),
    (
        "ERROR: Could not find a version that satisfies the requirement torch (from versions: 2.2.0)",
        "NO_RELEASE_FOR_THIS_PLATFORM",
    ),
    # +cu pin where the PyTorch index was searched (its +cu builds listed, or the index named)
    (
        "ERROR: Could not find a version that satisfies the requirement torch==2.1.0+cu121 (from"
        " versions: 2.2.0+cu121, 2.3.0+cu121)",
        "TORCH_LOCAL_VERSION_NEEDS_INDEX",
    ),
    (
        "Looking in indexes: https://download.pytorch.org/whl/cu121\nERROR: Could not find a version"
        " that satisfies the requirement torch==2.0.9+cu121 (from versions: 2.1.0, 2.2.0)",
        "TORCH_LOCAL_VERSION_NEEDS_INDEX",
    ),
    ("OSError: [WinError 5] Access is denied: 'C:\\x\\torch\\lib\\c10.dll'", "WIN_DLL_LOAD_FAILED"),
    ("OSError: [WinError 1450] Insufficient system resources exist", "WIN_PAGING_FILE_TOO_SMALL"),
    # the user's own folders are not the interpreter's
    (
        "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied:"
        " '/home/me/project/build/lib'",
        "SYSTEM_PYTHON_NOT_WRITABLE",
    ),
    (
        "PermissionError: [Errno 13] Permission denied: '/usr/local/lib/python3.10/dist-packages/x'",
        "SYSTEM_PYTHON_NOT_WRITABLE",
    ),
    ("ModuleNotFoundError: No module named 'impacket'", "PYTHON_TOO_NEW_FOR_PACKAGE"),
    (
        "AttributeError: module 'pkgutil' has no attribute 'iter_modules2'",
        "PYTHON_TOO_NEW_FOR_PACKAGE",
    ),
    # a `|` of the user's own values, or a union in the user's own script
    ("TypeError: unsupported operand type(s) for |: 'int' and 'str'", "PYTHON_TOO_OLD_FOR_PACKAGE"),
    (
        '  File "/home/me/train.py", line 3, in <module>\n    x: int | None = None\n'
        "TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'",
        "PYTHON_TOO_OLD_FOR_PACKAGE",
    ),
    ("error: command 'cl.exe' failed with exit code 2", "EXT_BUILD_NO_C_COMPILER"),
    ("RuntimeError: operator aten::nms does not exist in this build", "TORCHVISION_TORCH_MISMATCH"),
    ("TypeError: Descriptors must be created with a pool", "PACKAGE_VERSION_SKEW"),
    ("ImportError: cannot import name 'packaging' from 'setuptools'", "PACKAGE_VERSION_SKEW"),
    ("ModuleNotFoundError: No module named 'triton'", "PACKAGE_VERSION_SKEW"),
    ("AttributeError: module 'numpy' has no attribute 'float64x'", "PACKAGE_VERSION_SKEW"),
    (
        "ValueError: The tokenizer requires the pad token to be set",
        "PACKAGE_REQUESTED_NOT_INSTALLED",
    ),
    # CUDA's and torch's own libraries are other readings'
    (
        "OSError: libcudart.so.12: cannot open shared object file: No such file or directory",
        "SYSTEM_LIB_MISSING",
    ),
    (
        "OSError: libcuda.so.1: cannot open shared object file: No such file or directory",
        "SYSTEM_LIB_MISSING",
    ),
    (
        "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory",
        "SYSTEM_LIB_MISSING",
    ),
    ("ImportError: libcudnn_cnn_infer.so.8: cannot open shared object file", "SYSTEM_LIB_MISSING"),
    ("OSError: libnccl.so.2: cannot open shared object file", "SYSTEM_LIB_MISSING"),
    (
        "[WARNING]  async_io requires the dev libaio .so object and headers but these were not"
        " found.",
        "SYSTEM_LIB_MISSING",
    ),
]


@pytest.mark.parametrize(("log", "code"), NEAR_MISSES)
def test_a_near_miss_is_not_that_reading(log, code):
    assert code not in codes(log)


def test_a_missing_cuda_runtime_stays_the_cuda_reading():
    assert codes("OSError: libcudart.so.12: cannot open shared object file")[0] == (
        "CUDA_RUNTIME_LIB_MISSING"
    )


def test_a_pin_pip_ignored_for_its_python_stays_the_specific_reading():
    log = (
        "ERROR: Ignored the following versions that require a different python version: 2.5.0"
        " Requires-Python >=3.12\nERROR: Could not find a version that satisfies the requirement"
        " numpy==2.5.0 (from versions: 1.26.4, 2.4.6)"
    )
    assert readings(log)[0] == ("PYTHON_TOO_OLD_FOR_PACKAGE", "error")


def test_a_pin_one_digit_longer_than_a_listed_version_is_a_slip_not_a_python_hint():
    log = (
        "ERROR: Could not find a version that satisfies the requirement flash-attn==2.8.33 (from"
        " versions: 2.8.2, 2.8.3, 2.8.3.post1)"
    )
    assert codes(log) == []
