"""benchmarks/reward_vs_exact.py: the expected training reward of each candidate answer
against its chance of an exact match, on crafted steps worked out by hand and on a few
real held-out steps."""

from __future__ import annotations

from collections import Counter

import pytest
from repo_paths import load_script

rve = load_script("benchmarks/reward_vs_exact.py")

ADD = ("click", "add_to_cart", "")
OPTION = ("click", "option_color_black", "")
TERMINATE = ("terminate", "", "")


def _step(counts: dict, **overrides):
    reward = rve.TrainingReward(rve.grpo_config(**overrides))
    return rve.analyse_step(Counter(counts), reward)


def test_add_to_cart_over_an_option_click_agrees_with_the_hand_values():
    # both clicks: format 0.5 + type 0.3 + attribute 0.2 whatever the gold, + 1000 x P(name)
    r = _step({ADD: 6, OPTION: 4})
    assert r.expected_reward[ADD] == pytest.approx(0.5 + 0.3 + 0.2 + 600.0)
    assert r.expected_reward[OPTION] == pytest.approx(0.5 + 0.3 + 0.2 + 400.0)
    assert r.p_exact == {ADD: pytest.approx(0.6), OPTION: pytest.approx(0.4)}
    assert r.reward_best == r.exact_best == [ADD]
    assert r.agree and r.lost == 0


def test_terminate_as_the_likeliest_answer_is_outbid_by_a_named_click():
    # terminate earns format + type (0.5 + 0.3 x 0.6 = 0.68); the click 0.5 + 0.4 x 1000.5
    r = _step({TERMINATE: 6, ADD: 4})
    assert r.expected_reward[TERMINATE] == pytest.approx(0.68)
    assert r.expected_reward[ADD] == pytest.approx(0.5 + 0.4 * 1000.5)
    assert r.exact_best == [TERMINATE] and r.reward_best == [ADD]
    assert not r.agree and r.lost == pytest.approx(0.2)
    # the binary reward pays every exact match the same: it agrees
    b = _step({TERMINATE: 6, ADD: 4}, binary_reward=True)
    assert b.expected_reward == {TERMINATE: pytest.approx(1.1), ADD: pytest.approx(0.9)}
    assert b.agree and b.lost == 0


def test_without_dars_every_click_ties_and_the_tie_costs_half_the_gap():
    r = _step({ADD: 6, OPTION: 4}, dars=0.0)
    assert r.expected_reward[ADD] == r.expected_reward[OPTION] == pytest.approx(1.0)
    assert r.reward_best == sorted([ADD, OPTION])
    assert not r.agree and r.lost == pytest.approx(0.6 - 0.5)


# ROUGE-L of "blue trail shoes" vs "black trail shoes": LCS 2 of 3 + 3 tokens, F = 2/3.
RED = ("type_and_submit", "q", "red running shoes")
BLUE = ("type_and_submit", "q", "blue trail shoes")
BLACK = ("type_and_submit", "q", "black trail shoes")
QUERIES = {RED: 36, BLUE: 32, BLACK: 32}


def test_the_configured_threshold_sets_the_credit_and_the_metric_keeps_its_own():
    # at 0.75 the 2/3 overlap earns nothing: each query is worth 1000 x its own share
    at_075 = _step(QUERIES)
    assert at_075.expected_reward[RED] == pytest.approx(0.5 + 0.3 + 0.2 + 0.1 + 360.0)
    assert at_075.reward_best == [RED] and at_075.agree
    # at 0.6 the two trail-shoe queries credit each other 2/3 x 1000
    at_06 = _step(QUERIES, rouge_threshold=0.6)
    assert at_06.expected_reward[BLUE] == pytest.approx(1.1 + 320.0 + 0.32 * 2000 / 3)
    assert at_06.reward_best == sorted([BLUE, BLACK])
    # exact match stays at the metric's 0.75: the queries are not exact for each other
    assert at_06.p_exact[BLUE] == pytest.approx(0.32) and at_06.exact_best == [RED]
    assert not at_06.agree and at_06.lost == pytest.approx(0.04)


def test_trls_reward_weights_weigh_each_function():
    # format, type, attribute, value: the value's weight takes DARS down to 1
    r = _step({TERMINATE: 6, ADD: 4}, reward_weights=[1.0, 1.0, 1.0, 0.001])
    assert r.expected_reward[ADD] == pytest.approx(0.5 + 0.4 * (0.3 + 0.2 + 1.0))
    assert r.expected_reward[TERMINATE] == pytest.approx(0.68)


def test_answers_no_continuation_gave_are_scored_but_never_exact():
    reward = rve.TrainingReward(rve.grpo_config())
    r = rve.analyse_step(Counter({ADD: 6, OPTION: 4}), reward, extra=[TERMINATE, ADD])
    assert set(r.expected_reward) == {ADD, OPTION, TERMINATE}
    assert r.expected_reward[TERMINATE] == pytest.approx(0.5) and r.p_exact[TERMINATE] == 0


def test_normalise_then_sum_is_refused():
    with pytest.raises(ValueError, match="multi_objective_aggregation"):
        rve.TrainingReward(rve.grpo_config(multi_objective_aggregation="normalize_then_sum"))


@pytest.mark.parametrize(
    ("url", "counts", "kind"),
    [
        ("https://cartly.example/", {("click", "nav_home", ""): 1}, "home page"),
        ("https://cartly.example/cart", {("click", "sc-proceed", ""): 1}, "cart page"),
        ("https://shopmart.example/s?k=mat&page=2", {TERMINATE: 1}, "results page"),
        ("https://buyhub.example/b?node=home&page=1", {TERMINATE: 1}, "results page"),
        (
            "https://buyhub.example/dp/000000042",
            {OPTION: 3, TERMINATE: 1},
            "product page, option to pick",
        ),
        (
            "https://buyhub.example/dp/000000042",
            {ADD: 3, TERMINATE: 1},
            "product page, options done",
        ),
    ],
)
def test_kind_of_step_reads_the_url_path_not_the_host(url, counts, kind):
    assert rve.step_kind(url, Counter(counts)) == kind


def test_real_held_out_steps_binary_agrees_everywhere_and_gold_clicks_are_on_the_page():
    steps = rve.held_out_steps(120, 0, 0.1, 12, 8)
    assert len(steps) == 12
    for s in steps:
        assert sum(s.counts.values()) == 8  # every continuation reproduced the prompt
        for key in s.counts:
            if key[0] == "click":
                assert key in s.extra, f"{s.id}: {key[1]} not found on the page"
    binary = rve.TrainingReward(rve.grpo_config(binary_reward=True))
    results = [rve.analyse_step(s.counts, binary, extra=s.extra) for s in steps]
    assert all(r.agree for r in results)
    table = rve.summarise(steps, results)["table"]
    assert table["all"]["n"] == 12 and table["all"]["lost"] == 0
    assert sum(row["n"] for kind, row in table.items() if kind != "all") == 12
    assert len(table) >= 4  # home, results and product pages come up in 12 steps
