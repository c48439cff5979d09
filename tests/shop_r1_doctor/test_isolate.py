"""shop_r1_doctor.isolate: child probes that print then hang, abort or fail, as a table.

A child prints what it learned (one marker line per value) before the risky step; when
it then hangs or crashes, the last value printed must survive in the result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from shop_r1_doctor.isolate import (
    MARKER,
    ChildResult,
    _last_lines,
    _last_value,
    run_child,
    signal_name,
    subprocess_runner,
)


def emit(value) -> str:
    return f"print({MARKER!r} + {json.dumps(json.dumps(value))}, flush=True)"


PRINT_TWO = f"{emit({'step': 1})}; {emit({'step': 2, 'torch': '2.13.0'})}"
STDERR = "import sys; sys.stderr.write('a\\nb\\n\\nc\\nd\\n'); sys.stderr.flush()"

# (case, code, timeout, status, value, detail prefix)
ROWS = [
    ("ok", f"print('banner'); {emit([1, 2])}; print('after')", 30, "ok", [1, 2], ""),
    ("last value wins", PRINT_TWO, 30, "ok", {"step": 2, "torch": "2.13.0"}, ""),
    (
        "print then hang",
        f"{PRINT_TWO}; import time; time.sleep(60)",
        2.0,
        "timeout",
        {"step": 2, "torch": "2.13.0"},
        "no answer in 2 s",
    ),
    (
        "hang before printing",
        "import time; time.sleep(60)",
        1.5,
        "timeout",
        None,
        "no answer in 1.5 s",
    ),
    (
        "print then abort",
        f"{PRINT_TWO}; {STDERR}; import os; os.abort()",
        30,
        "crash",
        {"step": 2, "torch": "2.13.0"},
        "killed by SIGABRT: b | c | d",
    ),
    ("abort before printing", "import os; os.abort()", 30, "crash", None, "killed by SIGABRT"),
    # bytes that are not UTF-8 around the value: replaced, never a decoding error
    (
        "invalid utf-8",
        f"import sys; sys.stdout.buffer.write(b'\\xff\\xfe\\n'); sys.stdout.flush(); {emit(7)}",
        30,
        "ok",
        7,
        "",
    ),
    (
        "invalid utf-8 then hang",
        f"import sys, time; {emit(8)}; sys.stdout.buffer.write(b'\\xff\\n'); sys.stdout.flush(); time.sleep(60)",
        1.5,
        "timeout",
        8,
        "no answer in 1.5 s",
    ),
    (
        "print then exit nonzero",
        f"print('x'); {STDERR}; raise SystemExit(3)",
        30,
        "error",
        None,
        "exit 3: b | c | d",
    ),
    ("exit without output", "raise SystemExit(4)", 30, "error", None, "exit 4: "),
    (
        "stdout tail when stderr is empty",
        "print('p1'); print('p2'); raise SystemExit(2)",
        30,
        "error",
        None,
        "exit 2: p1 | p2",
    ),
    (
        "unreadable value",
        f"print({MARKER!r} + '{{nope')",
        30,
        "error",
        None,
        "unreadable child output: ",
    ),
]


@pytest.mark.parametrize(
    ("case", "code", "timeout", "status", "value", "detail"), ROWS, ids=[r[0] for r in ROWS]
)
def test_child_outcomes(case, code, timeout, status, value, detail):
    result = run_child(code, timeout)
    assert (result.status, result.value) == (status, value), result
    if detail.endswith(": "):
        assert result.detail.startswith(detail), result.detail
    else:
        assert result.detail == detail
    # how long it ran: positive, and never more than the timeout plus process start-up
    assert 0 < result.seconds < timeout + 60


def test_child_environment_and_extra_path(tmp_path):
    code = (
        "import os, json; "
        f"print({MARKER!r} + json.dumps([os.environ.get('PYTHONPATH'), "
        "os.environ.get('PYTHONIOENCODING'), os.environ.get('ONLY_HERE')]))"
    )
    env = {"PATH": os.environ.get("PATH", ""), "ONLY_HERE": "1", "PYTHONPATH": "/base"}
    got = run_child(code, 30, env=env, extra_path=["/a", "/b"])
    assert got.value == [os.pathsep.join(["/a", "/b", "/base"]), "utf-8", "1"]
    bare = run_child(code, 30, env={"PATH": os.environ.get("PATH", "")}, extra_path=["/a"])
    assert bare.value == ["/a", "utf-8", None]
    plain = run_child(code, 30, env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": "/p"})
    assert plain.value == ["/p", "utf-8", None]


def test_child_output_survives_non_ascii():
    got = run_child(emit({"gpu": "GeForce RTX 4090 – 显卡"}), 30)
    assert got.value == {"gpu": "GeForce RTX 4090 – 显卡"}


def test_missing_interpreter_is_an_error(tmp_path):
    got = run_child("print(1)", 5, python=str(tmp_path / "no-python"))
    assert got.status == "error" and got.detail.startswith("cannot start python: ")
    assert got.value is None and 0 <= got.seconds < 60
    assert got.probe_record()["status"] == "error"


# (return code, name)
SIGNALS = [
    (-6, "SIGABRT"),
    (-11, "SIGSEGV"),
    (-9, "SIGKILL"),
    (-200, "signal 200"),
    (0xC0000005, "ACCESS_VIOLATION"),
    (0xC0000409, "STACK_BUFFER_OVERRUN"),
    (0xC000001D, "ILLEGAL_INSTRUCTION"),
    (0xC0000374, "HEAP_CORRUPTION"),
    (0, None),
    (1, None),
    (134, None),
]


@pytest.mark.parametrize(("code", "name"), SIGNALS)
def test_signal_names(code, name):
    assert signal_name(code) == name


def test_last_value_and_last_lines():
    lines = f'x\n{MARKER}[1]\nnoise\n{MARKER}{{"a": 2}}\ntail\n'
    assert _last_value(lines) == {"a": 2}
    assert _last_value(lines.encode()) == {"a": 2}
    assert _last_value(b"\xff\n" + f"{MARKER}[3]".encode()) == [3]
    assert _last_value(None) is None and _last_value("") is None
    assert _last_value(f"{MARKER}[1]\n{MARKER}{{bad") is None  # the last one is unreadable
    assert _last_value(f" {MARKER}[1]") is None  # only at the start of a line
    assert _last_lines("a\n\nb\n  \nc\nd\n") == "b | c | d"
    assert _last_lines("a\nb\nc\nd", n=2) == "c | d"
    assert _last_lines("x" * 600) == "x" * 500
    assert _last_lines("") == ""


def test_probe_record():
    assert ChildResult("ok", 1.23456).probe_record() == {"status": "ok", "seconds": 1.235}
    assert ChildResult("crash", 0.5, detail="killed by SIGABRT").probe_record() == {
        "status": "crash",
        "seconds": 0.5,
        "detail": "killed by SIGABRT",
    }


def test_subprocess_runner(tmp_path):
    assert subprocess_runner(["no-such-program-shop-r1"], timeout=5) is None
    assert subprocess_runner([str(tmp_path / "missing")], timeout=5) is None
    code = "import os, sys; print(os.environ.get('X')); sys.stderr.write('err'); print(sys.stdin.read() == '')"
    bad = subprocess_runner(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'a\\xffb')"], timeout=30
    )
    assert bad.stdout == "a\ufffdb"
    got = subprocess_runner(
        [sys.executable, "-c", code + "; raise SystemExit(7)"],
        timeout=30,
        env={**os.environ, "X": "y"},
    )
    assert (got.returncode, got.stdout, got.stderr) == (7, "y\nTrue\n", "err")
    default_env = subprocess_runner([sys.executable, "-c", code], timeout=30)
    assert default_env.returncode == 0 and default_env.stdout.endswith("True\n")
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess_runner([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    # a name on PATH resolves through it
    assert subprocess_runner(["python3", "-c", "print(1)"], timeout=30).stdout == "1\n"
