"""`shop-r1 train sft --ray ADDRESS` on a real two-node Ray cluster (two raylets here).

The head has `node_a` and the second raylet `node_b`, one CPU each, so Ray Train must put
one worker on each: two gloo workers of one torch.distributed job, each running the
trainer's own preflight and TRL's SFTTrainer on a tiny local model. Both raylets get this
checkout on PYTHONPATH (Ray workers inherit the raylet's environment, not the driver's).
Every process of the cluster names its session directory (a short temp dir of its own) in
its command line and is stopped through it, never by a machine-wide `ray stop`.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install -e '.[ray]')")
pytest.importorskip("ray.train.torch", reason="Ray Train is not installed (ray[train])")
torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from machines import snapshot_path  # noqa: E402

from shop_r1.data.io import write_sessions  # noqa: E402
from shop_r1.data.prompts import sft_rows  # noqa: E402
from shop_r1.data.synth import generate_sessions  # noqa: E402
from shop_r1.tiny import make_tiny_model_and_tokenizer  # noqa: E402

pytestmark = pytest.mark.ray
REPO = Path(__file__).resolve().parents[2]
RAY = [sys.executable, "-m", "ray.scripts.scripts"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    path = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _pids_of(marker: str) -> list[int]:
    import psutil

    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if any(marker in a for a in p.info.get("cmdline") or [])
    ]


def _stop(marker: str) -> None:
    """Every process of the cluster (the raylets' workers and agents exit with them)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
        for pid in _pids_of(marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while _pids_of(marker) and time.monotonic() < deadline:
            time.sleep(0.2)


def _ports() -> list[str]:
    """Ports a raylet would otherwise take at fixed defaults (two on one machine collide)."""
    out = []
    for flag in (
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
        "--metrics-export-port",
    ):
        out += [flag, str(_free_port())]
    return out


class Cluster:
    def __init__(self, root: str) -> None:
        self.root = root
        self.port = _free_port()
        head = [*RAY, "start", "--head", "--num-cpus", "1", "--resources", '{"node_a": 1}']
        head += ["--port", str(self.port), "--temp-dir", root, "--disable-usage-stats"]
        head += ["--dashboard-port", str(_free_port()), "--ray-client-server-port"]
        head += [str(_free_port()), *_ports()]
        self._start(head)
        worker = [*RAY, "start", "--address", self.address, "--num-cpus", "1"]
        worker += ["--resources", '{"node_b": 1}', "--disable-usage-stats", *_ports()]
        self._start(worker)
        self.node_b = self._node_with("node_b")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, args: list[str]) -> None:
        proc = subprocess.run(
            args, env=_env(TMPDIR=self.root), capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0:
            self.stop()
            pytest.fail(f"ray start failed: {proc.stderr[-1500:]}")

    def _node_with(self, resource: str) -> str:
        code = (
            "import json, sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR'); "
            "print(json.dumps([n['NodeID'] for n in ray.nodes() "
            "if n['Alive'] and sys.argv[2] in n['Resources']]))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, self.address, resource],
            env=_env(TMPDIR=self.root),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-1500:]
        (node,) = json.loads(proc.stdout.strip().splitlines()[-1])
        return node

    def stop(self) -> None:
        _stop(self.root)
        _stop(f":{self.port}")  # the client server names the head only by its address


@pytest.fixture(scope="module")
def cluster():
    root = tempfile.mkdtemp(prefix="r", dir="/tmp")  # AF_UNIX paths stay under 107 bytes
    made = Cluster(root)
    yield made
    made.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """A random-init Qwen2-shaped model saved like a Hub checkpoint, and its sessions."""
    torch.set_num_threads(1)
    sessions = generate_sessions(6, seed=0)
    rows = sft_rows(sessions, context="latest", max_tokens=120)
    texts = [m["content"] for r in rows for m in r["prompt"] + r["completion"]]
    model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=600)
    out = tmp_path_factory.mktemp("tiny_ray")
    model.save_pretrained(out / "model")
    tok.save_pretrained(out / "model")
    write_sessions(sessions, out / "sessions.jsonl")
    return out / "model", out / "sessions.jsonl"


def _train(tiny: tuple[Path, Path], out: Path, address: str, steps: int) -> list[str]:
    model, data = tiny
    return [
        sys.executable,
        "-m",
        "shop_r1.cli",
        "train",
        "sft",
        "--model",
        str(model),
        "--data",
        str(data),
        "--output-dir",
        str(out),
        "--snapshot",
        str(snapshot_path("cpu")),
        "--report-to",
        "none",
        "--max-steps",
        str(steps),
        "--global-batch-size",
        "2",
        "--set",
        "context=latest",
        "--set",
        "max_prompt_tokens=100",
        "--set",
        "logging_steps=1",
        "--ray",
        address,
    ]


def test_sft_trains_on_both_ray_nodes(cluster, tiny, tmp_path):
    out, node_summary = tmp_path / "sft", tmp_path / "node-summary.json"
    proc = subprocess.run(
        _train(tiny, out, cluster.address, 3),
        env=_env(TMPDIR=cluster.root, SHOP_R1_NODE_SUMMARY=str(node_summary)),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(node_summary.read_text())
    assert summary["engine"] == "ray" and summary["steps"] == 3
    assert math.isfinite(summary["last_loss"])
    workers = {w["rank"]: w for w in summary["workers"]}
    assert sorted(workers) == [0, 1]
    # one worker per raylet: Ray placed them, the 1-CPU nodes could hold no more
    assert len({w["node_id"] for w in workers.values()}) == 2
    assert cluster.node_b in {w["node_id"] for w in workers.values()}
    for w in workers.values():
        assert w["steps"] == 3 and math.isfinite(w["last_loss"]), w
    # rank 0 alone wrote the run's files
    assert json.loads((out / "summary.json").read_text())["steps"] == 3
    assert (out / "model.safetensors").is_file() and (out / "checkpoint-3").is_dir()
    assert (
        "2 node(s), 2 CPU, 0 GPU; 2 worker(s) (one per node: the cluster has no GPU)" in proc.stdout
    )


def test_grpo_trains_on_both_ray_nodes(cluster, tiny, tmp_path):
    """GRPO too: both workers generate (transformers, no vLLM here) and step together."""
    out, node_summary = tmp_path / "grpo", tmp_path / "node-summary.json"
    args = [
        *_train(tiny, out, cluster.address, 2),
        "--set",
        "num_generations=2",
        "--set",
        "max_completion_length=8",
    ]
    args[args.index("sft")] = "grpo"
    proc = subprocess.run(
        args,
        env=_env(TMPDIR=cluster.root, SHOP_R1_NODE_SUMMARY=str(node_summary)),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(node_summary.read_text())
    assert summary["steps"] == 2 and [p["step"] for p in summary["reward_curve"]] == [1, 2]
    assert [(w["rank"], w["steps"]) for w in summary["workers"]] == [(0, 2), (1, 2)]
    assert len({w["node_id"] for w in summary["workers"]}) == 2


def test_grpo_dry_run_from_a_snapshot_with_a_spare_gpu_colocates(cluster, tiny, tmp_path):
    """--snapshot of a 2-GPU machine and one worker: outside Ray the spare GPU would choose
    `trl vllm-serve`, which nothing starts under Ray; the worker's plan colocates."""
    args = [
        *_train(tiny, tmp_path / "dry", cluster.address, 1),
        "--set",
        "num_generations=2",
        "--set",
        "use_vllm=on",
        "--ray-workers",
        "1",
        "--dry-run",
        "--ignore",
        "VLLM_INSTALL_SWAPS_TORCH",  # the recorded machine's own finding
    ]
    args[args.index("sft")] = "grpo"
    args[args.index(str(snapshot_path("cpu")))] = str(snapshot_path("h200x2-fa-vllm"))
    proc = subprocess.run(
        args, env=_env(TMPDIR=cluster.root), capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the worker's auto-configuration table, as Ray forwards it to the driver
    row = re.search(r"│ vllm_mode +│ (\w+) +│ (.+?) +│", proc.stdout)
    assert row and row.groups() == ("colocate", "Ray places the training"), proc.stdout[-3000:]


def _rank_on(node: str, root: str) -> int | None:
    """The pid of the Ray Train worker whose raylet is `node` (None until it runs)."""
    import psutil

    raylets = [
        p
        for p in psutil.process_iter(["cmdline"])
        if (p.info.get("cmdline") or [""])[0].endswith("/raylet")
        and any(root in a for a in p.info["cmdline"])
        and any(node in a for a in p.info["cmdline"])
    ]
    for raylet in raylets:
        for child in raylet.children():
            if (child.cmdline() or [""])[0].startswith("ray::RayTrainWorker"):
                return child.pid
    return None


def test_a_killed_worker_fails_the_run_in_one_line_naming_it(cluster, tiny, tmp_path):
    proc = subprocess.Popen(
        _train(tiny, tmp_path / "sft", cluster.address, 100_000),
        env=_env(TMPDIR=cluster.root),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the workers' logs come through the driver's stderr
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 180
        while not any("'loss'" in line for line in lines):  # training steps are running
            assert proc.poll() is None, "".join(lines[-60:])
            assert time.monotonic() < deadline, "no training step logged"
            time.sleep(0.5)
        victim = _rank_on(cluster.node_b, cluster.root)
        assert victim is not None, "no Ray Train worker under node_b's raylet"
        os.kill(victim, signal.SIGKILL)
        proc.wait(timeout=120)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(lines)
    assert proc.returncode == 1, err[-3000:]
    errors = [line for line in err.splitlines() if line.startswith("shop-r1: error:")]
    assert len(errors) == 1, err[-3000:]
    assert f"on node {cluster.node_b[:12]} " in errors[0]
    assert f"pid {victim} died: its process exited" in errors[0]
    # the driver's last word (Ray's own actors may log their shutdown above it)
    assert err.rstrip().splitlines()[-1] == errors[0]
