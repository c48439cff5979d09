"""Every fact a check reads is written by a probe.

A check whose input no probe records can only fire on hand-written fixtures: it is a
stub. This audit reads the checks' source for the literal keys they look up and fails
on any key that no live source writes:
- `env_value(facts, "NAME")` / `env_set(...)`: the env probe must keep NAME;
- any other `.get("key")` / `["key"]`: the key appears quoted in a probe's source (the
  probes' child scripts included), or it is a knowledge field (YAML) or a key the
  checks build themselves.
The audit is static on purpose: a dynamic one only sees the branches a fixture reaches.
Plan fields are attributes of the typed RunPlan (`facts.plan.x`): mypy proves they exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import ROOT

from shop_r1_doctor.checks import inputs
from shop_r1_doctor.probes.env import relevant

DOCS = ROOT / "docs" / "check-inputs.md"


def orphans(
    kinds: tuple[str, ...] = ("fact", "env"), modules: list[Path] | None = None
) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in modules or inputs.check_modules():
        for name, r in inputs.check_reads(path).items():
            where = f"{path.stem}.{name}"
            if "fact" in kinds:
                found.setdefault(where, []).extend(
                    f"fact {k!r}" for k in sorted(r.facts) if not inputs.probe_writers(k)
                )
            if "env" in kinds:
                found.setdefault(where, []).extend(
                    f"env {n} (not kept by probes/env.py)" for n in sorted(r.env) if not relevant(n)
                )
    return {k: v for k, v in found.items() if v}


def test_every_fact_a_check_reads_is_written_by_a_probe() -> None:
    assert orphans() == {}


def test_the_audit_sees_an_orphaned_read(tmp_path: Path) -> None:
    # Plant: a check that reads a host fact no probe writes and an env var the env probe
    # drops. Each must be reported.
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def c(facts):\n"
        "    facts.host.get('gpu_direct_rdma_enabled')\n"
        "    env_value(facts, 'SOME_UNKEPT_VAR')\n"
    )
    assert orphans(modules=[planted]) == {
        "planted.c": [
            "fact 'gpu_direct_rdma_enabled'",
            "env SOME_UNKEPT_VAR (not kept by probes/env.py)",
        ]
    }


def test_helpers_reads_count_for_the_check_that_calls_them() -> None:
    reads = inputs.check_reads(inputs.CHECKS_DIR / "torch_build.py")["torch_arch_covers_gpus"]
    assert "arch_list" in reads.facts  # read in _base.torch_arch_list
    assert inputs.probe_writers("arch_list") == ["torch_probe"]


def test_check_inputs_doc_is_current() -> None:
    assert DOCS.read_text() == inputs.render_markdown(), (
        "python -m shop_r1_doctor.checks.inputs > docs/check-inputs.md"
    )


# The plan's output_dir and the host probe's disk table must be compared in one spelling:
# relative plan paths resolve against the probed cwd, `~` is the redacted home.
PATH_CASES = [
    # (plan output_dir, probed cwd, disk table key, fires)
    ("runs/sft", "~/proj", "~/proj/runs/sft", True),
    ("./runs/sft", "~/proj", "~/proj/runs/sft", True),
    ("runs/sft", "~/proj", "~/proj", True),  # the longest covering prefix
    ("~/ckpt", "/srv", "~/ckpt", True),
    ("/mnt/big/ckpt", "~/proj", "~/proj", False),  # another file system, not probed
    ("runs/sft", "/other", "~/proj", False),
]


@pytest.mark.parametrize(("out", "cwd", "key", "fires"), PATH_CASES)
def test_disk_check_reads_plan_paths_in_the_probes_spelling(out, cwd, key, fires):
    from shop_r1_doctor.checks import run_checks

    snapshot = {
        "host": {"paths": {"cwd": cwd}, "disk_free_bytes": {key: 2 * 2**30}},
        "plan": {"model_params": 1_500_000_000, "output_dir": out},
    }
    codes = [f.code for f in run_checks(snapshot)]
    assert ("DISK_FULL_AT_CHECKPOINT" in codes) is fires


def test_live_probe_and_check_agree_on_a_relative_output_dir(tmp_path):
    """The probe's own table (real disk) with a relative plan path: the check finds it."""
    from doctor_fakes import make_deps

    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.probes.host import probe_host

    home = str(tmp_path)
    deps = make_deps(tmp_path, cwd=tmp_path / "proj", home=home, output_dir="runs/sft")
    (tmp_path / "proj").mkdir()
    host = probe_host(deps)
    facts = Facts({"host": host, "plan": {"output_dir": "runs/sft"}})
    assert facts.probed_path("runs/sft") == "~/proj/runs/sft"
    assert "~/proj/runs/sft" in host["disk_free_bytes"]
