"""Generated scripts decide on the target what only the target knows, run for real there:
the interpreter (PYTHON, else the active virtualenv / conda env, else python3 on PATH),
the GPU count (nvidia-smi -L or CUDA_VISIBLE_DEVICES), GeForce NCCL settings and free
ports; and each node of a multi-node run is judged by what it did (its own exit status and
its own summary), with one writer per file in a run directory the nodes share.

The interpreter and `nvidia-smi` are stand-ins on PATH. The `nvidia-smi -L` lines are the
driver's format ("GPU <i>: <name> (UUID: <uuid>)") filled with the names and UUIDs NVML
recorded on the 2x H200 machine (tests/fixtures/machines/h200x2/nvml.json).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from machines import MACHINES
from typer.testing import CliRunner

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch
from shop_r1_doctor.profiles.model import get_profile

FAKE = r"""#!/usr/bin/env bash
# Stands in for the target's interpreter: a preflight that passes, a trainer that reports
# what it was given and writes this node's summary as `shop-r1 train` does.
case "$*" in
  *"--dry-run"*) echo "preflight ok interp=$0"; exit 0 ;;
  *"accelerate.commands.launch"*|*"shop_r1.cli train"*)
    echo "interp=$0 CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES P2P=${NCCL_P2P_DISABLE:-on}"
    echo "args: $*"
    [[ -n "${FAKE_NO_SUMMARY:-}" ]] || echo "{\"steps\": ${FAKE_STEPS:-4}}" > "$SHOP_R1_NODE_SUMMARY"
    exit "${FAKE_TRAIN_RC:-0}" ;;
  *) exec REAL "$@" ;;
esac
"""


def _nvidia_smi_l(gpus: int = 2) -> str:
    devices = json.loads((MACHINES / "h200x2" / "nvml.json").read_text())["devices"]
    lines = [f"GPU {d['index']}: {d['name']} (UUID: {d['uuid']})" for d in devices[:gpus]]
    return "\n".join(lines) + ("\n" if lines else "")


def _bin(tmp_path: Path, gpus: int | None = 2, geforce: bool = False) -> Path:
    """A bin/ with the fake interpreter (as python and python3) and nvidia-smi."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        (bin_dir / name).write_text(FAKE.replace("REAL", sys.executable))
        (bin_dir / name).chmod(0o755)
    if gpus is not None:
        listing = _nvidia_smi_l(gpus)
        if geforce:
            listing = listing.replace("NVIDIA H200", "NVIDIA GeForce RTX 5090")
        smi = (
            f"#!/usr/bin/env bash\ncat <<'EOF'\n{listing}EOF\n"
            if listing
            else "#!/usr/bin/env bash\necho 'No devices were found'\nexit 6\n"
        )
        (bin_dir / "nvidia-smi").write_text(smi)
        (bin_dir / "nvidia-smi").chmod(0o755)
    return bin_dir


def _write(tmp_path: Path, **kw) -> Path:
    kw.setdefault("task", "sft")
    kw.setdefault("profile", get_profile("hopper"))
    kw.setdefault("python", "/login/venv/bin/python")  # the generating machine's
    kw.setdefault("gpus", None)
    kw.setdefault("vllm_available", None)
    kw.setdefault("data", "d.jsonl")
    plan = plan_launch(LaunchRequest(**kw))
    for name, text in render_launch(plan, "run.sh").files.items():
        (tmp_path / name).write_text(text)
    return tmp_path / "run.sh"


def _env(tmp_path: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHON", "VIRTUAL_ENV", "CONDA_PREFIX", "CUDA_VISIBLE_DEVICES")
    }
    # only the stand-ins and the basic tools: no real nvidia-smi, no real python3 first
    tools = sorted({str(Path(shutil.which(t) or "/usr/bin/env").parent) for t in ("bash", "sed")})
    env["PATH"] = ":".join([str(bin_dir), *tools])
    env.update(RUN_DIR=str(tmp_path / "rundir"), OUTPUT_DIR=str(tmp_path / "out"), **extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=env, timeout=120
    )


