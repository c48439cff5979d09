"""Prompts kept for GRPO: exactly those whose group's rewards spread, keyed so the
evaluation rows and the GRPO rows of one session step meet."""

from __future__ import annotations

import json

import pytest

from shop_r1.data.prompts import rl_rows
from shop_r1.data.split import split_by_session
from shop_r1.data.synth import generate_sessions
from shop_r1.eval import rows_from_sessions
from shop_r1.spread import filter_rows, prompt_key, select_spread


@pytest.fixture(scope="module")
def rows():
    train, _ = split_by_session(generate_sessions(12, seed=3), 0.1, 3)
    kw = {"context": "full", "max_tokens": 1024}
    return rows_from_sessions(train, limit=None, **kw), rl_rows(train, **kw)


def answer(action) -> str:
    return json.dumps({"rationale": "because the goal says so", "action": action.to_json()})


def test_keys_join_eval_rows_and_grpo_rows(rows):
    ev, rl = rows
    assert [prompt_key(r.messages) for r in ev] == [prompt_key(r["prompt"]) for r in rl]
    assert len({prompt_key(r["prompt"]) for r in rl}) == len(rl)


def test_only_groups_with_reward_spread_are_kept(rows):
    ev, rl = rows
    right = [answer(r.gold) for r in ev]
    # group 0: all right (no spread); group 1: right + unparsable (spread);
    # group 2: unparsable twice (no spread); the rest: right + right.
    groups = [[right[0]] * 4, [right[1], "not json"], ["x", "y"]]
    groups += [[right[i], right[i]] for i in range(3, len(ev))]
    report = select_spread(ev, groups)
    assert report.keep == [prompt_key(ev[1].messages)]
    assert report.prompts == len(ev)
    assert sum(n for _, n in report.by_type.values()) == len(ev)
    assert sum(k for k, _ in report.by_type.values()) == 1
    kept = filter_rows(rl, report.keep)
    assert [r["gold_action"] for r in kept] == [rl[1]["gold_action"]]
    assert report.to_json()["schema"] == "shop-r1.spread/1"


def test_a_wrong_attribute_is_spread_as_grpo_sees_it(rows):
    ev, _ = rows
    i = next(i for i, r in enumerate(ev) if r.gold.type == "type_and_submit")
    gold = ev[i].gold
    wrong = json.dumps(
        {"rationale": "x", "action": {"type": "type_and_submit", "name": gold.name, "text": "zzz"}}
    )
    report = select_spread([ev[i]], [[answer(gold), wrong]])
    assert report.keep == [prompt_key(ev[i].messages)]


def test_mismatched_or_single_groups_are_refused(rows):
    ev, _ = rows
    with pytest.raises(ValueError, match="rows but"):
        select_spread(ev[:2], [["a", "b"]])
    with pytest.raises(ValueError, match="at least 2"):
        select_spread(ev[:1], [["a"]])
