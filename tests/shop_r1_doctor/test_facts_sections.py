"""The typed sections (host, driver, env, imports, cuda_toolkit, probes, ray, docker):
decoded field by field, "not probed" distinct from "absent", and every input of a check
has a writer.

Three guarantees keep a check from being a stub that only hand-written fixtures can fire:
mypy proves a check reads only declared fields; the tests below prove each declared field
is written by a probe or dump parser, and each environment variable read by name is one
the env probe keeps.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import msgspec
import pytest
from repo_paths import ROOT

from shop_r1_doctor import facts as facts_module
from shop_r1_doctor import sections
from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.facts import NOT_PROBED, Facts
from shop_r1_doctor.probes.env import relevant
from shop_r1_doctor.render.facts_text import platform_facts
from shop_r1_doctor.sections import DriverFacts, HostFacts, PythonFacts
from shop_r1_doctor.setup.execute import SetupResult, StepResult, _read_doctor
from shop_r1_doctor.setup.install import Step
from shop_r1_doctor.snapshot import SNAPSHOT_SCHEMA
from shop_r1_doctor.target_python import pip_command


def snap(**sections_: object) -> dict[str, object]:
    return {"schema": SNAPSHOT_SCHEMA, **sections_}


def codes(snapshot: dict[str, object]) -> set[str]:
    return {f.code for f in run_checks(Facts(snapshot))}


@pytest.mark.parametrize(
    ("section", "listed", "driver"),
    [
        ("missing", NOT_PROBED, DriverFacts()),
        (None, None, DriverFacts()),
        ({"version": None}, DriverFacts(version=None), DriverFacts(version=None)),
        ({"version": "580.1"}, DriverFacts(version="580.1"), DriverFacts(version="580.1")),
        ("junk", NOT_PROBED, DriverFacts()),
    ],
)
def test_driver_section_states(section, listed, driver):
    facts = Facts(snap() if section == "missing" else snap(driver=section))
    assert facts.listed_driver == listed
    assert facts.driver == driver


def test_an_odd_driver_field_leaves_the_others_known():
    # nvidia-smi's CUDA as a number (a hand-edited dump): the version still decides
    facts = snap(
        host={"os": "linux"},
        driver={"version": "410.48", "cuda_version": 10.0},
        torch={"version": "1.3.0", "cuda": "10.1"},
        gpus=[{"index": 0, "name": "TITAN Xp", "compute_capability": "6.1"}],
    )
    assert Facts(facts).driver == DriverFacts(version="410.48")
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" in codes(facts)


def test_an_odd_python_field_keeps_the_interpreter():
    # one field of the nested record that does not decode leaves the rest known
    host = {"python": {"version": "3.12.3", "executable": "/opt/venv/bin/python", "venv": 5}}
    facts = Facts(snap(host=host))
    assert facts.host.python == PythonFacts(version="3.12.3", executable="/opt/venv/bin/python")
    assert pip_command(facts) == "/opt/venv/bin/python -m pip"


def test_lists_and_tables_keep_their_good_entries():
    host = {
        "disk_free_bytes": {"/tmp": 5, "/data": "full"},
        "infiniband": {"sys_devices": ["mlx5_0", 3]},
    }
    facts = Facts(snap(host=host))
    assert facts.host.disk_free_bytes == {"/tmp": 5}
    assert facts.host.infiniband and facts.host.infiniband.sys_devices == ("mlx5_0",)


def test_env_not_probed_is_not_empty():
    assert Facts(snap()).env is NOT_PROBED
    assert Facts(snap(env=None)).env == {}
    assert Facts(snap(env={"A": "1", "B": 2})).env == {"A": "1"}


@pytest.mark.parametrize(
    ("ok", "fires"),
    [(False, True), (True, False), (None, False), ("missing", False)],
    ids=["failed", "imports", "not checked (on demand)", "no record"],
)
def test_an_import_not_checked_is_no_failure(ok, fires):
    record = {"error": None, "checked": "not imported (the plan does not use it)"}
    if ok != "missing":
        record["ok"] = ok
    facts = snap(
        host={"os": "linux"},
        packages={"vllm": {"version": "0.11.0"}},
        imports={"vllm": record, "vllm._custom_ops": record},
        plan={"use_vllm": True},
    )
    assert Facts(facts).import_ok("vllm") is (ok if isinstance(ok, bool) else None)
    assert ("VLLM_IMPORT_FAILED" in codes(facts)) is fires


@pytest.mark.parametrize(
    ("host", "line"),
    [
        ({"os": "linux"}, None),
        ({"shm_bytes": None}, "/dev/shm: none"),
        ({"shm_bytes": 2**30}, "/dev/shm: 1.0 GiB"),
    ],
    ids=["not probed", "no /dev/shm", "1 GiB"],
)
def test_shm_line_says_only_what_was_probed(host, line):
    lines = [x for x in platform_facts(Facts(snap(host=host))) if x.startswith("/dev/shm")]
    assert lines == ([line] if line else [])


def test_setup_reads_the_interpreter_the_doctor_ran_in(tmp_path: Path):
    report = {
        "summary": {"errors": 0},
        "snapshot": snap(
            host={"python": {"executable": "/venv/bin/python3", "which_python": "/usr/bin/python"}},
            packages={"torch": {"version": "2.11.0+cu130"}},
        ),
    }
    result = SetupResult(steps=[StepResult("doctor", 0, 1.0)])
    step = Step("doctor", ("shop-r1", "doctor", "--json"), "check")
    _read_doctor(result, json.dumps(report), step, tmp_path / "setup.log")
    assert (result.doctor_python, result.doctor_torch) == ("/venv/bin/python3", "2.11.0+cu130")


def _written_keys() -> set[str]:
    """Every quoted key and keyword argument in the probes and dump parsers."""
    text = "".join(
        p.read_text(encoding="utf-8")
        for folder in ("probes", "ingest")
        for p in (ROOT / "shop_r1_doctor" / folder).glob("*.py")
    )
    return set(re.findall(r"[\"'](\w+)[\"']", text)) | set(re.findall(r"\b(\w+)=", text))


def _unwritten(structs: list[type[msgspec.Struct]]) -> list[str]:
    written = _written_keys()
    return [
        f"{s.__name__}.{f.name}"
        for s in structs
        for f in msgspec.structs.fields(s)
        if f.name not in written
    ]


def _records() -> list[type[msgspec.Struct]]:
    """Every typed record a check reads: the sections, torch's, the GPUs', the packages'."""
    return [
        v
        for module in (sections, facts_module)
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, msgspec.Struct) and v.__module__ == module.__name__
    ]


