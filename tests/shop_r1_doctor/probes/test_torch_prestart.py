"""The torch child started at the command's first line: adopted by the probe when it was
started as the probe would start it, killed when the cache answers or the launch differs,
and started only for command lines that probe torch."""

from __future__ import annotations

import signal

import pytest
from doctor_fakes import FAKEPKGS, dists, make_deps

from shop_r1_doctor.cli import main as cli_main
from shop_r1_doctor.probes import torch_probe

INSTALLED = dists(torch="2.11.0+cu130")


@pytest.fixture(autouse=True)
def _no_leftover():
    yield
    torch_probe.discard_prestarted()


def _deps(tmp_path, **environ):
    # the fake torch reaches the child through PYTHONPATH, as a user's environment would
    env = {"PATH": "", "PYTHONPATH": str(FAKEPKGS / "torch_cuda"), **environ}
    return make_deps(tmp_path, environ=env)


def _prestart(deps):
    torch_probe.prestart(deps.python, deps.environ)
    early = torch_probe._early
    assert early is not None
    return early[1]


def _probe(deps):
    return torch_probe.probe_torch(deps, INSTALLED(), "580.159.04", timeout=20)


def test_the_probe_adopts_a_child_started_as_it_would_start_it(tmp_path):
    deps = _deps(tmp_path)
    early = _prestart(deps)
    sections, child, _ = _probe(deps)
    assert child is not None and child.status == "ok"
    assert sections["torch"]["version"] == "2.11.0+cu130"
    assert early.returncode == 0  # it ran to its end: its answer is the one used
    assert torch_probe._early is None


def test_a_cache_hit_kills_the_early_child(tmp_path):
    deps = _deps(tmp_path)
    _probe(deps)  # fills the cache
    early = _prestart(deps)
    _, child, note = _probe(deps)
    assert child is None and note == "cached"
    assert early.returncode == -signal.SIGKILL
    assert torch_probe._early is None


def test_a_child_started_in_another_environment_is_not_adopted(tmp_path):
    early = _prestart(_deps(tmp_path, CUDA_VISIBLE_DEVICES="1"))
    sections, child, _ = _probe(_deps(tmp_path))
    assert child is not None and child.status == "ok"
    assert sections["torch"]["version"] == "2.11.0+cu130"
    assert early.returncode == -signal.SIGKILL


def test_fast_kills_the_early_child(tmp_path):
    deps = _deps(tmp_path)
    early = _prestart(deps)
    _, child, note = torch_probe.probe_torch(deps, INSTALLED(), None, timeout=20, fast=True)
    assert child is None and note.startswith("skipped")
    assert early.returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        (["doctor"], True),
        (["doctor", "--json", "--plan", "p.yaml"], True),
        (["report", "--log", "train.log"], True),
        (["doctor", "--fast"], False),
        (["doctor", "--from", "dump.txt"], False),
        (["doctor", "--from=dump.txt"], False),
        (["doctor", "--snapshot", "s.json"], False),
        (["report", "--snapshot", "s.json"], False),
        (["doctor", "--help"], False),
        (["profiles", "list"], False),
        (["run", "--", "python", "doctor"], False),
        ([], False),
    ],
)
def test_only_command_lines_that_probe_torch_start_it(monkeypatch, argv, starts):
    started: list[bool] = []
    monkeypatch.setattr(torch_probe, "prestart", lambda: started.append(True))
    cli_main.prestart_probes(argv)
    assert bool(started) is starts
