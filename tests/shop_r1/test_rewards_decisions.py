"""Decision tables at every threshold of the task's scoring, with hand-computed values.

- exact match and the binary reward must agree at exactly the ROUGE threshold (both `>=`);
- macro-F1 averages over the types in gold OR parsed predictions (a type that is only
  predicted counts with F1 0), as scikit-learn does; the reference metrics are checked
  against scikit-learn's definitions on hand rows and on random rows;
- ROUGE-L rows whose F-measure is worked out by hand.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shop_r1.actions import ACTION_TYPES, Action
from shop_r1.metrics import compute_metrics, exact_match
from shop_r1.parser import Parsed, parse_completion
from shop_r1.rewards import RewardConfig, reward_components
from shop_r1.rouge import lcs_length, rouge_l, tokens

sklearn_metrics = pytest.importorskip("sklearn.metrics")


def out(action: Action) -> str:
    return json.dumps({"rationale": "I want this.", "action": action.to_json()})


def ok(action: Action) -> Parsed:
    return Parsed(ok=True, action=action, rationale="r")


BAD = Parsed(ok=False, error="no JSON")

# ROUGE-L of [red running shoes size] vs [red running shoes ten]: LCS 3, P = R = 3/4,
# F = 2 * 9/16 / (3/2) = 0.75 exactly (all binary fractions: no rounding).
GOLD_TAS = Action("type_and_submit", "q", "red running shoes ten")
AT_075 = Action("type_and_submit", "q", "red running shoes size")
# [red running shoes] vs [red running shoes ten]: P = 1, R = 3/4, F = 6/7 = 0.857...
AT_857 = Action("type_and_submit", "q", "red running shoes")
# [red shoes] vs gold: P = 1, R = 1/2, F = 2/3
AT_667 = Action("type_and_submit", "q", "red shoes")


# (case, pred, threshold, exact match, binary value, hierarchical value)
THRESHOLD_ROWS = [
    ("F=0.75 at 0.75", AT_075, 0.75, True, 1.0, 0.1 + 750.0),
    ("F=0.75 at 0.76", AT_075, 0.76, False, 0.0, 0.1),
    ("F=0.75 at 0.74", AT_075, 0.74, True, 1.0, 0.1 + 750.0),
    ("F=6/7 at 6/7", AT_857, 6 / 7, True, 1.0, 0.1 + 6000 / 7),
    ("F=2/3 at 0.75", AT_667, 0.75, False, 0.0, 0.1),
    ("F=2/3 at 2/3", AT_667, 2 / 3, True, 1.0, 0.1 + 2000 / 3),
    ("F=1 at 1.0", GOLD_TAS, 1.0, True, 1.0, 0.1 + 1000.0),
    # a wrong name is never an exact match, whatever the text scores
    (
        "name differs",
        Action("type_and_submit", "q2", "red running shoes ten"),
        0.75,
        False,
        0.0,
        1000.0,
    ),
]


@pytest.mark.parametrize(
    ("case", "pred", "threshold", "exact", "binary", "value"),
    THRESHOLD_ROWS,
    ids=[r[0] for r in THRESHOLD_ROWS],
)
def test_exact_match_and_binary_reward_agree_at_the_threshold(
    case, pred, threshold, exact, binary, value
):
    assert exact_match(pred, GOLD_TAS, threshold) is exact
    parsed = parse_completion(out(pred))
    metrics = compute_metrics([GOLD_TAS], [parsed], threshold)
    assert metrics["exact_match"] == (1.0 if exact else 0.0)
    bin_parts = reward_components(
        out(pred), GOLD_TAS, RewardConfig(binary=True, threshold=threshold)
    )
    assert bin_parts == {
        "format": 0.5,
        "type": 0.0,
        "attribute": 0.0,
        "value": binary,
        "total": 0.5 + binary,
    }
    hier = reward_components(out(pred), GOLD_TAS, RewardConfig(threshold=threshold))
    assert hier["value"] == pytest.approx(value)
    assert hier["attribute"] == pytest.approx(0.2) and hier["type"] == 0.3


# (case, pred, gold, exact) for the three types
EXACT_ROWS = [
    ("terminate", Action("terminate"), Action("terminate"), True),
    ("click same", Action("click", "buy"), Action("click", "buy"), True),
    ("click padded name", Action("click", " buy "), Action("click", "buy"), True),
    ("click other name", Action("click", "buy_now"), Action("click", "buy"), False),
    ("click vs terminate", Action("terminate"), Action("click", "buy"), False),
    ("terminate vs click", Action("click", "buy"), Action("terminate"), False),
    (
        "tas empty texts",
        Action("type_and_submit", "q", ""),
        Action("type_and_submit", "q", ""),
        True,
    ),
    (
        "tas empty pred text",
        Action("type_and_submit", "q", ""),
        Action("type_and_submit", "q", "a"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("case", "pred", "gold", "exact"), EXACT_ROWS, ids=[r[0] for r in EXACT_ROWS]
)
def test_exact_match_table(case, pred, gold, exact):
    assert exact_match(pred, gold) is exact


# ---------------------------------------------------------------- metrics vs scikit-learn
def _reference(golds: list[Action], preds: list[Parsed], threshold: float = 0.75) -> dict:
    """The paper's metrics through scikit-learn: an unparsed output is the label
    `unparsed`, which never counts as a class of its own (labels = the types present)."""
    y_true = [g.type for g in golds]
    y_pred = [p.action.type if p.ok and p.action else "unparsed" for p in preds]
    present = [t for t in ACTION_TYPES if t in y_true or t in y_pred]
    p, r, f, support = sklearn_metrics.precision_recall_fscore_support(
        y_true, y_pred, labels=list(ACTION_TYPES), zero_division=0
    )
    return {
        "type_accuracy": sklearn_metrics.accuracy_score(y_true, y_pred),
        "type_macro_f1": sklearn_metrics.f1_score(
            y_true, y_pred, labels=present, average="macro", zero_division=0
        )
        if present
        else 0.0,
        "per_type": {
            t: {"precision": p[i], "recall": r[i], "f1": f[i], "support": int(support[i])}
            for i, t in enumerate(ACTION_TYPES)
        },
        "confusion": sklearn_metrics.confusion_matrix(
            y_true, y_pred, labels=[*ACTION_TYPES, "unparsed"]
        ).tolist()[:3],
        "exact_match": sum(
            bool(p.ok and p.action and exact_match(p.action, g, threshold))
            for g, p in zip(golds, preds, strict=True)
        )
        / len(golds),
    }


def _check_against_reference(golds, preds):
    got, ref = compute_metrics(golds, preds), _reference(golds, preds)
    assert got["type_accuracy"] == pytest.approx(ref["type_accuracy"])
    assert got["type_macro_f1"] == pytest.approx(ref["type_macro_f1"])
    assert got["exact_match"] == pytest.approx(ref["exact_match"])
    for t in ACTION_TYPES:
        for key in ("precision", "recall", "f1"):
            assert got["per_type"][t][key] == pytest.approx(ref["per_type"][t][key]), (t, key)
        assert got["per_type"][t]["support"] == ref["per_type"][t]["support"]
    rows = [[got["confusion"][g][p] for p in (*ACTION_TYPES, "unparsed")] for g in ACTION_TYPES]
    assert rows == ref["confusion"]


CLICK, TERM = Action("click", "buy"), Action("terminate")
TAS = Action("type_and_submit", "q", "shoes")


def test_macro_f1_keeps_a_type_that_only_appears_in_predictions():
    # gold: click, click; predicted: click, terminate. terminate has support 0 but was
    # predicted: its F1 (0) is averaged in. click: P = 1, R = 1/2, F1 = 2/3.
    m = compute_metrics([CLICK, CLICK], [ok(CLICK), ok(TERM)])
    assert m["per_type"]["click"]["f1"] == pytest.approx(2 / 3)
    assert m["per_type"]["terminate"] == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "exact_match": 0.0,
        "support": 0,
        "predicted": 1,
    }
    assert m["type_macro_f1"] == pytest.approx((2 / 3 + 0) / 2)
    # type_and_submit is in neither list: not averaged (macro over 2 types, not 3)
    assert m["type_macro_f1"] != pytest.approx((2 / 3) / 3)
    _check_against_reference([CLICK, CLICK], [ok(CLICK), ok(TERM)])


# (case, golds, preds, macro-F1, type accuracy, exact match, parse failure rate)
METRIC_ROWS = [
    ("all right", [CLICK, TERM], [ok(CLICK), ok(TERM)], 1.0, 1.0, 1.0, 0.0),
    # unparsed: a miss of click (recall 1/2), no precision denominator: P=1, F1=2/3
    ("unparsed lowers recall only", [CLICK, CLICK], [ok(CLICK), BAD], 2 / 3, 0.5, 0.5, 0.5),
    # right type, wrong name: type accuracy 1, exact match 0
    ("type right name wrong", [CLICK], [ok(Action("click", "sell"))], 1.0, 1.0, 0.0, 0.0),
    # all unparsed: click support 1, predicted 0 -> F1 0 over {click}
    ("all unparsed", [CLICK], [BAD], 0.0, 0.0, 0.0, 1.0),
    # three types: tas predicted as click. click: P=1/2 R=1 F=2/3; tas: 0; term: 1
    (
        "tas read as click",
        [CLICK, TAS, TERM],
        [ok(CLICK), ok(CLICK), ok(TERM)],
        (2 / 3 + 0 + 1) / 3,
        2 / 3,
        2 / 3,
        0.0,
    ),
]


@pytest.mark.parametrize(
    ("case", "golds", "preds", "macro", "acc", "exact", "pfr"),
    METRIC_ROWS,
    ids=[r[0] for r in METRIC_ROWS],
)
def test_metrics_table(case, golds, preds, macro, acc, exact, pfr):
    m = compute_metrics(golds, preds)
    assert m["type_macro_f1"] == pytest.approx(macro)
    assert m["type_accuracy"] == pytest.approx(acc)
    assert m["exact_match"] == pytest.approx(exact)
    assert m["parse_failure_rate"] == pytest.approx(pfr)
    assert m["n"] == len(golds) and m["schema"] == "shop-r1.score/1"
    _check_against_reference(golds, preds)


def test_metrics_of_nothing_and_mismatched_lengths():
    m = compute_metrics([], [])
    assert (m["n"], m["exact_match"], m["type_macro_f1"], m["parse_failure_rate"]) == (
        0,
        0.0,
        0.0,
        0.0,
    )
    with pytest.raises(ValueError, match="2 gold actions but 1 predictions"):
        compute_metrics([CLICK, CLICK], [ok(CLICK)])


def test_per_type_exact_match_and_counts():
    golds = [CLICK, CLICK, TAS, TERM]
    preds = [ok(CLICK), ok(Action("click", "x")), ok(TAS), BAD]
    m = compute_metrics(golds, preds)
    assert m["per_type"]["click"]["exact_match"] == 0.5
    assert m["per_type"]["type_and_submit"]["exact_match"] == 1.0
    assert m["per_type"]["terminate"]["exact_match"] == 0.0
    assert m["per_type"]["click"]["predicted"] == 2 and m["per_type"]["click"]["support"] == 2
    assert m["confusion"]["terminate"]["unparsed"] == 1
    assert m["threshold"] == 0.75


ACTIONS = st.sampled_from(
    [CLICK, Action("click", "sell"), TAS, Action("type_and_submit", "q", "boots"), TERM]
)
PARSED = st.one_of(ACTIONS.map(ok), st.just(BAD))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(ACTIONS, PARSED), min_size=1, max_size=12))
def test_metrics_match_scikit_learn_on_random_rows(pairs):
    golds, preds = [g for g, _ in pairs], [p for _, p in pairs]
    _check_against_reference(golds, preds)


# ---------------------------------------------------------------- ROUGE-L by hand
# (pred, ref, F) with P = LCS/len(pred), R = LCS/len(ref), F = 2PR/(P+R)
ROUGE_ROWS = [
    ("a b c", "a b c", 1.0),
    ("A-b_C!", "a b c", 1.0),  # normalised: lower case, split on non-alphanumerics
    ("a b c d", "a b c x", 0.75),  # LCS 3, P = R = 3/4
    ("a b", "a b c d", 2 / 3),  # LCS 2, P = 1, R = 1/2
    ("c b a", "a b c", 1 / 3),  # LCS 1 (order matters), P = R = 1/3
    ("a x b y", "a b", 2 / 3),  # LCS 2: P = 1/2, R = 1 -> 2/3
    ("x y", "a b", 0.0),
    ("", "", 1.0),  # both empty and equal: an exact copy is not penalised
    ("--", "--", 1.0),
    ("--", "..", 0.0),  # no tokens on either side, but different strings
    ("", "a", 0.0),
    ("a", "", 0.0),
    ("a a a", "a", 0.5),  # LCS 1: P = 1/3, R = 1 -> 0.5
    ("b a a", "a a b", 2 / 3),  # LCS 2, P = R = 2/3
]


@pytest.mark.parametrize(("pred", "ref", "f"), ROUGE_ROWS)
def test_rouge_l_by_hand(pred, ref, f):
    assert rouge_l(pred, ref) == pytest.approx(f)
    assert rouge_l(ref, pred) == pytest.approx(f)  # F is symmetric


def test_tokens_and_lcs():
    assert tokens("Add_to-Cart  NOW!") == ("add", "to", "cart", "now")
    assert tokens("Café über") == ("café", "über")
    assert lcs_length(("a", "b", "c"), ("a", "c")) == 2
    assert lcs_length(("a", "b"), ("c",)) == 0
    # the list path (very long inputs) agrees with the code-point path
    long_a = tuple(f"t{i % 7}" for i in range(500_001))
    assert lcs_length(long_a, ("t2", "t1", "zz")) == 2
    assert lcs_length(("t2", "t1", "zz"), long_a) == 2


def test_rouge_threshold_credit_is_zero_below_and_exact_at_threshold():
    gold = Action("click", "a_b_c_d")
    at = reward_components(out(Action("click", "a b c x")), gold, RewardConfig(threshold=0.75))
    below = reward_components(out(Action("click", "a b c x")), gold, RewardConfig(threshold=0.7501))
    assert at["value"] == 750.0 and below["value"] == 0.0


# ---------------------------------------------------------------- rewards: the rest of the table
def test_reward_bounds_are_the_largest_component_values():
    assert RewardConfig().bounds() == {
        "format": 0.5,
        "type": 0.3,
        "attribute": 0.2,
        "value": 1000.1,
    }
    cfg = RewardConfig(click_name=0.1, tas_name=0.2, tas_text=0.3, dars=5.0, tas_name_value=2.0)
    assert cfg.bounds() == {"format": 0.5, "type": 0.3, "attribute": 0.5, "value": 7.0}
    assert RewardConfig(click_name=0.9).bounds()["attribute"] == 0.9
    assert RewardConfig(binary=True, format=0.4).bounds() == {
        "format": 0.4,
        "type": 0.0,
        "attribute": 0.0,
        "value": 1.0,
    }


@pytest.mark.parametrize(
    "kw",
    [{"alpha": -0.1}, {"strict": True, "alpha": float("nan")}, {"dars": -1.0}, {"threshold": 1.5}],
)
def test_reward_config_rejects_bad_weights_after_the_booleans(kw):
    with pytest.raises(ValueError, match="rewards\\."):
        RewardConfig(**kw)


def test_reward_config_accepts_zero_weights():
    assert RewardConfig(format=0.0, type=0.0, dars=0.0, threshold=0.0, alpha=0.0).dars == 0.0


def test_empty_gold_fields_are_compared_as_empty():
    # a gold with an empty name/text: a prediction "XXXX" shares nothing with it
    empty_click = Action("click", "")
    parts = reward_components(out(Action("click", "XXXX")), empty_click)
    assert parts["value"] == 0.0 and parts["attribute"] == 0.2
    empty_text = Action("type_and_submit", "", "")
    parts = reward_components(out(Action("type_and_submit", "XXXX", "XXXX")), empty_text)
    assert parts["value"] == 0.0 and parts["attribute"] == pytest.approx(0.2)


def test_completion_text_of_every_trl_shape():
    from shop_r1.rewards import completion_text

    text = out(CLICK)
    assert completion_text(text) == text
    assert completion_text([{"role": "assistant", "content": text}]) == text
    parts = [
        {"type": "text", "text": text[:5]},
        "skip",
        {"type": "image"},
        {"type": "text", "text": text[5:]},
    ]
    assert completion_text([{"role": "assistant", "content": parts}]) == text
    assert completion_text([{"role": "assistant", "content": None}]) == ""
    assert (
        completion_text([]) == ""
        and completion_text(["plain"]) == ""
        and completion_text(None) == ""
    )


def test_reward_functions_take_dict_golds_and_use_their_config():
    from shop_r1.rewards import build_reward_funcs

    funcs = build_reward_funcs(RewardConfig(dars=10.0, format=0.25, type=0.5, click_name=0.75))
    gold = {"type": "click", "name": "buy"}
    completions = [out(CLICK), out(TERM), "nope"]
    got = [f(completions, gold_action=[gold, gold, gold]) for f in funcs]
    assert got == [[0.25, 0.25, 0.0], [0.5, 0.0, 0.0], [0.75, 0.0, 0.0], [10.0, 0.0, 0.0]]
    with pytest.raises(ValueError, match="gold_action"):
        funcs[0](completions, gold_action=[{"type": "jump"}] * 3)
    assert [f.__name__ for f in build_reward_funcs()] == ["format", "type", "attribute", "value"]
    assert build_reward_funcs()[3](["x"], gold_action=[gold]) == [0.0]


FENCED = "```json\n" + out(CLICK) + "\n```"


@pytest.mark.parametrize(("strict", "failure_rate", "exact"), [(True, 1.0, 0.0), (False, 0.5, 0.5)])
def test_reward_logs_follow_the_configured_parser(strict, failure_rate, exact):
    from shop_r1.rewards import build_reward_funcs

    fmt, typ, _, val = build_reward_funcs(RewardConfig(strict=strict, threshold=0.75))
    logged: dict[str, float] = {}

    def log_metric(name, value):
        logged[name] = value

    # a fenced click (valid only for the lenient parser) and an unparseable one
    completions = [FENCED, "no"]
    golds = [json.dumps(CLICK.to_json())] * 2
    for f in (fmt, typ, val):
        f(completions, gold_action=golds, log_metric=log_metric)
    assert logged["parse_failure_rate"] == failure_rate
    assert logged["exact_match"] == exact
    assert logged["pred_type/click"] == (0.0 if strict else 0.5)
    assert logged["pred_type/type_and_submit"] == 0.0 and logged["pred_type/terminate"] == 0.0


def test_type_log_counts_every_prediction_and_value_log_uses_the_threshold():
    from shop_r1.rewards import build_reward_funcs

    logged: dict[str, float] = {}
    _, typ, _, val = build_reward_funcs(RewardConfig(threshold=0.76))
    completions = [out(CLICK), out(CLICK), out(AT_075), out(TERM)]
    golds = [CLICK, CLICK, GOLD_TAS, CLICK]
    typ(completions, gold_action=golds, log_metric=lambda k, v: logged.__setitem__(k, v))
    val(completions, gold_action=golds, log_metric=lambda k, v: logged.__setitem__(k, v))
    assert logged["pred_type/click"] == 0.5
    assert logged["pred_type/type_and_submit"] == 0.25 and logged["pred_type/terminate"] == 0.25
    # F = 0.75 < 0.76: the tas row is no exact match; two clicks are
    assert logged["exact_match"] == 0.5
    with pytest.raises(ValueError):  # one gold per completion
        val(completions, gold_action=golds[:3], log_metric=lambda k, v: None)


# ---------------------------------------------------------------- parser: exact results
R = '"rationale": "I want it."'
A = '"action": {"type": "terminate"}'
# (case, text, strict, the whole Parsed result)
PARSE_ROWS = [
    ("not a string", 5, True, Parsed(ok=False, error="completion is not a string (int)")),
    ("empty", "  \n ", True, Parsed(ok=False, error="empty completion")),
    (
        "prose first",
        "I think {" + R + ", " + A + "}",
        True,
        Parsed(ok=False, error="output does not start with a JSON object"),
    ),
    (
        "two extra keys",
        "{" + R + ", " + A + ', "z": 1, "b": 2}',
        True,
        Parsed(ok=False, error="unexpected key(s): b, z"),
    ),
    (
        "trailing text",
        "{" + R + ", " + A + "} ok",
        True,
        Parsed(
            ok=False,
            error=f"extra text after the JSON object at char {len('{' + R + ', ' + A + '}')}",
        ),
    ),
    ("no rationale", "{" + A + "}", True, Parsed(ok=False, error="missing key: rationale")),
    (
        "blank rationale",
        '{"rationale": " ", ' + A + "}",
        True,
        Parsed(ok=False, error="rationale: expected a non-empty string"),
    ),
    (
        "rationale not a string",
        '{"rationale": 3, ' + A + "}",
        True,
        Parsed(ok=False, error="rationale: expected a non-empty string"),
    ),
    ("no action", "{" + R + "}", True, Parsed(ok=False, error="missing key: action")),
    (
        "bad action",
        "{" + R + ', "action": {"type": "jump"}}',
        True,
        Parsed(
            ok=False,
            error="action.type: expected one of click, type_and_submit, terminate, got 'jump'",
        ),
    ),
    (
        "no object at all",
        "just words",
        False,
        Parsed(ok=False, error="no JSON object found in the output"),
    ),
    (
        "nested too deeply",
        "[" * 100_000,
        True,
        Parsed(ok=False, error="output does not start with a JSON object"),
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "strict", "want"), PARSE_ROWS, ids=[r[0] for r in PARSE_ROWS]
)
def test_parser_failures_exactly(case, text, strict, want):
    assert parse_completion(text, strict=strict) == want


def test_parser_recursion_limit_is_a_failure_not_a_crash():
    deep = "{" + R + ', "action": ' + "[" * 100_000 + "]" * 100_000 + "}"
    got = parse_completion(deep)
    assert got.ok is False and got.error is not None


def test_lenient_search_gives_up_after_64_tries():
    valid = "{" + R + ", " + A + "}"
    ok_after_63 = parse_completion("{" * 63 + valid, strict=False)
    assert ok_after_63.ok is True and ok_after_63.action == Action("terminate")
    assert ok_after_63.rationale_span is not None
    assert parse_completion("{" * 64 + valid, strict=False) == Parsed(
        ok=False, error="no JSON object found in the output"
    )
    # a brace that does not start an object, then the real one
    assert parse_completion("{x} then " + valid, strict=False).ok is True
    assert parse_completion("{x} then {y}", strict=False).ok is False


def test_span_only_when_asked_and_only_for_the_top_level_rationale():
    from shop_r1.parser import parse_cached, rationale_value_span

    text = "{" + R + ", " + A + "}"
    assert parse_completion(text, with_span=False).rationale_span is None
    assert parse_cached(text).rationale_span is None
    start, end = parse_completion(text).rationale_span
    assert text[start:end] == "I want it."
    # a later object in lenient mode does not move the span
    lenient = text + ' {"rationale": "other"}'
    s, e = parse_completion(lenient, strict=False).rationale_span
    assert lenient[s:e] == "I want it."
    # nested "rationale" keys and depth bookkeeping
    nested = '{"rationale": "top", "a": {"b": {"c": 1}, "rationale": "inner"}}'
    s, e = rationale_value_span(nested, 0, len(nested))
    assert nested[s:e] == "top"
    assert rationale_value_span('{"a": "rationale"}', 0, 18) is None
    assert rationale_value_span("{}", 0, 2) is None


def test_reward_call_checks_lengths_and_names_the_missing_column():
    from shop_r1.rewards import FormatReward, ValueReward

    with pytest.raises(ValueError):  # one gold per completion, even without logging
        ValueReward()([out(CLICK), out(CLICK)], gold_action=[CLICK])
    with pytest.raises(ValueError) as err:
        FormatReward()([out(CLICK)])
    assert str(err.value) == (
        "reward 'format' needs the dataset column 'gold_action' (JSON string of the gold "
        "action); build RL rows with shop_r1.data.prompts.rl_rows"
    )
    assert repr(ValueReward(RewardConfig(dars=2.0))).startswith(
        "ValueReward(RewardConfig(format=0.5"
    )
