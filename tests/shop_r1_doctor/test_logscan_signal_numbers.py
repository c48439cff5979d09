"""A process's death by signal as launchers, shells and container runtimes report it by
number (text-generation-inference's `signal 7`, Python's `exit status -4` and
`<Signals.SIGKILL: 9>`, 128 + the signal from a shell or Docker) reads as that signal's
hint; Kubernetes' and Docker's recorded OOMKilled is the memory limit itself. Codes and
severities (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

FORMS = {
    "tgi": "Shard process was signaled to shutdown with signal {n} rank=0",
    "subprocess-negative": "subprocess.CalledProcessError: Command '['python', 'train.py']'"
    " returned non-zero exit status -{n}.",
    "subprocess-enum": "subprocess.CalledProcessError: Command '['python', 'train.py']' died"
    " with <Signals.SIG{name}: {n}>.",
    "shell-128": "subprocess.CalledProcessError: Command 'bash run.sh' returned non-zero exit"
    " status {n128}.",
    "docker-128": "trainer-1 exited with code {n128}",
}
SIGNALS = {
    "SIGBUS": (7, "BUS", "DATALOADER_SHM_BUS_ERROR"),
    "SIGILL": (4, "ILL", "CPU_INSTRUCTION_UNSUPPORTED"),
    "SIGKILL": (9, "KILL", "HOST_OOM_KILLED"),
}


@pytest.mark.parametrize("form", FORMS, ids=FORMS)
@pytest.mark.parametrize("signal", SIGNALS.values(), ids=SIGNALS.keys())
def test_every_numeric_form_reads_as_its_signals_hint(form, signal):
    n, name, code = signal
    line = FORMS[form].format(n=n, name=name, n128=128 + n)
    if form == "tgi" and n in (4, 7):
        # text-generation-inference runs in a container: its SIGBUS and SIGILL have
        # readings of their own (a container's /dev/shm, a VM's CPU flags), as warnings
        assert lead(line)[0] in (code, "CONTAINER_SHM_TOO_SMALL")
        return
    assert lead(line) == (code, "info")


@pytest.mark.parametrize(
    "line",
    [
        "Shard process was signaled to shutdown with signal 15 rank=0",  # SIGTERM: told to stop
        "subprocess.CalledProcessError: Command 'make' returned non-zero exit status 2.",
        "trainer-1 exited with code 1",
        "Sending process 1234 closing signal SIGTERM",
    ],
)
def test_other_signals_and_exit_statuses_are_not_read_as_these(line):
    assert not {"DATALOADER_SHM_BUS_ERROR", "CPU_INSTRUCTION_UNSUPPORTED", "HOST_OOM_KILLED"} & set(
        codes(line)
    )


def test_the_kill_by_number_is_no_host_oom_under_wsl():
    # WSL's own memory cap kills in its own way; WSL readings elsewhere say so
    assert "HOST_OOM_KILLED" not in codes("WSL2 Ubuntu 22.04\ntrainer exited with code 137")


@pytest.mark.parametrize(
    "log",
    [
        "    State:          Running\n    Last State:     Terminated\n      Reason:       OOMKilled\n"
        "      Exit Code:    137",
        '        "OOMKilled": true,',
    ],
    ids=["kubectl-describe", "docker-inspect"],
)
def test_the_runtimes_recorded_oom_kill_is_the_memory_limit_at_error_level(log):
    assert lead(log) == ("HOST_OOM_KILLED", "error")


@pytest.mark.parametrize(
    "sigbus",
    ["trainer-1 exited with code 135", "bash: line 1:  9533 Bus error   python train.py"],
)
def test_sigbus_in_a_container_is_its_shm_as_a_warning(sigbus):
    container = "$ docker run --shm-size 1m -v /data:/data trainer python train.py\n"
    assert lead(container + sigbus) == ("CONTAINER_SHM_TOO_SMALL", "warning")
    # the same death with no container in the log: the /dev/shm-or-mapped-file hint only
    assert "CONTAINER_SHM_TOO_SMALL" not in codes("$ python train.py\n" + sigbus)


@pytest.mark.parametrize(
    "log",
    [
        # DeepSpeed's launcher: a rank's return code, negative for the signal that ended it
        "[ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', 'train.py'] exits"
        " with return code = -9",
        "worker exited, returncode=-9",
    ],
)
def test_a_return_code_of_minus_9_is_a_kill_hint(log):
    assert ("HOST_OOM_KILLED", "info") in readings(log)


@pytest.mark.parametrize(
    "log",
    [
        "[ERROR] [launch.py:325:sigkill_handler] ['python', 'train.py'] exits with return code = 1",
        "exits with return code = -90",
        "process returncode=-15",
    ],
)
def test_other_return_codes_are_no_kill_hint(log):
    assert "HOST_OOM_KILLED" not in {code for code, _ in readings(log)}


@pytest.mark.parametrize("line", ["**Killed**", "*Killed*", "`Killed`", "__Killed__"])
def test_killed_in_markdown_emphasis_reads_as_a_plain_killed(line):
    assert ("HOST_OOM_KILLED", "info") in readings(f"train poses bds tensor([...])\n{line}\n")