def test_every_section_field_has_a_writer():
    # A field no probe or parser writes is a check input that can only come from a
    # hand-written fixture: mypy proves the checks read declared fields, this that
    # each declared field is written.
    records = _records()
    assert {"HostFacts", "TorchFacts", "GpuFacts", "GpuProcess", "PackageFacts"} <= {
        r.__name__ for r in records
    }
    assert _unwritten(records) == []


def test_the_writer_audit_sees_an_unwritten_field():
    class Planted(HostFacts, frozen=True, kw_only=True):
        gpu_direct_rdma_enabled: bool | None = None

    assert _unwritten([Planted]) == ["Planted.gpu_direct_rdma_enabled"]


def _env_reads(source: str) -> set[str]:
    """Variables read by a literal name: `facts.env_value("X")`, `env_set(facts, "X")`."""
    return {
        arg.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("env_value", "env_set")
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }


def _unkept(sources: list[Path]) -> list[str]:
    return sorted(
        f"{p.stem}: {n}" for p in sources for n in _env_reads(p.read_text()) if not relevant(n)
    )


def test_every_env_var_read_by_name_is_kept_by_the_env_probe():
    # The env probe keeps an allowlist; a variable outside it is never in a snapshot, so
    # the branch that reads it can only fire on a fixture.
    sources = sorted((ROOT / "shop_r1_doctor").rglob("*.py"))
    read = {n for p in sources for n in _env_reads(p.read_text())}
    assert {"CUDA_VISIBLE_DEVICES", "NCCL_P2P_DISABLE", "no_proxy"} <= read  # the scan sees them
    assert _unkept(sources) == []


def test_the_env_audit_sees_an_unkept_variable(tmp_path: Path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def c(facts):\n"
        "    return facts.env_value('SOME_UNKEPT_VAR') or env_set(facts, 'NCCL_DEBUG')\n"
    )
    assert _unkept([planted]) == ["planted: SOME_UNKEPT_VAR"]


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
    snapshot = {
        "host": {"paths": {"cwd": cwd}, "disk_free_bytes": {key: 2 * 2**30}},
        "plan": {"model_params": 1_500_000_000, "output_dir": out},
    }
    assert ("DISK_FULL_AT_CHECKPOINT" in codes(snapshot)) is fires


def test_live_probe_and_check_agree_on_a_relative_output_dir(tmp_path):
    """The probe's own table (real disk) with a relative plan path: the check finds it."""
    from doctor_fakes import make_deps

    from shop_r1_doctor.probes.host import probe_host

    deps = make_deps(tmp_path, cwd=tmp_path / "proj", home=str(tmp_path), output_dir="runs/sft")
    (tmp_path / "proj").mkdir()
    host = probe_host(deps)
    facts = Facts({"host": host, "plan": {"output_dir": "runs/sft"}})
    assert facts.probed_path("runs/sft") == "~/proj/runs/sft"
    assert "~/proj/runs/sft" in host["disk_free_bytes"]
