"""Generated launch scripts: golden text for 1- and 2-GPU GRPO, shellcheck-clean for every
task, and run for real against a fake interpreter (server, health wait, GPU split, logs,
cleanup, and the failures that must not look like success)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from machines import snapshot_path
from repo_paths import GOLDEN as GOLDEN_ROOT

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.launch import LaunchRequest, plan_launch, render_launch
from shop_r1_doctor.launch.script import sibling_names, train_args
from shop_r1_doctor.profiles.model import get_profile

GOLDEN = GOLDEN_ROOT / "launch"
FAKE_PY = "/opt/venv/bin/python3"


def request(task="grpo", profile="hopper", gpus=1, **kw) -> LaunchRequest:
    """As `shop-r1 launch --snapshot` plans it: on the facts of a target with vLLM."""
    kw.setdefault("data", "data/sessions.jsonl")
    kw.setdefault("target", "snapshot h200x2.json")
    kw.setdefault("vllm_available", True)
    kw.setdefault("generated_in", "virtualenv /opt/venv")
    kw.setdefault(
        "command_line",
        f"shop-r1 launch {task} --profile {profile} --gpus {gpus} --snapshot h200x2.json",
    )
    return LaunchRequest(task=task, profile=get_profile(profile), python=FAKE_PY, gpus=gpus, **kw)


def _shellcheck() -> str:
    found = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which(
        "shellcheck"
    )
    if found is None:
        pytest.fail("shellcheck not installed (pip install -e '.[test]')")
    return found


@pytest.mark.parametrize(("gpus", "name"), [(1, "grpo_1gpu.sh"), (2, "grpo_2gpu.sh")])
def test_launch_grpo_golden(gpus, name, golden):
    files = render_launch(plan_launch(request(gpus=gpus)), "run_grpo.sh").files
    golden(GOLDEN / name, files["run_grpo.sh"])


def test_launch_sft_ray_two_nodes_golden(golden):
    """`--ray`: the main node forms the cluster and runs one `train --ray`, preflight
    included, on it; the other node only joins; nothing goes through accelerate."""
    plan = plan_launch(request(task="sft", gpus=1, nodes=2, ray=True))
    files = render_launch(plan, "run_sft.sh").files
    assert not plan.use_accelerate and "run_sft.accelerate.yaml" not in files
    golden(GOLDEN / "sft_ray_2nodes.sh", files["run_sft.sh"])


def test_launch_ray_grpo_colocates_and_other_tasks_refuse_ray():
    grpo = plan_launch(request(task="grpo", gpus=4, ray=True))
    # a vLLM server GPU would sit outside Ray's placement: every worker colocates
    assert grpo.generation == "vllm-colocate" and not grpo.use_accelerate
    assert "--ray-workers 4" in train_args(sibling_names("run.sh"), grpo)
    for task in ("eval", "vllm-server"):
        with pytest.raises(ToolError, match=f"--ray with launch {task}: only sft and grpo"):
            plan_launch(request(task=task, gpus=1, ray=True))


def test_launch_grpo_split_and_config():
    one = plan_launch(request(gpus=1))
    assert one.generation == "vllm-colocate" and one.server_gpus == () and one.train_gpus == (0,)
    assert one.run_config == {"num_processes": 1, "use_vllm": "auto", "vllm_mode": "colocate"}
    four = plan_launch(request(gpus=4))
    assert four.generation == "vllm-server"
    assert set(four.server_gpus).isdisjoint(four.train_gpus) and four.train_gpus == (1, 2, 3)
    assert four.use_accelerate and four.total_processes == 3
    assert four.run_config["vllm_server_host"] == "127.0.0.1"
    assert four.doctor_plan["vllm_server_host"] == "127.0.0.1"
    no_vllm = plan_launch(request(gpus=2, vllm_available=False))
    assert no_vllm.generation == "transformers" and no_vllm.train_gpus == (0, 1)
    assert no_vllm.run_config["use_vllm"] == "auto"  # the target's preflight decides
    nodes = plan_launch(request(gpus=8, nodes=2))
    assert nodes.generation == "vllm-colocate" and nodes.total_processes == 16


def test_launch_consumer_multi_gpu_env_and_user_config_kept():
    plan = plan_launch(
        request(
            task="sft", profile="ada", gpus=2, consumer_gpus=True, config={"learning_rate": 1e-5}
        )
    )
    assert plan.env["NCCL_P2P_DISABLE"] == "1"
    assert plan.run_config == {"learning_rate": 1e-5, "num_processes": 2}


@pytest.mark.parametrize(
    ("task", "profile", "gpus", "nodes", "ray"),
    [
        ("sft", "hopper", 1, 1, False),
        ("sft", "ada", 4, 2, True),
        ("grpo", "blackwell", 4, 1, False),
        ("grpo", "hopper", 8, 2, True),
        ("sft", "hopper", None, 2, True),
        ("grpo", "cpu", 0, 1, True),
        ("grpo", "cpu", 0, 1, False),
        ("eval", "turing", 1, 1, False),
        ("vllm-server", "hopper", 2, 1, False),
    ],
)
def test_launch_scripts_pass_shellcheck(tmp_path, task, profile, gpus, nodes, ray):
    plan = plan_launch(request(task=task, profile=profile, gpus=gpus, nodes=nodes, ray=ray))
    files = render_launch(plan, "run.sh").files
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([_shellcheck(), str(tmp_path / "run.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    script = files["run.sh"]
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    # the generating interpreter is named in the header, never run
    assert f"({FAKE_PY}); nothing of that environment is assumed here" in script
    assert script.count(FAKE_PY) == 1
    assert " python " not in script and "\npython " not in script
    if task in ("sft", "grpo"):  # the trainer's own preflight: what `train` will run
        assert f"train {task} {train_args(sibling_names('run.sh'), plan)} --dry-run" in script
        assert "doctor --plan" not in script
    else:
        assert "doctor --plan" in script
    if ray:  # one driver on the cluster; accelerate is not involved
        assert "accelerate" not in script and '--ray "$RAY_ADDRESS"' in script
    if plan.use_accelerate:
        cfg = yaml.safe_load(files["run.accelerate.yaml"])
        assert cfg["distributed_type"] == "FSDP" and cfg["num_machines"] == nodes
        assert cfg["num_processes"] == plan.total_processes
        assert ("--machine_rank" in script) is (nodes > 1)


def test_launch_bad_requests_are_tool_errors():
    with pytest.raises(ToolError, match="--gpus 0 with GPU profile"):
        plan_launch(request(gpus=0))
    with pytest.raises(ToolError, match="vLLM is not available"):
        plan_launch(request(task="vllm-server", profile="cpu", gpus=0))


# --- running a generated script against a fake interpreter ---------------------------

FAKE = r"""#!/usr/bin/env bash
# Stands in for the interpreter: a tiny HTTP server for vllm-serve, a chatty trainer.
case "$*" in
  *"shop_r1.cli doctor"*|*"--dry-run"*) echo "preflight ok"; exit "${FAKE_PREFLIGHT_RC:-0}" ;;
  *"trl.cli.main vllm-serve"*)
    echo "server CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
    port=$(echo "$*" | sed -E 's/.*--port ([0-9]+).*/\1/')
    exec REAL -c 'import http.server as h, sys
