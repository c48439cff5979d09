"""Readings of four failures met in evaluation, reward and demo code: a signal-based timeout
set outside the main thread, a dataset's loading script refused without trust_remote_code,
a compiled module calling a C function its native library lacks, and a text data file
that ends inside a UTF-8 character. Near misses that must not read so. Codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

from shop_r1_doctor.knowledge import load_codes

SIGNAL = "SIGNAL_TIMEOUT_OFF_MAIN_THREAD"
TRUST = "TRUST_REMOTE_CODE_REQUIRED"
NATIVE = "EXT_NATIVE_LIB_UNDEFINED_SYMBOL"
TRUNCATED = "DATASET_FILE_TRUNCATED"
REFUSED = "ValueError: signal only works in main thread of the main interpreter\n"


def test_the_new_codes_are_catalogued_at_their_severity():
    catalog = load_codes()
    assert catalog[SIGNAL].severity == "error"
    assert catalog[NATIVE].severity == "warning"
    assert catalog[TRUNCATED].severity == "warning"


# --- a signal-based timeout off the main thread -------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # CPython 3.11, SIGALRM set in a threading.Thread (caused for real)
        "Exception in thread Thread-1 (grade):\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/threading.py", line 982, in run\n'
        "    self._target(*self._args, **self._kwargs)\n"
        '  File "/tmp/lk/thr.py", line 4, in grade\n'
        "    signal.signal(signal.SIGALRM, _on_timeout)\n"
        '  File "/usr/lib/python3.11/signal.py", line 56, in signal\n'
        "    handler = _signal.signal(_enum_to_int(signalnum), _enum_to_int(handler))\n"
        "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" + REFUSED,
        # math-verify's decorator under a Ray task, the prefixes as Ray prints them
        "(TaskRunner pid=88) Traceback (most recent call last):\n"
        '(TaskRunner pid=88)   File "/env/site-packages/math_verify/parser.py", line 499, in parse\n'
        "(TaskRunner pid=88)     return timeout(timeout_seconds=parsing_timeout)(fn)(pred)\n"
        '(TaskRunner pid=88)   File "/usr/lib/python3.10/signal.py", line 56, in signal\n'
        "(TaskRunner pid=88) " + REFUSED,
        # timeout-decorator's default (use_signals=True) in a thread pool's worker
        '  File "/env/site-packages/timeout_decorator/timeout_decorator.py", line 82, in new_f\n'
        "    old = signal.signal(signal.SIGALRM, handler)\n" + REFUSED,
        # math-verify 0.8's own re-raise names the cause
        "ValueError: Math-Verify doesn't support threaded environment due to usage of"
        " signal.alarm() in timeout mechanism. If you need to run in multithreaded environment"
        " it's recommended to set the parsing_timeout=None\n",
        # Python 3.7's shorter wording
        "    signal.signal(signal.SIGALRM, handler)\nValueError: signal only works in main thread\n",
    ],
)
def test_a_signal_timeout_set_in_a_worker_thread_reads_at_error(log):
    assert lead(log) == (SIGNAL, "error")


def test_the_refusal_alone_is_a_warning():
    assert readings(REFUSED) == [(SIGNAL, "warning")]


def test_a_programs_own_handler_in_a_thread_is_only_a_warning():
    log = (
        '  File "/app/server.py", line 40, in start\n'
        "    signal.signal(signal.SIGTERM, self._shutdown)\n" + REFUSED
    )
    assert readings(log) == [(SIGNAL, "warning")]


def test_datasets_prompt_timer_off_the_main_thread_reads_as_trust_remote_code():
    # datasets 3.6 times its prompt with SIGALRM; off the main thread it swallows the
    # refusal and asks for trust_remote_code instead: that is the cause to name
    log = (
        '  File "/env/site-packages/datasets/load.py", line 121, in resolve_trust_remote_code\n'
        "    signal.signal(signal.SIGALRM, _raise_timeout_error)\n"
        + REFUSED
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        "ValueError: The repository for hellaswag contains custom code which must be executed"
        " to correctly load the dataset. You can inspect the repository content at"
        " https://hf.co/datasets/hellaswag.\n"
        "Please pass the argument `trust_remote_code=True` to allow custom code to be run.\n"
    )
    assert codes(log) == [TRUST]


def test_other_main_thread_refusals_are_not_this():
    log = "ValueError: set_wakeup_fd only works in main thread of the main interpreter\n"
    assert SIGNAL not in codes(log)


# --- datasets' own trust_remote_code refusal (2.x-3.x) -------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # 2.20.0 load.py:102, as lm-eval's simple_evaluate met it
        '  File "python3.8/site-packages/datasets/load.py", line 102, in _raise_timeout_error\n'
        "    raise ValueError(\n"
        "ValueError: Loading this dataset requires you to execute custom code contained in the"
        " dataset repository on your local machine. Please set the option `trust_remote_code=True`"
        " to permit loading of this dataset.\n",
        # 3.6.0 load.py:761 / :1277 with trust_remote_code=False
        "ValueError: Loading juletxara/mgsm requires you to execute the dataset script in that repo"
        " on your local machine. Make sure you have read the code there to avoid malicious use,"
        " then set the option `trust_remote_code=True` to remove this error.\n",
    ],
)
def test_a_dataset_script_without_trust_remote_code_reads_at_error(log):
    assert lead(log) == (TRUST, "error")


def test_datasets_4_no_longer_running_scripts_is_not_a_trust_question():
    log = (
        "`trust_remote_code` is not supported anymore.\nPlease check that the Hugging Face"
        " dataset 'juletxara/mgsm' isn't based on a loading script and remove"
        " `trust_remote_code`.\n"
        "RuntimeError: Dataset scripts are no longer supported, but found mgsm.py\n"
    )
    assert codes(log) == ["DATASET_SCRIPT_UNSUPPORTED"]


# --- a compiled module calling a C function its native library lacks -----------------


@pytest.mark.parametrize(
    "log",
    [
        'Traceback (most recent call last):\n  File "pipeline.py", line 10, in <module>\n'
        "    import chat\n"
        "ImportError: /data/demo/chat.cpython-38-aarch64-linux-gnu.so: undefined symbol:"
        " bmrt_get_network_index\n",
        # (a CUDA library missing its sibling's versioned symbol, libcusparse against
        # libnvJitLink, names both and reads at error: test_logscan_conda_uv_windows.py)
        "OSError: /venv/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda121.so:"
        " undefined symbol: cublasLtMatmulAlgoGetHeuristic\n",
    ],
)
def test_a_plain_c_symbol_missing_at_import_is_a_warning(log):
    assert lead(log) == (NATIVE, "warning")


@pytest.mark.parametrize(
    ("log", "instead"),
    [
        (
            "ImportError: /venv/lib/python3.10/site-packages/selective_scan_cuda.cpython-310-"
            "x86_64-linux-gnu.so: undefined symbol: _ZN3c1021throwNullDataPtrErrorEv\n",
            "EXT_TORCH_ABI_UNDEFINED_SYMBOL",
        ),
        (
            "ImportError: /venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so:"
            " undefined symbol: ncclMemFree\n",
            "NCCL_LIB_SYMBOL_MISMATCH",
        ),
        (
            "ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-"
            "x86_64-linux-gnu.so: undefined symbol: cudaGetDriverEntryPointByVersion\n",
            "FA_TORCH_ABI_UNDEFINED_SYMBOL",
        ),
    ],
)
def test_symbols_other_readings_own_are_not_this(log, instead):
    assert NATIVE not in codes(log)
    assert instead in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        # a module built for another Python (CPython's own API)
        "ImportError: /venv/lib/python3.12/site-packages/_ext.cpython-312-x86_64-linux-gnu.so:"
        " undefined symbol: _PyThreadState_UncheckedGet\n",
        "ImportError: /venv/lib/python3.9/site-packages/_ext.so: undefined symbol: PyFrame_GetCode\n",
        # ctypes' lookup of a name the program spelled wrong (tests/fixtures/faults)
        "AttributeError: /tmp/shop-r1-fault-cache/isa-py311/libbaseline.so: undefined symbol:"
        " tile_sums\n",
    ],
)
def test_python_api_symbols_and_ctypes_lookups_are_not_this(log):
    assert NATIVE not in codes(log)


# --- a text data file that ends inside a UTF-8 character -----------------------------


@pytest.mark.parametrize(
    "log",
    [
        # CPython 3.11 iterating a UTF-8 jsonl cut one byte short (caused for real)
        'Traceback (most recent call last):\n  File "/tmp/lk/rd.py", line 3, in <module>\n'
        "    for line in f:\n"
        '  File "<frozen codecs>", line 322, in decode\n'
        "UnicodeDecodeError: 'utf-8' codec can't decode bytes in position 0-1: unexpected end"
        " of data\n",
        # before 3.11: codecs.py with its source line
        '  File "/usr/lib/python3.8/codecs.py", line 322, in decode\n'
        "    (result, consumed) = self._buffer_decode(data, self.errors, final)\n"
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe5 in position 4095: unexpected"
        " end of data\n",
    ],
)
def test_a_file_ending_mid_character_reads_as_truncated(log):
    assert lead(log) == (TRUNCATED, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a GBK file read as UTF-8: another encoding, not a cut
        '  File "<frozen codecs>", line 322, in decode\n'
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xd6 in position 10: invalid"
        " continuation byte\n",
        # a program decoding its own byte slice: no text stream, its own bug
        '  File "stream.py", line 3, in <module>\n    print(buf[:4].decode("utf-8"))\n'
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe6 in position 3: unexpected"
        " end of data\n",
        # a JSON parser's own `unexpected end of data` (an empty line in a jsonl)
        "orjson.JSONDecodeError: unexpected end of data: line 2 column 1 (char 2)\n",
    ],
)
def test_other_decoding_failures_are_not_a_truncated_file(log):
    assert TRUNCATED not in codes(log)
