"""`train --ray`: where workers go, the one line a failed run ends with, and bad flags.

The failures are Ray's own exception objects, built as Ray Train 2.60 builds them for the
real runs in test_ray_engine_real.py (a SIGKILLed worker: a health-check failure wrapping
`ActorDiedError`; its peer: gloo's "Connection reset by peer"; a worker that raises: the
exception itself).
"""

from __future__ import annotations

import pytest
import torch
from cli_errors import error_line
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.ray_engine import RayLayout, local_rank_for_device, place
from shop_r1_doctor.errors import ToolError

WHERE = {
    0: {"node_id": "a" * 56, "node_ip": "10.0.0.1", "pid": 11},
    1: {"node_id": "b" * 56, "node_ip": "10.0.0.2", "pid": 22},
}


@pytest.mark.parametrize(
    ("cluster", "nodes", "workers", "expect"),
    [
        ({"CPU": 32.0, "GPU": 2.0}, 2, None, (2, True, {"CPU": 1.0, "GPU": 1.0})),
        ({"CPU": 2.0}, 2, None, (2, False, {"CPU": 1.0})),
        ({"CPU": 64.0, "GPU": 8.0}, 2, 4, (4, True, {"CPU": 1.0, "GPU": 1.0})),
        ({"CPU": 8.0}, 1, 3, (3, False, {"CPU": 1.0})),
    ],
)
def test_place_one_worker_per_gpu_else_per_node(cluster, nodes, workers, expect):
    got = place(cluster, nodes, RayLayout("auto", workers))
    assert (got.workers, got.use_gpu, got.resources) == expect


def test_place_refuses_what_the_cluster_cannot_hold():
    with pytest.raises(ToolError, match="--ray-workers 3: the Ray cluster has 2 GPU"):
        place({"CPU": 16.0, "GPU": 2.0}, 1, RayLayout("auto", 3))
    with pytest.raises(ToolError, match=r"--ray-cpus-per-worker 4 x 2 worker\(s\): .* 4 CPU"):
        place({"CPU": 4.0}, 2, RayLayout("auto", None, 4.0))


def _group_error(failures):
    from ray.train import WorkerGroupError

    return WorkerGroupError("Training failed due to worker errors", failures)


def _died():
    from ray.exceptions import ActorDiedError
    from ray.train.v2._internal.exceptions import WorkerHealthCheckFailedError

    return WorkerHealthCheckFailedError("A worker health check failed.", ActorDiedError())


def test_failure_line_names_the_dead_worker_not_its_peer():
    pytest.importorskip("ray.train.torch", reason="Ray Train is not installed (ray[train])")
    from shop_r1.ray_engine import failure_line

    # rank 0 is the peer whose collective broke; rank 1 is the one that died
    gloo = RuntimeError("[gloo/transport/tcp/pair.cc:537] Read error: Connection reset by peer")
    exc = _group_error({0: gloo, 1: _died()})
    line = failure_line(exc, WHERE, {"a" * 56, "b" * 56})
    assert line == (
        f"ray worker rank 1 on node {'b' * 12} (10.0.0.2), pid 22 died: its process exited "
        "(killed, out of memory or crashed); 1 other worker(s) failed with it"
    )
    gone = failure_line(exc, WHERE, {"a" * 56})  # node b left the cluster
    assert "rank 1 on node bbbbbbbbbbbb" in gone and "died with its node" in gone


def test_failure_line_for_a_worker_that_raised():
    pytest.importorskip("ray.train.torch", reason="Ray Train is not installed (ray[train])")
    from shop_r1.commands.train import PreflightErrors
    from shop_r1.ray_engine import failure_line

    line = failure_line(_group_error({1: ValueError("planted")}), WHERE, set())
    assert line.endswith("pid 22 raised ValueError: planted")
    ours = failure_line(_group_error({0: PreflightErrors(["GPU_NONE"])}), WHERE, set())
    assert ours.endswith(
        "pid 11 failed: preflight: 1 error(s) (GPU_NONE); fix them or pass --ignore CODE"
    )
    early = failure_line(_group_error({0: ValueError("x")}), {}, set())
    assert early == "ray worker rank 0 before it reported its node raised ValueError: x"


def test_a_workers_preflight_error_crosses_to_the_driver_whole():
    """Ray pickles a worker's exception to the driver; unpickled from its message, the
    codes became the message's characters ('295 error(s) (p, r, e, f, ...')."""
    import pickle

    from shop_r1.commands.train import PreflightErrors

    back = pickle.loads(pickle.dumps(PreflightErrors(["VLLM_INSTALL_SWAPS_TORCH", "GPU_NONE"])))
    assert back.codes == ["VLLM_INSTALL_SWAPS_TORCH", "GPU_NONE"]
    assert str(back) == (
        "preflight: 2 error(s) (VLLM_INSTALL_SWAPS_TORCH, GPU_NONE); fix them or pass --ignore CODE"
    )


def test_failure_line_for_the_controller():
    pytest.importorskip("ray.train.torch", reason="Ray Train is not installed (ray[train])")
    from ray.train import ControllerError

    from shop_r1.ray_engine import failure_line

    exc = ControllerError(TimeoutError("placement group not ready after 30 s"))
    line = failure_line(exc, WHERE, set())
    assert line == "ray: training failed: TimeoutError: placement group not ready after 30 s"


def _train(tmp_path, *extra: str) -> list[str]:
    model, data = tmp_path / "model", tmp_path / "s.jsonl"
    model.mkdir(exist_ok=True)
    data.write_text("{}\n")
    return ["train", "sft", "--model", str(model), "--data", str(data), *extra]


def test_ray_flags_bad_input_is_one_line_exit_2(tmp_path):
    pytest.importorskip("torch")
    runner = CliRunner()
    result = runner.invoke(app, _train(tmp_path, "--ray-workers", "2"))
    assert result.exit_code == 2
    assert error_line(result).endswith(
        "error: --ray-workers: needs --ray ADDRESS (the cluster the workers run on)"
    )
    result = runner.invoke(app, _train(tmp_path, "--ray", "auto", "--dry-run", "--json"))
    assert result.exit_code == 2 and "--json: not with --ray" in error_line(result)


def test_ray_address_where_nothing_answers_is_one_line_exit_2(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("ray.train.torch", reason="Ray Train is not installed (ray[train])")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = CliRunner().invoke(app, _train(tmp_path, "--ray", f"127.0.0.1:{port}"))
    assert result.exit_code == 2
    assert error_line(result) == (
        f"shop-r1: error: --ray 127.0.0.1:{port}: no Ray cluster answers there (ray start --head, or pass "
        "the head's HOST:PORT)"
    )


@pytest.mark.parametrize(
    ("local_rank", "device", "expect"),
    [
        # two raylets on one host, one GPU each: Ray Train says local rank 1, the
        # worker sees one GPU (cuda:0) -> accelerate must use 0 (H200 x2, invalid ordinal)
        (1, torch.device("cuda", 0), 0),
        # one raylet with two GPUs: both agree
        (1, torch.device("cuda", 1), 1),
        (0, torch.device("cuda", 0), 0),
        # CPU workers (gloo): Ray Train's local rank stands
        (1, torch.device("cpu"), 1),
    ],
)
def test_local_rank_is_the_workers_own_gpu(local_rank, device, expect):
    assert local_rank_for_device(local_rank, device) == expect
