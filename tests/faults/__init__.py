"""Failures caused for real on a CPU Linux machine, and what each one printed.

One module per family (`suite.FAMILIES` lists them); gpu_cases.py holds the GPU cases and
gpu_faults.py their drivers, which gpu_record.py runs on an NVIDIA machine. Each CPU family's
module declares its cases and, run
as `python -m tests.faults.<family> <case> [dir]`, causes the failure. `case.py` runs a
case the way a user meets it (a tmpfs of a few MB in a private mount namespace, a memory
cgroup, no network namespace, a PATH without a compiler) and captures stdout + stderr +
exit status; `record.py` writes them to tests/fixtures/faults/<family>/<case>.{log,json}.
"""
