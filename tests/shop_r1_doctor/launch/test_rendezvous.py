"""Several nodes check their rendezvous before training: the judgement table, then the
generated scripts run for real as two or three "nodes" on 127.0.0.1 (separate processes,
a real c10d TCPStore on MAIN_PORT, RDZV_TIMEOUT=12 s). The interpreter is the
stand-in of test_script_target (preflight and training faked, everything else real)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from test_script_target import _bin, _env, _free_port, _write

from shop_r1_doctor.launch.rendezvous import Node, check_gpus, check_nodes, check_rank


def _n(rank: int, uses: int = 2, has: int | None = 2, nodes: int = 2) -> Node:
    return Node(rank, f"h{rank}", nodes, uses, has)


@pytest.mark.parametrize(
    ("rank", "nodes", "ok"), [(0, 2, True), (1, 2, True), (2, 2, False), (-1, 2, False)]
)
def test_rank_must_be_in_range(rank, nodes, ok):
    problem = check_rank(rank, nodes)
    assert (problem is None) == ok
    if problem:
        assert problem.code == "NODE_COUNT_MISMATCH" and f"MACHINE_RANK={rank}" in problem.message


def test_node_count_judgement():
    assert check_nodes({0: _n(0), 1: _n(1)}, 2, 1.0) is None
    missing = check_nodes({0: _n(0, nodes=3), 1: _n(1, nodes=3)}, 3, 5.0)
    assert missing is not None and missing.code == "NODE_COUNT_MISMATCH"
    assert "2 of 3 node(s)" in missing.message and "missing node rank(s) 2 " in missing.message
    mixed = check_nodes({0: _n(0, nodes=2), 1: _n(1, nodes=3)}, 2, 1.0)
    assert mixed is not None and "rank 1 (h1): 3" in mixed.message


@pytest.mark.parametrize(
    ("nodes", "planned", "code"),
    [
        ([_n(0), _n(1)], 2, None),
        ([_n(0), _n(1)], None, None),
        ([_n(0), _n(1, has=None)], 2, None),  # unknown: not held against it
        ([_n(0), _n(1, has=1)], 2, "NODE_GPU_COUNT_MISMATCH"),  # fewer GPUs than planned
        ([_n(0), _n(1, uses=3, has=4)], 2, "NODE_GPU_COUNT_MISMATCH"),  # TRAIN_GPUS off plan
        ([_n(0), _n(1, uses=1, has=1)], None, "NODE_GPU_COUNT_MISMATCH"),  # counts differ
    ],
)
def test_gpu_count_judgement(nodes, planned, code):
    problem = check_gpus({n.rank: n for n in nodes}, planned)
    assert (problem.code if problem else None) == code


def _start(
    tmp_path: Path,
    planned_nodes: int,
    ranks: list[int],
    *,
    node_gpus: dict[int, int] | None = None,
    env: dict[int, dict[str, str]] | None = None,
    **write: object,
) -> tuple[dict[int, subprocess.CompletedProcess], float, Path]:
    """The generated script on each rank at once, sharing a run directory."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = _write(
        tmp_path,
        task="sft",
        nodes=planned_nodes,
        vllm_available=True,
        target="snapshot n.json",
        **write,
    )
    port = str(_free_port())
    procs = {}
    started = time.monotonic()
    for i, rank in enumerate(ranks):
        node = tmp_path / f"node{i}"
        bin_dir = _bin(node, gpus=(node_gpus or {}).get(rank, 2))
        e = _env(
            tmp_path,
            bin_dir,
            MACHINE_RANK=str(rank),
            MAIN_PROCESS_IP="127.0.0.1",
            MAIN_PORT=port,
            RDZV_TIMEOUT="12",  # nodes of a loaded test machine start seconds apart
        )
        e.update((env or {}).get(rank, {}))
        procs[i] = subprocess.Popen(
            ["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e
        )
    done = {}
    for i, p in procs.items():
        out, err = p.communicate(timeout=90)
        done[i] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return done, time.monotonic() - started, tmp_path / "rundir"


def _error(proc: subprocess.CompletedProcess) -> str:
    return next(line for line in proc.stderr.splitlines() if " error: " in line)


def _read_back(run_dir: Path, rank: int) -> str | None:
    """The lead cause `shop-r1 report --log` gives for this node's launch log."""
    from shop_r1_doctor.causes import rank_causes

    lead = rank_causes((run_dir / f"launch.node{rank}.log").read_text()).lead
    return lead.code if lead else None


def _summary(run_dir: Path, rank: int) -> dict:
    return json.loads((run_dir / f"node-summary.node{rank}.json").read_text())


def test_two_nodes_join_then_train(tmp_path):
    done, took, run_dir = _start(tmp_path, 2, [0, 1])
    assert [p.returncode for p in done.values()] == [0, 0], done[1].stderr
    for p in done.values():
        assert "rendezvous: 2 of 2 node(s) joined at 127.0.0.1:" in p.stderr
        assert "training process(es) per node: 2, 2" in p.stderr
    assert (run_dir / "sft.node1.log").exists() and took < 60


def test_three_planned_two_started_fails_naming_the_missing_node(tmp_path):
    done, took, run_dir = _start(tmp_path, 3, [0, 1])
    assert [p.returncode for p in done.values()] == [1, 1]
    for i, p in done.items():
        line = _error(p)
        assert "rendezvous: 2 of 3 node(s) joined" in line, p.stderr
        assert "missing node rank(s) 2 " in line and line.endswith("[NODE_COUNT_MISMATCH]")
        assert _summary(run_dir, i)["code"] == "NODE_COUNT_MISMATCH"
        assert _read_back(run_dir, i) == "NODE_COUNT_MISMATCH"
        assert not (run_dir / f"sft.node{i}.log").exists()  # training never started
    assert took < 60


def test_a_wrong_main_port_names_the_address(tmp_path):
    bad = _free_port()  # nothing listens there
    done, took, run_dir = _start(tmp_path, 2, [0, 1], env={1: {"MAIN_PORT": str(bad)}})
    assert [p.returncode for p in done.values()] == [1, 1]
    worker = _error(done[1])
    assert f"cannot reach the main node at 127.0.0.1:{bad}" in worker
    assert worker.endswith("[NODE_NETWORK_UNREACHABLE]")
    assert _summary(run_dir, 1)["code"] == "NODE_NETWORK_UNREACHABLE"
    assert _read_back(run_dir, 1) == "NODE_NETWORK_UNREACHABLE"
    assert "1 of 2 node(s) joined" in _error(done[0]) and took < 60


def test_a_rank_used_twice_and_a_rank_out_of_range(tmp_path):
    done, _, _ = _start(tmp_path / "dup", 3, [0, 1, 1])
    assert [p.returncode for p in done.values()] == [1, 1, 1]
    assert all("MACHINE_RANK=1 is used by two nodes" in _error(p) for p in done.values())
    done, took, _ = _start(tmp_path / "range", 2, [2])
    assert done[0].returncode == 1 and took < 30
    assert "MACHINE_RANK=2 is outside 0..1" in _error(done[0])


def test_gpu_counts_that_differ_from_the_plan_or_each_other(tmp_path):
    # counted at run time: 2 GPUs on node 0, 1 on node 1
    done, _, _ = _start(tmp_path / "a", 2, [0, 1], node_gpus={1: 1})
    assert [p.returncode for p in done.values()] == [1, 1]
    assert all("different GPU counts" in _error(p) for p in done.values())
    assert _error(done[0]).endswith("[NODE_GPU_COUNT_MISMATCH]")
    # fixed at generation (--gpus 2): node 1 has one
    done, _, run_dir = _start(
        tmp_path / "b", 2, [0, 1], node_gpus={1: 1}, gpus_source="--gpus", gpus=2
    )
    assert _read_back(run_dir, 0) == "NODE_GPU_COUNT_MISMATCH"
    assert "node rank 1 (" in _error(done[0]) and "has 1 GPU(s) but would start 2" in _error(
        done[0]
    )


def test_a_busy_main_port_is_named_and_the_doctor_reads_it(tmp_path):
    from shop_r1_doctor.logscan import diagnose_log

    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        done, _, run_dir = _start(tmp_path, 2, [0], env={0: {"MAIN_PORT": port}})
    assert done[0].returncode == 1 and _error(done[0]).endswith("[DIST_PORT_IN_USE]")
    found = diagnose_log((run_dir / "launch.node0.log").read_text())
    assert found.lead is not None and found.lead.code == "DIST_PORT_IN_USE"


def test_a_rank_that_is_not_a_number_is_one_line(tmp_path, capsys):
    from shop_r1_doctor.launch.rendezvous import main

    summary = tmp_path / "s.json"
    argv = ["--nodes", "2", "--rank", "one", "--addr", "127.0.0.1", "--port", "1", "--uses", "1"]
    assert main([*argv, "--summary", str(summary)]) == 1
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith("is not a number: 0 on the main node, 1..1 on the others [NODE_COUNT_MISMATCH]")
    )
    assert json.loads(summary.read_text())["stage"] == "rendezvous"
