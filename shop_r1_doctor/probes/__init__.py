"""Probes: one module per subject, each turning the machine into snapshot facts.

Probes do I/O and nothing else; they take their outside world (command runner, NVML,
installed distributions, environment, file-system root) from `deps.ProbeDeps`, so tests
replay recorded outputs. `collect.collect_snapshot` runs them concurrently.
"""