def test_gpu_count_and_interpreter_are_the_targets(tmp_path):
    """Generated on a login node (its venv, no GPU); run where a venv is active and
    nvidia-smi lists 2 GPUs: 2 processes through accelerate, on the venv's python."""
    script = _write(tmp_path)
    text = script.read_text()
    assert "/login/venv/bin/python" in text.splitlines()[1]  # named in the header only
    assert text.count("/login/venv/bin/python") == 1
    venv = tmp_path / "target-venv"
    _bin(venv, gpus=None)  # its bin/python is the stand-in
    proc = _run(script, _env(tmp_path, _bin(tmp_path / "node"), VIRTUAL_ENV=str(venv)))
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "rundir" / "sft.log").read_text()
    assert f"interp={venv}/bin/python" in log
    assert "CUDA_VISIBLE_DEVICES=0,1" in log
    assert "accelerate.commands.launch" in log and "--num_processes 2 --num_machines 1" in log
    assert "--set num_processes=2" in log
    assert "GPUs per node: 2 (0,1): 2 process(es) on 1 node(s)" in proc.stderr
    assert "training done" in proc.stderr and "(4 optimizer steps)" in proc.stderr


def test_a_scheduler_allocation_and_python3_on_path(tmp_path):
    """CUDA_VISIBLE_DEVICES (a scheduler's allocation) wins over nvidia-smi; one GPU trains
    in-process; no active environment: python3 on PATH."""
    script = _write(tmp_path)
    bin_dir = _bin(tmp_path)
    proc = _run(script, _env(tmp_path, bin_dir, CUDA_VISIBLE_DEVICES="3"))
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "rundir" / "sft.log").read_text()
    assert f"interp={bin_dir}/python3" in log and "CUDA_VISIBLE_DEVICES=3" in log
    assert "accelerate" not in log and "--set num_processes=1" in log


def test_no_gpu_on_the_target_fails_in_one_line(tmp_path):
    script = _write(tmp_path)
    proc = _run(script, _env(tmp_path, _bin(tmp_path, gpus=0)))
    assert proc.returncode == 1
    assert "no GPU on" in proc.stderr and "nvidia-smi -L lists none" in proc.stderr
    assert not (tmp_path / "rundir" / "sft.log").exists()


def test_python_override_and_an_interpreter_without_shop_r1(tmp_path):
    """PYTHON wins over the active environment; one that lacks shop-r1 (the real
    interpreter without its site-packages) stops the script before anything runs."""
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/usr/bin/env bash\nexec {sys.executable} -I -S "$@"\n')
    bare.chmod(0o755)
    script = _write(tmp_path)
    venv = tmp_path / "venv"
    _bin(venv, gpus=None)
    proc = _run(script, _env(tmp_path, _bin(tmp_path), PYTHON=str(bare), VIRTUAL_ENV=str(venv)))
    assert proc.returncode == 1
    assert f"error: {bare} cannot import shop_r1" in proc.stderr
    assert not (tmp_path / "rundir").exists()


def test_geforce_on_the_target_turns_nccl_p2p_off(tmp_path):
    script = _write(tmp_path, profile=get_profile("blackwell-rtx"))
    proc = _run(script, _env(tmp_path, _bin(tmp_path, geforce=True)))
    assert proc.returncode == 0, proc.stderr
    assert "P2P=1" in (tmp_path / "rundir" / "sft.log").read_text()
    proc = _run(script, _env(tmp_path / "b", _bin(tmp_path / "b")))  # RTX PRO: P2P stays on
    assert "P2P=on" in (tmp_path / "b" / "rundir" / "sft.log").read_text()


