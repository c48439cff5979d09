"""Readings learned from failures caused for real on a CPU machine, all of the interpreter or
the process environment rather than the training code: a Python built without a stdlib
extension, /dev/shm that takes no semaphore or shared tensor, no usable temporary
directory, a local file named like a package, a thread-count variable that is not a number.
Text shapes beyond the recordings; near misses that must not read so. Codes and severities
only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings


@pytest.mark.parametrize(
    "log",
    [
        "ModuleNotFoundError: No module named '_lzma'",
        '  File "/home/u/.pyenv/versions/3.10.4/lib/python3.10/bz2.py", line 17, in <module>\n'
        "    from _bz2 import BZ2Compressor, BZ2Decompressor\n"
        "ModuleNotFoundError: No module named '_bz2'",
        "ImportError: No module named _ctypes",
        "ModuleNotFoundError: No module named '_sqlite3'",
        "zipimport.ZipImportError: can't decompress data; zlib not available\n"
        "ModuleNotFoundError: No module named 'zlib'",
    ],
)
def test_a_missing_stdlib_extension_reads_as_an_incomplete_python_at_error(log):
    assert readings(log)[0] == ("PYTHON_STDLIB_MODULE_MISSING", "error")


@pytest.mark.parametrize(
    "log",
    [
        "ModuleNotFoundError: No module named 'reward_utils'",
        "ModuleNotFoundError: No module named '_lzma_backport'",
        "ModuleNotFoundError: No module named 'zlib_ng'",
        "ModuleNotFoundError: No module named '_ctypes.util'",
    ],
)
def test_other_missing_modules_are_not_an_incomplete_python(log):
    assert "PYTHON_STDLIB_MODULE_MISSING" not in codes(log)


SEMLOCK = (
    '  File "/usr/lib/python3.11/multiprocessing/synchronize.py", line 57, in __init__\n'
    "    sl = self._semlock = _multiprocessing.SemLock(\n"
    "                         ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
)


@pytest.mark.parametrize(
    "error",
    [
        "OSError: [Errno 30] Read-only file system",
        "PermissionError: [Errno 13] Permission denied",
        "FileNotFoundError: [Errno 2] No such file or directory",
        "OSError: [Errno 38] Function not implemented",
    ],
)
def test_a_semaphore_refused_by_dev_shm_reads_as_dev_shm_unusable_at_error(error):
    assert readings(SEMLOCK + error)[0] == ("DEV_SHM_UNUSABLE", "error")


def test_a_semaphore_refused_without_the_caret_line_still_reads():
    log = "    sl = self._semlock = _multiprocessing.SemLock(\nOSError: [Errno 38] Function not implemented"
    assert readings(log)[0] == ("DEV_SHM_UNUSABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        SEMLOCK + "OSError: [Errno 24] Too many open files",
        '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 125, in worker\n'
        "    result = (True, func(*args, **kwds))\n"
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/shard-3.jsonl'",
        "OSError: [Errno 30] Read-only file system",
    ],
)
def test_other_failures_near_a_semaphore_are_not_dev_shm(log):
    assert "DEV_SHM_UNUSABLE" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: unable to open shared memory object </torch_4242_1968_0> in read-write"
        " mode: Read-only file system (30)",
        "RuntimeError: unable to open shared memory object </torch_4242_1968_0> in read-write"
        " mode: Permission denied (13)",
        "RuntimeError: unable to open shared memory object </torch_1_2_3> in read-write mode:"
        " Function not implemented (38)",
    ],
)
def test_a_shared_tensor_refused_by_dev_shm_reads_as_dev_shm_unusable_at_error(log):
    assert readings(log)[0] == ("DEV_SHM_UNUSABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: unable to open shared memory object </torch_31124_2696026929> in"
        " read-write mode: Too many open files (24)",
        "RuntimeError: unable to open shared memory object </torch_1_2_3> in read-write mode:"
        " No such file or directory (2)",
    ],
)
def test_a_descriptor_limit_or_a_removed_segment_is_not_dev_shm(log):
    assert "DEV_SHM_UNUSABLE" not in codes(log)


def test_a_python_without_sem_open_reads_at_warning():
    log = (
        "ImportError: This platform lacks a functioning sem_open implementation, therefore,"
        " the required synchronization primitives needed will not function, see issue 3770."
    )
    assert readings(log)[0] == ("DEV_SHM_UNUSABLE", "warning")


def test_another_sem_open_failure_is_not_a_python_without_it():
    assert "DEV_SHM_UNUSABLE" not in codes("RuntimeError: sem_open failed for /mp-abc: File exists")


@pytest.mark.parametrize(
    "log",
    [
        "FileNotFoundError: [Errno 2] No usable temporary directory found in"
        " ['/scratch/job-7/tmp', '/tmp', '/var/tmp', '/usr/tmp', '/home/u/proj']",
        "FileNotFoundError: [Errno 2] No usable temporary directory found in"
        " ['C:\\\\Users\\\\u\\\\AppData\\\\Local\\\\Temp', 'C:\\\\TEMP', 'c:\\\\temp']",
    ],
)
def test_no_usable_temp_dir_reads_as_a_directory_not_writable_at_error(log):
    assert readings(log)[0] == ("CACHE_DIR_NOT_WRITABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        "FileExistsError: [Errno 17] No usable temporary file name found",
        "FileNotFoundError: [Errno 2] No such file or directory: 'configs/grpo.yaml'",
    ],
)
def test_other_temp_and_missing_file_errors_are_not_an_unusable_temp_dir(log):
    assert "CACHE_DIR_NOT_WRITABLE" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "ImportError: cannot import name 'load_dataset' from partially initialized module"
        " 'datasets' (most likely due to a circular import) (/home/u/proj/datasets.py)",
        "ImportError: cannot import name 'Encoding' from 'tokenizers' (/home/u/proj/tokenizers.py)",
        "ImportError: cannot import name 'Random' from 'random' (/home/u/proj/random.py)",
        "ImportError: cannot import name 'AutoTokenizer' from 'transformers'"
        " (C:\\Users\\u\\proj\\transformers.py)",
        "ImportError: cannot import name 'GRPOConfig' from 'trl' (consider renaming"
        " '/home/u/proj/trl.py' if it has the same name as a library you intended to import)",
        "ImportError: cannot import name 'hls_to_rgb' from 'colorsys' (consider renaming"
        " '/home/u/colorsys.py' since it has the same name as the standard library module named"
        " 'colorsys' and prevents importing that standard library module)",
    ],
)
def test_a_local_file_named_like_a_package_reads_as_shadowing_at_error(log):
    assert readings(log)[0] == ("MODULE_SHADOWED_BY_LOCAL_FILE", "error")


@pytest.mark.parametrize(
    "log",
    [
        "ImportError: cannot import name 'tokenize_batch' from 'utils' (/home/u/proj/utils.py)",
        "ImportError: cannot import name 'format_reward' from partially initialized module"
        " 'rewards' (most likely due to a circular import) (/home/u/proj/rewards.py)",
        "ImportError: cannot import name 'f' from 'modx' (consider renaming '/home/u/modx.py' if"
        " it has the same name as a library you intended to import)",
        "ImportError: cannot import name 'Qwen3Config' from 'transformers'"
        " (/usr/local/lib/python3.10/dist-packages/transformers/__init__.py)",
        "ImportError: cannot import name 'Random' from 'random' (/usr/lib/python3.11/random.py)",
        "ImportError: cannot import name 'X' from 'datasets'"
        " (/home/u/src/datasets/src/datasets/__init__.py)",
    ],
)
def test_own_modules_installed_packages_and_checkouts_are_not_shadowing(log):
    assert "MODULE_SHADOWED_BY_LOCAL_FILE" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        '  File "/home/u/proj/torch.py", line 3, in <module>\n    x = torch.ones(3)\n'
        "        ^^^^^^^^^^\nAttributeError: partially initialized module 'torch' has no"
        " attribute 'ones' (most likely due to a circular import)",
        '  File "/home/u/proj/random.py", line 4, in <module>\n    print(random.randint(1, 6))\n'
        "AttributeError: module 'random' has no attribute 'randint'",
        "AttributeError: module 'numpy' has no attribute 'array' (consider renaming"
        " '/home/me/numpy.py' if it has the same name as a library you intended to import)",
    ],
)
def test_a_shadowing_file_failing_in_its_own_frame_reads_as_shadowing_at_error(log):
    assert readings(log)[0] == ("MODULE_SHADOWED_BY_LOCAL_FILE", "error")


@pytest.mark.parametrize(
    "log",
    [
        '  File "/home/u/proj/train.py", line 3, in <module>\n    torch.compiler.reset()\n'
        "AttributeError: module 'torch' has no attribute 'compiler'",
        '  File "/home/u/proj/utils.py", line 2, in <module>\n    utils.helper()\n'
        "AttributeError: partially initialized module 'utils' has no attribute 'helper'"
        " (most likely due to a circular import)",
        '  File "/usr/lib/python3/dist-packages/torch.py", line 3, in <module>\n'
        "AttributeError: module 'torch' has no attribute 'ones'",
        "AttributeError: module 'a' has no attribute 'VALUE' (consider renaming '/home/u/a.py'"
        " if it has the same name as a library you intended to import)",
    ],
)
def test_a_missing_attribute_elsewhere_is_not_shadowing(log):
    assert "MODULE_SHADOWED_BY_LOCAL_FILE" not in codes(log)


def test_a_package_imported_as_a_bare_folder_reads_at_warning():
    log = "ImportError: cannot import name 'load_dataset' from 'datasets' (unknown location)"
    assert readings(log)[0] == ("MODULE_SHADOWED_BY_LOCAL_FILE", "warning")


def test_the_users_own_namespace_folder_is_not_a_shadowed_package():
    log = "ImportError: cannot import name 'tokenize' from 'utils' (unknown location)"
    assert "MODULE_SHADOWED_BY_LOCAL_FILE" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        '  File "/x/site-packages/accelerate/commands/launch.py", line 1365, in'
        " _validate_launch_command\n"
        '    args.num_cpu_threads_per_process = get_int_from_env(["OMP_NUM_THREADS"], 1)\n'
        "                                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/x/site-packages/accelerate/utils/environment.py", line 77, in get_int_from_env\n'
        "    val = int(os.environ.get(e, -1))\n"
        "ValueError: invalid literal for int() with base 10: ''",
        '  File "/home/u/train.py", line 5, in <module>\n'
        '    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))\n'
        "ValueError: invalid literal for int() with base 10: 'auto'",
        '  File "/home/u/train.py", line 6, in setup\n'
        '    n = int(os.environ.get("MKL_NUM_THREADS", "1"))\n'
        "ValueError: invalid literal for int() with base 10: '4,4'",
    ],
)
def test_a_thread_count_read_with_int_reads_as_thread_env_invalid_at_error(log):
    assert readings(log)[0] == ("THREAD_ENV_INVALID", "error")


@pytest.mark.parametrize(
    "log",
    [
        "*****************************************\n"
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to"
        " avoid your system being overloaded, please further tune the variable for optimal"
        " performance in your application as needed.\n"
        "*****************************************\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 9, in <module>\n'
        '    steps = int(row["steps"])\n'
        "ValueError: invalid literal for int() with base 10: 'abc'",
        '  File "/home/u/train.py", line 9, in <module>\n'
        '    steps = int(cfg["max_steps"])\n'
        "ValueError: invalid literal for int() with base 10: ''",
        "[env] OMP_NUM_THREADS=8 MKL_NUM_THREADS=8 TOKENIZERS_PARALLELISM=false\n"
        '  File "/home/u/train.py", line 9, in <module>\n'
        '    steps = int(row["steps"])\n'
        "ValueError: invalid literal for int() with base 10: 'abc'",
    ],
)
def test_other_int_parses_are_not_a_thread_variable(log):
    assert "THREAD_ENV_INVALID" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "libgomp: Invalid value for environment variable OMP_NUM_THREADS",
        "libgomp: Invalid value for environment variable OMP_NUM_THREADS: auto",
        "libgomp: Invalid value for environment variable OMP_PROC_BIND",
    ],
)
def test_libgomp_ignoring_a_value_is_a_note(log):
    assert readings(log)[0] == ("THREAD_ENV_INVALID", "info")


def test_libgomp_failing_to_start_threads_is_not_a_bad_value():
    log = "libgomp: Thread creation failed: Resource temporarily unavailable"
    assert "THREAD_ENV_INVALID" not in codes(log)
