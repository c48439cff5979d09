"""Every fix names the diagnosed environment's interpreter, never a bare `pip`.

A bare `pip` installs into whatever environment is first on PATH. The recorded machines
(tests/fixtures/machines/*) alone fire few packaging checks, so each machine is also run
with every bad case of the checks corpus applied to it: each check that prints a pip
command is reached on a machine whose interpreter is known (and on one whose is not).
"""

from __future__ import annotations

import re

import pytest
from doctor_checks_cases import CASES, merge
from machines import MACHINES, machine_snapshot

from shop_r1_doctor.diagnose import diagnose
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.target_python import pip_command, python_command

# `pip install`, `pip3 uninstall` ... anywhere in a fix; allowed only right after `-m `
PIP_WORD = re.compile(r"(?<![\w./`-])(pip3?) (install|uninstall|download)\b")
NAMES = sorted(p.parent.name for p in MACHINES.glob("*/snapshot.json"))


def bare_pips(text: str) -> list[str]:
    return [
        text[max(0, m.start() - 20) : m.end() + 20]
        for m in PIP_WORD.finditer(text)
        if not text[: m.start()].endswith("-m ")
    ]


def test_the_rule_sees_a_bare_pip_wherever_it_is():
    assert bare_pips("pip install x") and bare_pips("MAX_JOBS=4 pip install x")
    assert bare_pips('sdpa, or pip install "y"') and bare_pips("a (pip3 uninstall -y z)")
    assert not bare_pips("python3 -m pip install x && '/opt/a b/python' -m pip uninstall -y z")
    assert not bare_pips("A plain `pip install` swaps torch")  # prose in backticks: a detail


@pytest.mark.parametrize("name", NAMES)
def test_no_fix_on_a_recorded_machine_starts_a_bare_pip(name):
    base = machine_snapshot(name)
    exe = base.get("host", {}).get("python", {}).get("executable")
    reached = 0
    for code, patch in [("", {}), *CASES]:
        snap = merge(base, patch)
        want = pip_command(Facts(snap))
        d = diagnose(snap)
        fixes = [(f.code, f.fix) for f in d.findings if f.fix]
        if d.fix_plan is not None:
            fixes += [("fix_plan", s.text) for s in d.fix_plan.steps]
        for fcode, fix in fixes:
            assert not bare_pips(fix), f"{name} + {code or 'as recorded'}: {fcode}: {fix}"
            if " -m pip " in fix:
                reached += 1
                assert want + " " in fix, f"{name} + {code}: {fcode} names another interpreter"
    assert reached >= 10  # the packaging checks were reached on this machine
    assert pip_command(Facts(base)) == (f"{exe} -m pip" if exe else "python3 -m pip")


@pytest.mark.parametrize(
    ("executable", "want"),
    [
        ("/opt/torch/.venv/bin/python3", "/opt/torch/.venv/bin/python3"),
        ("~/venvs/rl/bin/python", "~/venvs/rl/bin/python"),
        # the shell expands `~` only outside quotes
        ("~/my env/bin/python", "~/'my env/bin/python'"),
        ("/opt/my env/bin/python", "'/opt/my env/bin/python'"),
        ("", "python3"),
        ("~", "python3"),
        (None, "python3"),
    ],
)
def test_the_interpreter_word(executable, want):
    assert python_command(Facts({"host": {"python": {"executable": executable}}})) == want


def test_this_users_home_becomes_a_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    exe = str(tmp_path / "venv" / "bin" / "python")
    assert python_command(Facts({"host": {"python": {"executable": exe}}})) == ("~/venv/bin/python")
