"""The warm-up diagnosis (a background thread while the probes run) and the caller's run one
at a time: when the probes finished first (`doctor --fast`), both built msgspec decoders for
the same types at once and the interpreter died with SIGSEGV in about 1 run in 6."""

import threading
import time

from shop_r1_doctor import checks
from shop_r1_doctor.diagnose import diagnose, warm_up
from shop_r1_doctor.snapshot import SNAPSHOT_SCHEMA


def test_the_warm_up_and_the_callers_diagnosis_never_overlap(monkeypatch):
    active, most = [0], [0]
    lock = threading.Lock()

    def slow_checks(facts):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.2)  # long enough for the other thread to arrive
        with lock:
            active[0] -= 1
        return []

    monkeypatch.setattr(checks, "run_checks", slow_checks)
    thread = warm_up()
    diagnosis = diagnose({"schema": SNAPSHOT_SCHEMA, "gpus": []})
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert most[0] == 1
    assert diagnosis.findings is not None
