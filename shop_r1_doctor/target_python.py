"""The interpreter a fix installs into: the one the doctor probed.

A bare `pip` installs into whatever environment is first on PATH, which is often not the
one that was diagnosed (a conda base, the system Python, another venv). Every fix the
doctor prints, a check's own or the one plan's (`fixplan`), names the probed interpreter
through `pip_command`; a pasted dump that names none gets `python3 -m pip`.
"""

from __future__ import annotations

import shlex

from shop_r1_doctor.facts import Facts
from shop_r1_doctor.redact import redact_home

FALLBACK = "python3"


def python_command(facts: Facts) -> str:
    """The snapshot's interpreter as a shell word, the home directory as `~`.

    `~` must stay outside the quotes for the shell to expand it: a path with a space under
    the home directory is `~/'my env/bin/python'`, never `'~/my env/bin/python'`.
    """
    python = facts.host.python
    exe = python.executable if python else None
    if not isinstance(exe, str) or not exe.strip():
        return FALLBACK
    exe = redact_home(exe.strip())
    if exe == "~":
        return FALLBACK  # a home directory is no interpreter
    if exe.startswith("~/"):
        return "~/" + shlex.quote(exe[2:])
    return shlex.quote(exe)


def pip_command(facts: Facts) -> str:
    """`<the snapshot's interpreter> -m pip`: the fix installs into the env that was probed."""
    return f"{python_command(facts)} -m pip"
