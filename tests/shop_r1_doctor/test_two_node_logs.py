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