class H(h.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404); self.end_headers()
h.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$port" ;;
  *"shop_r1.cli train"*)
    [[ -n "${FAKE_SILENT:-}" ]] && exit 0
    echo "trainer CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
    echo "args: $*"
    if [[ -n "${FAKE_STEPS:-}" ]]; then  # the summary.json shop-r1 train writes at the end
      out=$(echo "$*" | sed -E 's/.*--output-dir ([^ ]+).*/\1/')
      mkdir -p "$out" && echo "{\"steps\": $FAKE_STEPS}" > "$out/summary.json"
      # and this node's own summary, as `shop-r1 train` writes it for the launch script
      [[ -n "${FAKE_NO_NODE_SUMMARY:-}" ]] || echo "{\"steps\": $FAKE_STEPS}" > "$SHOP_R1_NODE_SUMMARY"
    fi
    exit "${FAKE_TRAIN_RC:-0}" ;;
  *) exec REAL "$@" ;;
esac
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, gpus: int, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    fake = tmp_path / "fakepy"
    fake.write_text(FAKE.replace("REAL", sys.executable))
    fake.chmod(0o755)
    req = request(gpus=gpus, data="d.jsonl")
    for name, text in render_launch(plan_launch(req), "run.sh").files.items():
        (tmp_path / name).write_text(text)
    run_dir = tmp_path / "rundir"
    ports = {"VLLM_PORT": str(_free_port()), "GROUP_PORT": str(_free_port())}
    ports.update({k: v for k, v in env.items() if k in ports})
    full_env = {
        **os.environ,
        "RUN_DIR": str(run_dir),
        "PYTHON": str(fake),
        "OUTPUT_DIR": str(tmp_path / "out"),
        "MIN_SECONDS": "0",
        "HEALTH_POLL": "0.2",
        **ports,
        **env,
    }
    proc = subprocess.run(
        ["bash", str(tmp_path / "run.sh")], capture_output=True, text=True, env=full_env, timeout=60
    )
    proc.ports = ports  # type: ignore[attr-defined]
    return proc, run_dir


