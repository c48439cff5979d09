"""The logs of generated two-node scripts run on a 2x H200 read as what happened:
clean runs give no error-level cause, the Ray run's failure gives its own."""

from __future__ import annotations

import json

import pytest
from repo_paths import FIXTURES

from shop_r1_doctor.causes import rank_causes

RUNS = FIXTURES / "device_logs" / "h200x2_two_nodes"
CLEAN = ("sft_short", "sft_long", "grpo_short", "grpo_long")


@pytest.mark.parametrize("run", CLEAN)
def test_clean_two_node_runs_claim_no_error(run):
    for log in sorted((RUNS / run).glob("launch.node*.log")):
        causes = rank_causes(log.read_text(), machine_feeds=False).causes
        assert [c.code for c in causes if c.severity == "error"] == [], log.name


@pytest.mark.parametrize("run", CLEAN)
def test_both_nodes_trained_every_step(run):
    summaries = [
        json.loads(p.read_text()) for p in sorted((RUNS / run).glob("node-summary.node*.json"))
    ]
    assert [s["node_rank"] for s in summaries] == ["0", "1"]
    assert len({s["steps"] for s in summaries}) == 1 and summaries[0]["steps"] > 0


def test_ray_local_rank_per_ip_reads_as_a_device_ordinal_failure():
    causes = rank_causes((RUNS / "ray_sft" / "sft.node0.log").read_text(), machine_feeds=False)
    assert causes.lead is not None
    assert (causes.lead.code, causes.lead.severity) == ("DEVICE_ORDINAL_OUT_OF_RANGE", "error")


RAY_RUNS = ("ray_sft_after_fix", "ray_grpo")


@pytest.mark.parametrize("run", RAY_RUNS)
def test_ray_runs_after_the_local_rank_fix_trained_one_worker_per_raylet(run):
    """Two raylets on one host share an IP, so Ray Train numbered the second worker local
    rank 1 while it saw one GPU; with LOCAL_RANK from `get_device()` both trained."""
    summary = json.loads((RUNS / run / "node-summary.node0.json").read_text())
    workers = summary["workers"]
    assert summary["engine"] == "ray" and summary["steps"] > 0
    assert [w["rank"] for w in workers] == [0, 1]
    assert len({w["node_id"] for w in workers}) == 2  # one worker on each raylet
    assert {w["steps"] for w in workers} == {summary["steps"]}


@pytest.mark.parametrize("run", RAY_RUNS)
def test_ray_runs_after_the_fix_claim_no_error(run):
    logs = sorted((RUNS / run).glob("*.node*.log"))
    assert logs
    for log in logs:
        causes = rank_causes(log.read_text(), machine_feeds=False).causes
        assert [c.code for c in causes if c.severity == "error"] == [], log.name
