"""Children of the spawn start method that cannot import the parent's main module: a class
defined in an interactive __main__ (a notebook kernel), a script that starts workers at
import time. Codes and severities only (wording: codes.yaml); the recordings these readings
were checked on are tests/fixtures/faults/spawn_main/."""

from __future__ import annotations

from pathlib import Path

import pytest
from logscan_readings import codes, lead

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "faults" / "spawn_main"
CODE = "SPAWN_CHILD_CANNOT_IMPORT_MAIN"


@pytest.mark.parametrize(
    "log",
    [
        "AttributeError: Can't get attribute 'CustomDataset' on <module '__main__' (built-in)>",
        # the batch sampler's or collate's function, quoted with a dotted name
        "AttributeError: Can't get attribute 'collate.fn' on <module '__main__' (built-in)>",
    ],
)
def test_a_class_of_an_interactive_main_is_not_found_by_a_spawned_worker(log):
    assert lead(log) == (CODE, "error")


def test_a_script_that_starts_workers_at_import_time_is_refused_by_spawn():
    log = (
        "RuntimeError: \n"
        "        An attempt has been made to start a new process before the\n"
        "        current process has finished its bootstrapping phase.\n"
    )
    assert lead(log) == (CODE, "error")


@pytest.mark.parametrize(
    "log",
    [
        # a script's own __main__ can be imported: a missing name there is another failure
        "AttributeError: Can't get attribute 'Net' on <module '__main__' from '/home/u/train.py'>",
        # unpickling a checkpoint whose class lives in another project's module
        "AttributeError: Can't get attribute 'Model' on <module 'models.yolo' from '/y/models/yolo.py'>",
        "RuntimeError: DataLoader worker (pid 5481) exited unexpectedly with exit code 1.",
    ],
)
def test_other_lookups_and_bare_worker_exits_are_not_this(log):
    assert CODE not in codes(log)


@pytest.mark.parametrize("name", ["notebook_class_spawn_worker", "script_without_main_guard"])
def test_the_recordings_lead_with_it(name):
    assert lead((RECORDED / f"{name}.log").read_text(encoding="utf-8"))[0] == CODE


def test_the_users_own_bug_in_a_spawned_worker_is_not_this():
    log = (RECORDED / "user_keyerror_in_spawned_worker.log").read_text(encoding="utf-8")
    assert CODE not in codes(log)