def _two_nodes(
    tmp_path: Path, task: str, **fake: str
) -> tuple[dict[int, subprocess.CompletedProcess], Path]:
    """Both nodes at once, on one run directory (a shared file system)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = _write(tmp_path, task=task, nodes=2, vllm_available=True, target="snapshot n.json")
    bin_dir = _bin(tmp_path)
    procs = {}
    port = str(_free_port())
    for rank in (0, 1):
        env = _env(
            tmp_path,
            bin_dir,
            MACHINE_RANK=str(rank),
            MAIN_PROCESS_IP="127.0.0.1",
            MAIN_PORT=port,
            RDZV_TIMEOUT="30",
        )
        env.update(fake.get(str(rank), {}))  # type: ignore[arg-type]
        procs[rank] = subprocess.Popen(
            ["bash", str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    done = {}
    for rank, p in procs.items():
        out, err = p.communicate(timeout=120)
        done[rank] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return done, tmp_path / "rundir"


@pytest.mark.parametrize("task", ["sft", "grpo"])
def test_each_node_is_judged_by_what_it_did(tmp_path, task):
    """A 4-step run ends in seconds: the worker passes on its own summary, not a clock;
    each node writes only its own files in the shared run directory."""
    done, run_dir = _two_nodes(tmp_path, task)
    assert {r: p.returncode for r, p in done.items()} == {0: 0, 1: 0}, done[1].stderr
    names = {p.name for p in run_dir.iterdir()}
    for rank in (0, 1):
        assert {
            f"{task}.node{rank}.log",
            f"preflight.node{rank}.log",
            f"launch.node{rank}.log",
            f"node-summary.node{rank}.json",
        } <= names
        assert f"--machine_rank {rank}" in (run_dir / f"{task}.node{rank}.log").read_text()
    assert not {"launch.log", f"{task}.log", "preflight.log", "node-summary.json"} & names
    assert "--num_processes 4 --num_machines 2" in (run_dir / f"{task}.node1.log").read_text()


def test_a_worker_that_wrote_no_summary_or_failed_fails_alone(tmp_path):
    done, _ = _two_nodes(tmp_path / "a", "grpo", **{"1": {"FAKE_NO_SUMMARY": "1"}})
    assert done[0].returncode == 0 and done[1].returncode == 1
    assert "node-summary.node1.json: it did not reach the end" in done[1].stderr
    done, _ = _two_nodes(tmp_path / "b", "grpo", **{"1": {"FAKE_TRAIN_RC": "7"}})
    assert done[0].returncode == 0 and done[1].returncode == 1
    assert "training exited with status 7" in done[1].stderr
    done, _ = _two_nodes(tmp_path / "c", "grpo", **{"1": {"FAKE_STEPS": "0"}})
    assert done[1].returncode == 1 and "ran 0 optimizer steps" in done[1].stderr


def test_launch_on_a_login_node_leaves_the_target_to_decide(tmp_path):
    """This machine has no GPU and no vLLM: `--profile hopper --nodes 2` must neither plan
    one process per node nor turn vLLM off for the GPU nodes."""
    from shop_r1.cli import app

    out = tmp_path / "run.sh"
    argv = ["launch", "grpo", "--profile", "H100", "--nodes", "2", "--data", "d", "-o", str(out)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((tmp_path / "run.config.yaml").read_text())
    assert config["use_vllm"] == "auto" and "num_processes" not in config
    assert "num_processes" not in yaml.safe_load((tmp_path / "run.accelerate.yaml").read_text())
    text = out.read_text()
    assert "--profile H100 -> H100, sm_90: profile hopper" in text
    assert "GPUs per node: TRAIN_GPUS, else CUDA_VISIBLE_DEVICES, else nvidia-smi -L" in text
    assert "1 process(es) x 2 node(s)" not in result.output
    # --auto on a machine without GPUs is the cpu profile: several nodes are refused
    result = CliRunner().invoke(app, ["launch", "sft", "--auto", "--nodes", "2", "-o", str(out)])
    assert result.exit_code == 2 and "--nodes 2 with profile cpu" in result.output


def test_cpu_profile_on_several_nodes_is_refused():
    with pytest.raises(ToolError, match="--nodes 2 with profile cpu"):
        plan_launch(
            LaunchRequest(task="sft", profile=get_profile("cpu"), python="p", gpus=0, nodes=2)
        )


@pytest.mark.parametrize("task", ["sft", "grpo", "vllm-server"])
@pytest.mark.parametrize("nodes", [1, 2])
def test_run_time_scripts_parse_and_pass_shellcheck(tmp_path, task, nodes):
    if task == "vllm-server" and nodes == 2:
        return
    script = _write(tmp_path, task=task, nodes=nodes, vllm_available=True, target="snapshot s")
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    checker = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which(
        "shellcheck"
    )
    if checker is None:
        pytest.fail("shellcheck not installed (pip install -e '.[test]')")
    proc = subprocess.run([checker, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_train_writes_this_nodes_summary_from_its_first_process(tmp_path, monkeypatch):
    from shop_r1.commands.train import _write_node_summary

    path = tmp_path / "node-summary.node1.json"
    monkeypatch.setenv("SHOP_R1_NODE_SUMMARY", str(path))
    monkeypatch.setenv("LOCAL_RANK", "1")  # not the node's first process: writes nothing
    _write_node_summary({"steps": 4})
    assert not path.exists()
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("GROUP_RANK", "1")
    _write_node_summary({"steps": 4})
    assert json.loads(path.read_text()) == {"node_rank": "1", "steps": 4}