def test_launch_two_gpu_script_runs_server_then_trainer_and_cleans_up(tmp_path):
    proc, run_dir = _run(tmp_path, gpus=2, FAKE_STEPS="3")
    assert proc.returncode == 0, proc.stderr
    server_log = (run_dir / "vllm-server.log").read_text()
    train_log = (run_dir / "grpo.log").read_text()
    assert "server CUDA_VISIBLE_DEVICES=0" in server_log
    assert "trainer CUDA_VISIBLE_DEVICES=1" in train_log
    first = train_log.splitlines()[0]
    assert first[:4].isdigit() and first[10] == "T" and first.split(" ", 1)[0].endswith("Z")
    assert "stopping the vLLM server" in proc.stderr
    assert "vLLM server healthy" in (run_dir / "launch.log").read_text()
    with socket.socket() as s:  # the server went down with the run: nothing listens any more
        assert s.connect_ex(("127.0.0.1", int(proc.ports["VLLM_PORT"]))) != 0


def test_launch_script_fails_on_empty_log_short_run_and_preflight_errors(tmp_path):
    proc, _ = _run(tmp_path / "a", gpus=1, FAKE_SILENT="1")
    assert proc.returncode == 1 and "grpo.log is empty" in proc.stderr
    # exit 0 without this node's summary: it did not reach the end
    proc, _ = _run(tmp_path / "b", gpus=1)
    assert proc.returncode == 1 and "but wrote no" in proc.stderr
    proc, _ = _run(tmp_path / "b0", gpus=1, FAKE_STEPS="0")
    assert proc.returncode == 1 and "ran 0 optimizer steps" in proc.stderr
    proc, _ = _run(tmp_path / "c", gpus=1, FAKE_PREFLIGHT_RC="1")
    assert proc.returncode == 1 and "the preflight found errors" in proc.stderr
    assert "grpo.log" not in {p.name for p in (tmp_path / "c" / "rundir").iterdir()}
    proc, _ = _run(tmp_path / "d", gpus=1, FAKE_TRAIN_RC="3")
    assert proc.returncode == 1 and "exited with status 3" in proc.stderr


def test_launch_script_refuses_a_busy_port(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc, _ = _run(tmp_path, gpus=2, VLLM_PORT=str(busy.getsockname()[1]))
    assert proc.returncode == 1 and "is in use" in proc.stderr


def test_launch_cli_writes_script_and_siblings(tmp_path):
    from typer.testing import CliRunner

    from shop_r1.cli import app

    out = tmp_path / "runs" / "run_grpo.sh"
    result = CliRunner().invoke(
        app,
        [
            "launch",
            "grpo",
            "--profile",
            "hopper",
            "--gpus",
            "2",
            "--data",
            "d.jsonl",
            "-o",
            str(out),
            # the target: 2x H200 with vLLM (a recorded machine), not this one
            "--snapshot",
            str(snapshot_path("h200x2-fa-vllm")),
        ],
    )
    assert result.exit_code == 0, result.output
    assert os.access(out, os.X_OK)
    text = out.read_text()
    # the generating interpreter is named, not used; the snapshot fixed the layout
    assert f"PYTHON={sys.executable}" not in text and f"({sys.executable})" in text
    assert (
        f"generation layout (vllm-server): the facts of snapshot {snapshot_path('h200x2-fa-vllm')}"
        in text
    )
    assert (tmp_path / "runs" / "run_grpo.plan.json").is_file()
    config = yaml.safe_load((tmp_path / "runs" / "run_grpo.config.yaml").read_text())
    assert config["vllm_mode"] == "server" and config["vllm_server_host"] == "127.0.0.1"
    assert "trainer on GPU(s) 1" in result.output


def test_launch_script_judges_a_short_run_by_its_summary_not_the_clock(tmp_path):
    # 2x H200, GRPO server mode: 6 real steps in 41 s failed the old 60 s floor.
    proc, run_dir = _run(tmp_path / "a", gpus=2, MIN_SECONDS="3600", FAKE_STEPS="6")
    assert proc.returncode == 0, proc.stderr
    assert "training done" in (run_dir / "launch.log").read_text()
    # A summary left by an earlier run (in the same RUN_DIR) does not vouch for this one.
    run_dir = tmp_path / "b" / "rundir"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text('{"steps": 6}')
    proc, _ = _run(tmp_path / "b", gpus=1, FAKE_STEPS="6", FAKE_NO_NODE_SUMMARY="1")
    assert proc.returncode == 1 and "but wrote no" in proc.stderr
