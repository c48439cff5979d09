"""Fuzzing: the parser, rewards and metrics never raise and rewards stay in bounds."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shop_r1.actions import ACTION_TYPES, Action
from shop_r1.metrics import compute_metrics
from shop_r1.parser import parse_completion
from shop_r1.rewards import RewardConfig, reward_components

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
action_like = st.fixed_dictionaries(
    {"type": st.sampled_from([*ACTION_TYPES, "scroll", ""])},
    optional={
        "name": st.text(max_size=30) | st.none() | st.integers(),
        "text": st.text(max_size=60) | st.none(),
    },
)
outputs = st.one_of(
    st.text(),
    json_values.map(json.dumps),
    st.builds(
        lambda r, a: json.dumps({"rationale": r, "action": a}), st.text(max_size=40), action_like
    ),
    st.builds(
        lambda r, a, pre, post: pre + json.dumps({"rationale": r, "action": a}) + post,
        st.text(max_size=20),
        action_like,
        st.text(max_size=10),
        st.text(max_size=10),
    ),
)
golds = st.one_of(
    st.just(Action("terminate")),
    st.builds(lambda n: Action("click", n), st.text(min_size=1, max_size=30)),
    st.builds(
        lambda n, t: Action("type_and_submit", n, t),
        st.text(min_size=1, max_size=20),
        st.text(min_size=1, max_size=60),
    ),
)
configs = st.sampled_from(
    [
        RewardConfig(),
        RewardConfig(binary=True),
        RewardConfig(strict=False),
        RewardConfig(threshold=0.0),
    ]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(outputs, golds, configs)
def test_rewards_never_raise_and_stay_in_bounds(text, gold, cfg):
    parts = reward_components(text, gold, cfg)
    bounds = cfg.bounds()
    for key, bound in bounds.items():
        assert math.isfinite(parts[key]) and 0.0 <= parts[key] <= bound + 1e-9, (key, parts)
    assert parts["total"] == sum(parts[k] for k in bounds)
    parsed = parse_completion(text, strict=cfg.strict)
    assert parsed.ok == (parts["format"] > 0)
    if parsed.ok and parsed.rationale_span:
        start, end = parsed.rationale_span
        assert 0 <= start <= end <= len(text)


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(), max_size=400), st.booleans())
def test_parser_never_raises_on_unicode(text, strict):
    parsed = parse_completion(text, strict=strict)
    assert parsed.ok == (parsed.error is None)


def test_parser_survives_huge_and_deep_inputs():
    huge = json.dumps(
        {"rationale": "r" * 2_000_000, "action": {"type": "click", "name": "n" * 100_000}}
    )
    assert parse_completion(huge).ok
    for text in (
        "{" * 1_000_000,
        '{"a":[' * 300_000,
        "[" * 500_000,
        "{}" * 500_000,
        '"' * 1_000_000,
    ):
        for strict in (True, False):
            assert not parse_completion(text, strict=strict).ok
    deep = (
        '{"rationale": "r", "action": {"type": "click", "name": "x"}, "z": '
        + "[" * 50_000
        + "]" * 50_000
        + "}"
    )
    assert not parse_completion(deep).ok
    reward_components(huge, Action("click", "n" * 1000))


@settings(max_examples=100)
@given(st.lists(st.tuples(golds, outputs), max_size=20))
def test_metrics_never_raise_and_are_fractions(pairs):
    report = compute_metrics([g for g, _ in pairs], [parse_completion(t) for _, t in pairs])
    for key in ("exact_match", "type_accuracy", "type_macro_f1", "parse_failure_rate"):
        assert 0.0 <= report[key] <= 1.0
    assert sum(sum(row.values()) for row in report["confusion"].values()) == len(pairs)
