"""Failures caused for real on a CPU Linux machine, and what each one printed.

One module per family (disk_full, shm, host_memory, ports, ray_cluster, optional_packages,
hub, trainer_config, tokenizer, compiler, numpy_abi, upper_layers, proxy, user_bugs); gpu_faults.py holds the GPU
cases that gpu_record.py causes on an NVIDIA machine. Each module declares its cases and, run
as `python -m tests.faults.<family> <case> [dir]`, causes the failure. `case.py` runs a
case the way a user meets it (a tmpfs of a few MB in a private mount namespace, a memory
cgroup, no network namespace, a PATH without a compiler) and captures stdout + stderr +
exit status; `record.py` writes them to tests/fixtures/faults/<family>/<case>.{log,json}.
"""
