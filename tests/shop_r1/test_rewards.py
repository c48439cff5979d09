"""Reward table: every branch of Table 1, with expected values computed by hand."""

from __future__ import annotations

import json
import pickle

import pytest

from shop_r1.actions import Action
from shop_r1.rewards import (
    AttributeReward,
    FormatReward,
    RewardConfig,
    TypeReward,
    ValueReward,
    build_reward_funcs,
    reward_components,
)


def out(action: dict, rationale: str = "I want this.") -> str:
    return json.dumps({"rationale": rationale, "action": action})


CLICK = Action("click", "add_to_cart")
TAS = Action("type_and_submit", "search_input", "trail running shoes")
TERM = Action("terminate")
DEFAULT = RewardConfig()

# (case, completion, gold, cfg, (format, type, attribute, value))
CASES = [
    # format gate: nothing else is paid without a valid output
    ("invalid-json", "not json", CLICK, DEFAULT, (0, 0, 0, 0)),
    (
        "fenced-strict",
        "```json\n" + out({"type": "click", "name": "add_to_cart"}) + "\n```",
        CLICK,
        DEFAULT,
        (0, 0, 0, 0),
    ),
    ("missing-name-is-format-invalid", out({"type": "click"}), CLICK, DEFAULT, (0, 0, 0, 0)),
    # gold click
    (
        "click-exact",
        out({"type": "click", "name": "add_to_cart"}),
        CLICK,
        DEFAULT,
        (0.5, 0.3, 0.2, 1000.0),
    ),
    # tokens [add,to,cart,now] vs [add,to,cart]: P=3/4 R=1 F=6/7 >= 0.75
    (
        "click-close",
        out({"type": "click", "name": "add to cart now"}),
        CLICK,
        DEFAULT,
        (0.5, 0.3, 0.2, 6000 / 7),
    ),
    # [cart] vs [add,to,cart]: P=1 R=1/3 F=0.5 < 0.75 -> no value
    (
        "click-below-threshold",
        out({"type": "click", "name": "cart"}),
        CLICK,
        DEFAULT,
        (0.5, 0.3, 0.2, 0.0),
    ),
    ("click-empty-name", out({"type": "click", "name": ""}), CLICK, DEFAULT, (0.5, 0.3, 0.0, 0.0)),
    ("click-vs-terminate", out({"type": "terminate"}), CLICK, DEFAULT, (0.5, 0, 0, 0)),
    (
        "click-vs-tas",
        out({"type": "type_and_submit", "name": "add_to_cart", "text": "x"}),
        CLICK,
        DEFAULT,
        (0.5, 0, 0, 0),
    ),
    # F exactly 0.75 ([a,b,c,x] vs [a,b,c,d]) is credited: >= like the exact-match metric
    (
        "threshold-equal",
        out({"type": "click", "name": "a b c x"}),
        Action("click", "a_b_c_d"),
        DEFAULT,
        (0.5, 0.3, 0.2, 750.0),
    ),
    (
        "threshold-raised",
        out({"type": "click", "name": "a b c x"}),
        Action("click", "a_b_c_d"),
        RewardConfig(threshold=0.8),
        (0.5, 0.3, 0.2, 0.0),
    ),
    (
        "dars-10",
        out({"type": "click", "name": "add to cart now"}),
        CLICK,
        RewardConfig(dars=10),
        (0.5, 0.3, 0.2, 60 / 7),
    ),
    # gold type_and_submit
    (
        "tas-exact",
        out({"type": "type_and_submit", "name": "search_input", "text": "trail running shoes"}),
        TAS,
        DEFAULT,
        (0.5, 0.3, 0.2, 0.1 + 1000),
    ),
    # name [search] vs [search,input]: F=2/3 (no credit); text [running,shoes] vs 3 tokens: F=0.8
    (
        "tas-partial",
        out({"type": "type_and_submit", "name": "search", "text": "Running shoes!"}),
        TAS,
        DEFAULT,
        (0.5, 0.3, 0.2, 800.0),
    ),
    (
        "tas-empty-text",
        out({"type": "type_and_submit", "name": "search_input", "text": ""}),
        TAS,
        DEFAULT,
        (0.5, 0.3, 0.1, 0.1),
    ),
    (
        "tas-empty-name",
        out({"type": "type_and_submit", "name": " ", "text": "trail running shoes"}),
        TAS,
        DEFAULT,
        (0.5, 0.3, 0.1, 1000.0),
    ),
    # reversed order: LCS 1 of 3, F=1/3 -> no text credit; name exact -> 0.1
    (
        "tas-reversed-text",
        out({"type": "type_and_submit", "name": "search_input", "text": "shoes running trail"}),
        TAS,
        DEFAULT,
        (0.5, 0.3, 0.2, 0.1),
    ),
    ("tas-vs-click", out({"type": "click", "name": "search_input"}), TAS, DEFAULT, (0.5, 0, 0, 0)),
    (
        "tas-weights",
        out({"type": "type_and_submit", "name": "search_input", "text": "trail running shoes"}),
        TAS,
        RewardConfig(tas_name=1, tas_text=2, tas_name_value=3, dars=4, type=5, format=6),
        (6, 5, 3, 7),
    ),
    # gold terminate
    ("terminate-exact", out({"type": "terminate"}), TERM, DEFAULT, (0.5, 0.3, 0, 0)),
    (
        "terminate-null-fields",
        out({"type": "terminate", "name": None, "text": None}),
        TERM,
        DEFAULT,
        (0.5, 0.3, 0, 0),
    ),
    ("terminate-vs-click", out({"type": "click", "name": "x"}), TERM, DEFAULT, (0.5, 0, 0, 0)),
    # binary ablation: format + 1 for an exact match
    (
        "binary-exact",
        out({"type": "click", "name": "add_to_cart"}),
        CLICK,
        RewardConfig(binary=True),
        (0.5, 0, 0, 1),
    ),
    (
        "binary-close-not-exact",
        out({"type": "click", "name": "add to cart now"}),
        CLICK,
        RewardConfig(binary=True),
        (0.5, 0, 0, 0),
    ),
    (
        "binary-tas-rouge",
        out({"type": "type_and_submit", "name": "search_input", "text": "running shoes"}),
        TAS,
        RewardConfig(binary=True),
        (0.5, 0, 0, 1),
    ),
    ("binary-invalid", "{", CLICK, RewardConfig(binary=True), (0, 0, 0, 0)),
    # lenient parsing only when configured
    (
        "lenient-fenced",
        "Sure:\n```json\n" + out({"type": "terminate"}) + "\n```",
        TERM,
        RewardConfig(strict=False),
        (0.5, 0.3, 0, 0),
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "gold", "cfg", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_reward_table(case, text, gold, cfg, expected):
    got = reward_components(text, gold, cfg)
    for key, want in zip(("format", "type", "attribute", "value"), expected):
        assert got[key] == pytest.approx(want), key
    assert got["total"] == pytest.approx(sum(expected))


def test_trl_callables_match_components_and_accept_chat_lists():
    funcs = build_reward_funcs()
    assert [f.__name__ for f in funcs] == ["format", "type", "attribute", "value"]
    completions = [
        [{"role": "assistant", "content": out({"type": "click", "name": "add_to_cart"})}],
        "garbage",
        out({"type": "terminate"}),
    ]
    golds = [json.dumps(CLICK.to_json()), json.dumps(CLICK.to_json()), json.dumps(TERM.to_json())]
    logged: dict[str, float] = {}
    columns = [f(completions, gold_action=golds, log_metric=logged.__setitem__) for f in funcs]
    assert columns == [[0.5, 0.0, 0.5], [0.3, 0.0, 0.3], [0.2, 0.0, 0.0], [1000.0, 0.0, 0.0]]
    assert logged["parse_failure_rate"] == pytest.approx(1 / 3)
    assert logged["pred_type/terminate"] == pytest.approx(1 / 3)
    assert logged["exact_match"] == pytest.approx(2 / 3)


def test_reward_functions_pickle_and_keep_config():
    cfg = RewardConfig(dars=7.0)
    for cls in (FormatReward, TypeReward, AttributeReward, ValueReward):
        clone = pickle.loads(pickle.dumps(cls(cfg)))
        assert clone.cfg == cfg and clone.__name__ == cls.component


def test_missing_gold_column_names_it():
    with pytest.raises(ValueError, match="gold_action"):
        FormatReward()(["x"])


def test_bad_gold_names_field():
    with pytest.raises(ValueError, match=r"action\.name"):
        reward_components("x", {"type": "click"})  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [{"dars": -1}, {"threshold": 1.5}, {"format": float("nan")}])
def test_config_validation(bad):
    with pytest.raises(ValueError, match="rewards\\."):
        RewardConfig(**bad)
