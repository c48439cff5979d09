"""Environment managers and native Windows: MKL 2024.1's missing iJIT_NotifyEvent under
torch, CUDA libraries of two releases (cuBLAS / cuBLASLt, cuSPARSE / nvJitLink, cuDNN 8),
conda / mamba / pixi solves without the __cuda virtual package, uv's hint naming another
platform's wheels; Windows' symlink privilege (WinError 1314), PowerShell's execution
policy, UTF-8 files read in the locale's code page, vLLM's server without uvloop.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

SITE = "/home/u/miniforge3/envs/mm/lib/python3.8/site-packages"
WIN_SITE = "D:\\anaconda3\\envs\\glm\\Lib\\site-packages"

# --- MKL 2024.1 under torch: iJIT_NotifyEvent ---------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        f"ImportError: {SITE}/torch/lib/libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent",
        # an issue title: no path, no colon after the exception's name
        "ImportError undefined symbol: iJIT_NotifyEvent when MKL 2024.1 is installed",
        # the reporter's words around the loader's
        "import torch fails: libtorch_cpu.so: undefined symbol: iJIT_NotifyEvent",
    ],
)
def test_mkl_jit_profiling_symbol_missing_is_stated(log):
    assert lead(log) == ("EXT_NATIVE_LIB_UNDEFINED_SYMBOL", "error")


@pytest.mark.parametrize(
    "log",
    [
        # another plain C symbol of torch's library: the generic guess, not MKL's
        f"ImportError: {SITE}/torch/lib/libtorch_cpu.so: undefined symbol: cblas_gemm_bf16bf16f32",
        # the symbol listed by nm, no loader refusing it
        "$ nm -D libmkl_core.so.2 | grep iJIT_NotifyEvent\n0000000000a1b2c0 T iJIT_NotifyEvent",
    ],
)
def test_other_symbols_and_listings_are_not_mkls_stated_reading(log):
    assert ("EXT_NATIVE_LIB_UNDEFINED_SYMBOL", "error") not in readings(log)


# --- a CUDA library and its sibling from another release -------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # conda's cudatoolkit: cuBLAS against another cuBLASLt, the reporter's paraphrase
        "OSError $ENV_PATH/torch/lib/../../../../libcublas.so.11: undefined symbol:"
        " cublasLt_for_cublas_HSS, version libcublasLt.so.11 when importing torch",
        # pip's nvidia-cusparse against a system CUDA's nvJitLink on LD_LIBRARY_PATH
        f"ImportError: {SITE}/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined"
        " symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12",
        # cuDNN 8's sub-library against another release's ops library (a mangled symbol)
        "Could not load library libcudnn_cnn_infer.so.8. Error: /usr/lib/x86_64-linux-gnu/"
        "libcudnn_cnn_infer.so.8: undefined symbol: _ZN5cudnn3ops18GetInternalStreamsEP12cudnn"
        "ContextiPP11CUstream_st, version libcudnn_ops_infer.so.8",
        # glibc's relocation wording of the same
        f"python3: relocation error: {SITE}/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: symbol"
        " _Z20traceback_iretf_implPKcRKN5cudnn16InternalStatus_tEb, version"
        " libcudnn_ops_infer.so.8 not defined in file libcudnn_ops_infer.so.8 with link time"
        " reference",
        # unversioned: the symbol's prefix names the sibling
        "ImportError: /opt/cuda/lib64/libcublas.so.12: undefined symbol: cublasLtSSSMatmulAlgoGetIds",
    ],
)
def test_cuda_library_missing_its_siblings_symbol_is_stated(log):
    assert lead(log) == ("EXT_NATIVE_LIB_UNDEFINED_SYMBOL", "error")


@pytest.mark.parametrize(
    "log",
    [
        # torch's own library against CUDA's runtime: not two CUDA siblings
        f"ImportError: {SITE}/torch/lib/libtorch_cuda.so: undefined symbol:"
        " cudaGraphInstantiateWithFlags, version libcudart.so.11.0",
        # a CUDA library's plain symbol that names no sibling
        "ImportError: /opt/cuda/lib64/libcublas.so.12: undefined symbol: my_helper_fn",
        # the sibling missing altogether is another cause
        "OSError: libcublasLt.so.11: cannot open shared object file: No such file or directory",
    ],
)
def test_other_libraries_and_missing_files_are_not_a_cuda_sibling_mismatch(log):
    assert ("EXT_NATIVE_LIB_UNDEFINED_SYMBOL", "error") not in readings(log)


# --- the solver's __cuda virtual package ----------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # libmamba 2's problem tree, and its line quoted alone
        "error    libmamba Could not solve for environment specs\n"
        "    The following package could not be installed\n"
        "    └─ libtorch =* cuda12* is not installable because it requires\n"
        "       └─ __cuda =* *, which is missing on the system.",
        "__cuda =* *, which is missing on the system;",
        "__cuda >=12 is missing on the system",
        # libsolv (mamba 1.x, conda's libmamba solver 1.x)
        "Could not solve for environment specs\nEncountered problems while solving:\n"
        "  - nothing provides __cuda needed by pytorch-1.13.1-cuda112py310he33e0d6_200",
        "  - package pytorch-2.1.2-cuda120_py311h25b6552_300 requires __cuda, but none of the"
        " providers can be installed",
        # conda's classic solver
        "UnsatisfiableError: The following specifications were found to be incompatible with"
        " your system:\n\n  - feature:/linux-64::__glibc==2.35=0\n"
        "  - pytorch==2.1.0 -> __cuda[version='>=11.8']\n\nYour installed version is: not available",
        # pixi (resolvo)
        "  └─ pytorch-gpu * cannot be installed because there are no viable options:\n"
        "     └─ pytorch-gpu 2.3.1 would require\n"
        "        └─ __cuda *, for which no candidates were found.",
    ],
)
def test_solve_without_cuda_virtual_package_is_read(log):
    assert lead(log) == ("CONDA_CUDA_VIRTUAL_PACKAGE_MISSING", "error")


@pytest.mark.parametrize(
    "log",
    [
        # another virtual package (an old glibc), and a real package missing
        "  - nothing provides __glibc >=2.28,<3.0.a0 needed by libgcc-14.2.0-h77fa898_1",
        "  - nothing provides cudatoolkit 11.8.* needed by pytorch-2.0.1-py3.10_cuda11.8_0",
        # a package's real dependency that cannot be installed
        "  - package pytorch-cuda-12.1-ha16c6d3_5 requires cuda-cudart >=12.1,<12.2, but none"
        " of the providers can be installed",
        # conda info listing the virtual packages it sees: a healthy machine
        "       virtual packages : __archspec=1=x86_64_v3\n                          __cuda=12.4=0\n"
        "                          __glibc=2.35=0",
        # the classic solver's message about another virtual package
        "UnsatisfiableError: The following specifications were found to be incompatible with"
        " your system:\n\n  - feature:/linux-64::__glibc==2.17=0\n"
        "  - python=3.12 -> libgcc-ng[version='>=12'] -> __glibc[version='>=2.17']",
    ],
)
def test_other_solve_failures_and_clean_listings_are_not_the_cuda_virtual_package(log):
    assert "CONDA_CUDA_VIRTUAL_PACKAGE_MISSING" not in codes(log)


# --- uv: the version's wheels are for another platform ---------------------------------------

UV_REFUSAL = (
    "error: Distribution `torch==2.5.1 @ registry+https://download.pytorch.org/whl/cu124` can't"
    " be installed because it doesn't have a source distribution or wheel for the current platform"
)


@pytest.mark.parametrize(
    "log",
    [
        # uv 0.12's hint with its required-environments advice
        UV_REFUSAL + "\n\nhint: You're on Linux (`manylinux_2_39_x86_64`), but `torch` (v2.5.1)"
        " only has wheels for the following platform: `linux_aarch64`; consider adding"
        " \"sys_platform == 'linux' and platform_machine == 'x86_64'\" to"
        " `tool.uv.required-environments` to ensure uv resolves to a version with compatible wheels",
        # uv 0.5's, wrapped by the terminal it was pasted from
        "error: Distribution `torch==2.5.1 @ registry+https://download.pytorch.org/whl/cu124`"
        " can't be installed \nbecause it doesn't have a source distribution or wheel for the"
        " current platform\nhint: You're on Linux (`manylinux_2_39_x86_64`), \nbut `torch`"
        " (v2.5.1) only has wheels for the following platform: `linux_aarch64`",
        # macOS against Linux and Windows wheels, several platforms
        "hint: You're on macOS (`macosx_14_0_arm64`), but `torch` (v2.5.1+cu124) only has wheels"
        " for the following platforms: `manylinux_2_28_x86_64`, `win_amd64`",
        # no platform uv can name
        "hint: Wheels are available for `triton` (v3.1.0) on the following platforms:"
        " `manylinux_2_17_x86_64`, `manylinux2014_x86_64`",
    ],
)
def test_uv_hint_naming_another_platform_is_stated(log):
    assert lead(log) == ("NO_RELEASE_FOR_THIS_PLATFORM", "error")


def test_uv_refusal_wrapped_over_lines_is_still_read():
    wrapped = UV_REFUSAL.replace("installed because", "installed \nbecause")
    assert "NO_RELEASE_FOR_THIS_PLATFORM" in codes(wrapped)


@pytest.mark.parametrize(
    "log",
    [
        # the Python ABI hint: another reading (a Python too new)
        UV_REFUSAL + "\n\nhint: You're using CPython 3.13 (`cp313`), but `torch` (v2.5.1) only"
        " has wheels with the following Python ABI tags: `cp39`, `cp310`, `cp311`, `cp312`",
        # uv saying it is already the latest release
        "info: You're on the latest version of uv (v0.12.5)",
    ],
)
def test_python_tag_hints_and_uv_self_update_are_not_the_platform_hint(log):
    assert ("NO_RELEASE_FOR_THIS_PLATFORM", "error") not in readings(log)


# --- Windows: the symlink privilege (WinError 1314) ------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "OSError: [WinError 1314] A required privilege is not held by the client:"
        " 'C:\\\\Users\\\\karl\\\\data\\\\Asru75' -> 'C:\\\\Users\\\\karl\\\\AppData\\\\Local\\\\Temp"
        "\\\\tmprb8ywnre\\\\0\\\\Asru75'",
        # the message in Turkish, behind an application's own words
        "  ❌ Failed to load Whisper model: [WinError 1314] Gereken ayrıcalık istemci tarafından"
        " sağlanmıyor: '..\\\\..\\\\blobs\\\\3f2a' -> 'C:\\\\Users\\\\a\\\\.cache\\\\huggingface\\\\hub"
        "\\\\models--Systran--faster-whisper-small.en\\\\snapshots\\\\9e1c\\\\vocabulary.txt'",
        # the link named, no paths
        "Failed to create symlink for the cache: [WinError 1314] 客户端没有所需的特权。",
    ],
)
def test_symlink_privilege_refused_is_stated(log):
    assert lead(log) == ("WIN_SYMLINK_PRIVILEGE_MISSING", "error")


def test_bare_winerror_1314_is_a_hint():
    log = "PermissionError: [WinError 1314] A required privilege is not held by the client"
    assert lead(log) == ("WIN_SYMLINK_PRIVILEGE_MISSING", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # another Windows error between two paths
        "PermissionError: [WinError 5] Access is denied: 'C:\\\\a\\\\x.tmp' -> 'C:\\\\a\\\\x.bin'",
        # huggingface_hub's warning on a machine without symlinks: it copies and goes on
        "UserWarning: `huggingface_hub` cache-system uses symlinks by default to efficiently store"
        " duplicated files but your machine does not support them in C:\\Users\\u\\.cache"
        "\\huggingface\\hub. Caching files will still work but in a degraded version that might"
        " require more space on your disk. To support symlinks on Windows, you either need to"
        " activate Developer Mode or to run Python as an administrator.",
        # another code that starts with the same digits
        "OSError: [WinError 13140] unknown error: 'C:\\\\a' -> 'C:\\\\b'",
    ],
)
def test_other_windows_errors_and_the_hubs_warning_are_not_the_symlink_privilege(log):
    assert "WIN_SYMLINK_PRIVILEGE_MISSING" not in codes(log)


# --- Windows: PowerShell's execution policy --------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        ".\\venv\\Scripts\\Activate.ps1 : File C:\\Users\\u\\proj\\venv\\Scripts\\Activate.ps1"
        " cannot be loaded because running scripts is disabled on this system. For more"
        " information, see about_Execution_Policies at https:/go.microsoft.com/fwlink/?LinkID=135170.",
        # the middle of the message lost; the help link and the error record remain
        "File I:\\app\\install_script\\ For more information, see about_Execution_Policies at"
        " https:/go.microsoft.com/fwlink/?LinkID=135170.\n"
        "    + CategoryInfo          : SecurityError: (:) [], ParentContainsErrorRecordException\n"
        "    + FullyQualifiedErrorId : UnauthorizedAccess",
        # a localized message: the error record's lines are not translated
        "无法加载文件 D:\\proj\\venv\\Scripts\\Activate.ps1，因为在此系统上禁止运行脚本。\n"
        "    + CategoryInfo          : SecurityError: (:) [], PSSecurityException\n"
        "    + FullyQualifiedErrorId : UnauthorizedAccess",
        # RemoteSigned and a downloaded script
        "File C:\\dl\\run.ps1 cannot be loaded. The file C:\\dl\\run.ps1 is not digitally signed."
        " You cannot run this script on the current system. For more information about running"
        " scripts and setting execution policy, see about_Execution_Policies at"
        " https://go.microsoft.com/fwlink/?LinkID=135170",
    ],
)
def test_powershell_refusing_a_script_is_read(log):
    assert lead(log) == ("WIN_POWERSHELL_EXECUTION_POLICY", "error")


@pytest.mark.parametrize(
    "log",
    [
        # Set-ExecutionPolicy's own prompt (the fix being applied)
        "Execution Policy Change\nThe execution policy helps protect you from scripts that you do"
        " not trust. Changing the execution policy might expose you to the security risks"
        " described in the about_Execution_Policies help topic at"
        " https://go.microsoft.com/fwlink/?LinkID=135170. Do you want to change the execution policy?",
        # a file access denied: another UnauthorizedAccess error id
        "New-Item : Access to the path 'C:\\Windows\\x' is denied.\n"
        "    + FullyQualifiedErrorId : System.UnauthorizedAccessException,"
        "Microsoft.PowerShell.Commands.NewItemCommand",
    ],
)
def test_the_policy_prompt_and_other_access_errors_are_not_a_refused_script(log):
    assert "WIN_POWERSHELL_EXECUTION_POLICY" not in codes(log)


# --- Windows: a UTF-8 file read in the locale's code page -------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "UnicodeDecodeError: 'gbk' codec can't decode byte 0xa7 in position 257: illegal"
        " multibyte sequence",
        # json.load of a file opened without encoding, cp1252 on a Western system
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\u\\nodes\\presets.py", line 12, in load\n'
        "    data = json.load(f)\n"
        '  File "C:\\Python311\\Lib\\encodings\\cp1252.py", line 23, in decode\n'
        "    return codecs.charmap_decode(input,self.errors,decoding_table)[0]\n"
        "UnicodeDecodeError: 'charmap' codec can't decode byte 0x9d in position 1234: character"
        " maps to <undefined>",
        # a range of bytes, Japanese code page
        "UnicodeDecodeError: 'cp932' codec can't decode bytes in position 10-11: illegal"
        " multibyte sequence",
    ],
)
def test_utf8_file_read_in_the_locale_code_page_is_a_hint(log):
    assert lead(log) == ("WIN_LOCALE_ENCODING_FILE_READ", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # the console side: WIN_CONSOLE_GBK_ENCODING's
        "UnicodeEncodeError: 'gbk' codec can't encode character '\\u2705' in position 0: illegal"
        " multibyte sequence",
        # a GBK file read as UTF-8 (on any OS): the file, not the locale
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xa7 in position 257: invalid start byte",
        # the program names the codec itself on the failing line
        '  File "C:\\proj\\load.py", line 8, in read\n'
        "    text = raw.decode('gbk')\n"
        "UnicodeDecodeError: 'gbk' codec can't decode byte 0xa7 in position 3: illegal"
        " multibyte sequence",
        '  File "C:\\proj\\load.py", line 8, in read\n'
        "    with open(path, encoding='gbk') as f: text = f.read()\n"
        "UnicodeDecodeError: 'gbk' codec can't decode byte 0xa7 in position 3: illegal"
        " multibyte sequence",
    ],
)
def test_console_utf8_and_chosen_codecs_are_not_the_locale_default(log):
    assert "WIN_LOCALE_ENCODING_FILE_READ" not in codes(log)


# --- vLLM's server on native Windows: uvloop ---------------------------------------------------

UVLOOP_TB = (
    "Traceback (most recent call last):\n"
    '  File "<frozen runpy>", line 88, in _run_code\n'
    '  File "{site}{sep}vllm{sep}entrypoints{sep}openai{sep}api_server.py", line 26, in <module>\n'
    "    import uvloop\n"
    "ModuleNotFoundError: No module named 'uvloop'"
)


def test_vllm_server_without_uvloop_on_windows_is_native_windows():
    log = "(glm) PS D:\\Open-AutoGLM> python -m vllm.entrypoints.openai.api_server\n"
    log += UVLOOP_TB.format(site=WIN_SITE, sep="\\")
    assert lead(log) == ("VLLM_NATIVE_WINDOWS", "error")


@pytest.mark.parametrize(
    "log",
    [
        # the same traceback on Linux: a broken install, not Windows
        UVLOOP_TB.format(site="/home/u/venv/lib/python3.12/site-packages", sep="/"),
        # uvloop missing from another program's frame on Windows
        "Traceback (most recent call last):\n"
        '  File "C:\\proj\\server.py", line 3, in <module>\n'
        "    import uvloop\n"
        "ModuleNotFoundError: No module named 'uvloop'",
    ],
)
def test_uvloop_missing_elsewhere_is_not_vllm_on_windows(log):
    assert "VLLM_NATIVE_WINDOWS" not in codes(log)
