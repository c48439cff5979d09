"""Every fact a check reads is written by a probe (or by the run plan).

A check whose input no probe records can only fire on hand-written fixtures: it is a
stub. This audit reads the checks' source for the literal keys they look up and fails
on any key that no live source writes:
- `env_value(facts, "NAME")` / `env_set(...)`: the env probe must keep NAME;
- `plan_*(facts, "field")`: a field of the plan contract;
- any other `.get("key")` / `["key"]`: the key appears quoted in a probe's source (the
  probes' child scripts included), or it is a knowledge field (YAML) or a key the
  checks build themselves.
The audit is static on purpose: a dynamic one only sees the branches a fixture reaches.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

import shop_r1_doctor
from shop_r1_doctor.plan import PLAN_FIELDS
from shop_r1_doctor.probes.env import relevant

PKG = Path(shop_r1_doctor.__file__).parent
CHECKS = sorted((PKG / "checks").glob("*.py"))
PROBES = sorted((PKG / "probes").glob("*.py"))
PLAN_READERS = {"plan_get", "plan_int", "plan_float", "plan_str", "plan_bool"}
ENV_READERS = {"env_value", "env_set"}
# Accessors of `Facts` and the check helpers whose first argument names a package or an
# import: those come from the packages/imports probes, which record every distribution.
NAME_READERS = {"package", "installed", "version", "requires", "import_ok", "import_error"}
NAME_READERS |= {"pkg", "pkg_known", "pkg_installed", "pkg_version", "pkg_requires"}


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def reads(path: Path) -> tuple[set[str], set[str], set[str], set[str]]:
    """(fact keys, env names, plan fields, keys the module builds itself) read in `path`."""
    keys: set[str] = set()
    env: set[str] = set()
    plan: set[str] = set()
    built: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Dict):
            built |= {k for k in map(_literal, node.keys) if k}  # type: ignore[arg-type]
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = [_literal(a) for a in node.args]
            if name in ENV_READERS:
                env |= {a for a in args if a}
            elif name in PLAN_READERS:
                plan |= {a for a in args if a}
            elif name == "get" and args and args[0]:
                keys.add(args[0])
            elif name in NAME_READERS:
                continue
        elif isinstance(node, ast.Subscript) and (key := _literal(node.slice)):
            if isinstance(node.ctx, ast.Store):
                built.add(key)
            else:
                keys.add(key)
    return keys, env, plan, built


def knowledge_keys() -> set[str]:
    out: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            out.update(str(k) for k in value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in sorted((PKG / "knowledge").glob("*.yaml")):
        walk(yaml.safe_load(path.read_text()))
    return out


def probe_text() -> str:
    return "\n".join(p.read_text() for p in PROBES)


def orphans(kinds: tuple[str, ...] = ("fact", "env", "plan")) -> dict[str, list[str]]:
    text = probe_text()
    known = knowledge_keys()
    found: dict[str, list[str]] = {}
    for path in CHECKS:
        keys, env, plan, built = reads(path)
        keys = keys if "fact" in kinds else set()
        env = env if "env" in kinds else set()
        plan = plan if "plan" in kinds else set()
        for key in sorted(keys - known - built):
            if not re.search(rf"[\"']{re.escape(key)}[\"']", text):
                found.setdefault(path.name, []).append(f"fact {key!r}")
        for name in sorted(env):
            if not relevant(name):
                found.setdefault(path.name, []).append(f"env {name} (not kept by probes/env.py)")
        for field in sorted(plan - set(PLAN_FIELDS)):
            found.setdefault(path.name, []).append(f"plan field {field!r} (not in PLAN_FIELDS)")
    return found


def test_every_fact_a_check_reads_is_written_by_a_probe() -> None:
    assert orphans(("fact", "env")) == {}


@pytest.mark.xfail(strict=True, reason="the RunPlan contract (issue 12) accepts these fields")
def test_every_plan_field_a_check_reads_is_accepted_by_the_plan() -> None:
    assert orphans(("plan",)) == {}


def test_the_audit_sees_an_orphaned_read(tmp_path: Path) -> None:
    # Plant: a check that reads a host fact no probe writes, an env var the env probe drops
    # and a plan field `--plan` rejects. Each must be reported.
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def c(facts):\n"
        "    facts.host.get('gpu_direct_rdma_enabled')\n"
        "    env_value(facts, 'SOME_UNKEPT_VAR')\n"
        "    plan_int(facts, 'no_such_plan_field')\n"
    )
    keys, env, plan, _ = reads(planted)
    assert "gpu_direct_rdma_enabled" in keys
    assert not re.search(r"[\"']gpu_direct_rdma_enabled[\"']", probe_text())
    assert env == {"SOME_UNKEPT_VAR"} and not relevant("SOME_UNKEPT_VAR")
    assert plan == {"no_such_plan_field"} and "no_such_plan_field" not in PLAN_FIELDS
    global CHECKS
    saved = CHECKS
    CHECKS = [*saved, planted]
    try:
        report = orphans()
    finally:
        CHECKS = saved
    assert report["planted.py"] == [
        "fact 'gpu_direct_rdma_enabled'",
        "env SOME_UNKEPT_VAR (not kept by probes/env.py)",
        "plan field 'no_such_plan_field' (not in PLAN_FIELDS)",
    ]


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
