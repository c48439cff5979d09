"""Parser tables (strict and lenient), rationale spans, ROUGE-L, exact match, metrics."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop_r1.actions import Action
from shop_r1.metrics import compute_metrics, exact_match
from shop_r1.parser import Parsed, parse_completion
from shop_r1.rouge import lcs_length, rouge_l, tokens

OK = '{"rationale": "I need shoes.", "action": {"type": "click", "name": "buy"}}'
CLICK_BUY = Action("click", "buy")

STRICT = [
    # (case, text, expected action or None, error fragment)
    ("plain", OK, CLICK_BUY, None),
    ("whitespace-around", "\n  " + OK + "\n", CLICK_BUY, None),
    (
        "action-first",
        '{"action": {"type": "terminate"}, "rationale": "Too pricey."}',
        Action("terminate"),
        None,
    ),
    (
        "tas",
        '{"rationale": "r", "action": {"type": "type_and_submit", "name": "q", "text": "tent"}}',
        Action("type_and_submit", "q", "tent"),
        None,
    ),
    (
        "terminate-null-fields",
        '{"rationale": "r", "action": {"type": "terminate", "name": null}}',
        Action("terminate"),
        None,
    ),
    (
        "unicode",
        '{"rationale": "Je veux ça 👟", "action": {"type": "click", "name": "ß"}}',
        Action("click", "ß"),
        None,
    ),
    # The paper's output format writes all three keys, "" (or null) where the type has none.
    (
        "paper-click-empty-text",
        '{"rationale": "r", "action": {"type": "click", "name": "buy", "text": ""}}',
        CLICK_BUY,
        None,
    ),
    (
        "paper-click-null-text",
        '{"rationale": "r", "action": {"type": "click", "name": "buy", "text": null}}',
        CLICK_BUY,
        None,
    ),
    (
        "paper-terminate-empty-fields",
        '{"rationale": "r", "action": {"type": "terminate", "name": "", "text": ""}}',
        Action("terminate"),
        None,
    ),
    (
        "paper-terminate-mixed",
        '{"rationale": "r", "action": {"type": "terminate", "name": null, "text": ""}}',
        Action("terminate"),
        None,
    ),
    (
        "click-whitespace-text",
        '{"rationale": "r", "action": {"type": "click", "name": "buy", "text": " "}}',
        None,
        "action.text: a click action has no text",
    ),
    (
        "click-text-number",
        '{"rationale": "r", "action": {"type": "click", "name": "buy", "text": 0}}',
        None,
        "action.text",
    ),
    (
        "terminate-with-text",
        '{"rationale": "r", "action": {"type": "terminate", "name": "", "text": "bye"}}',
        None,
        "action.text",
    ),
    (
        "click-empty-name-kept",
        '{"rationale": "r", "action": {"type": "click", "name": "", "text": ""}}',
        Action("click", ""),
        None,
    ),
    (
        "tas-null-text",
        '{"rationale": "r", "action": {"type": "type_and_submit", "name": "q", "text": null}}',
        None,
        "action.text: expected a string",
    ),
    ("fenced", "```json\n" + OK + "\n```", None, "does not start"),
    ("prose-before", "Answer: " + OK, None, "does not start"),
    ("trailing-text", OK + " thanks", None, "extra text"),
    ("two-objects", OK + OK, None, "extra text"),
    ("empty", "  ", None, "empty"),
    ("not-json", "{rationale: x}", None, "invalid JSON"),
    ("array", "[" + OK + "]", None, "does not start"),
    ("missing-rationale", '{"action": {"type": "terminate"}}', None, "rationale"),
    ("empty-rationale", '{"rationale": " ", "action": {"type": "terminate"}}', None, "rationale"),
    (
        "rationale-not-string",
        '{"rationale": 3, "action": {"type": "terminate"}}',
        None,
        "rationale",
    ),
    ("missing-action", '{"rationale": "r"}', None, "missing key: action"),
    ("action-not-object", '{"rationale": "r", "action": "click"}', None, "expected an object"),
    ("unknown-type", '{"rationale": "r", "action": {"type": "scroll"}}', None, "action.type"),
    (
        "click-no-name",
        '{"rationale": "r", "action": {"type": "click"}}',
        None,
        "action.name: missing",
    ),
    (
        "click-name-number",
        '{"rationale": "r", "action": {"type": "click", "name": 5}}',
        None,
        "action.name: expected a string",
    ),
    (
        "click-with-text",
        '{"rationale": "r", "action": {"type": "click", "name": "a", "text": "b"}}',
        None,
        "action.text",
    ),
    (
        "tas-no-text",
        '{"rationale": "r", "action": {"type": "type_and_submit", "name": "q"}}',
        None,
        "action.text: missing",
    ),
    (
        "terminate-with-name",
        '{"rationale": "r", "action": {"type": "terminate", "name": "x"}}',
        None,
        "action.name",
    ),
    (
        "unknown-action-key",
        '{"rationale": "r", "action": {"type": "terminate", "target": "x"}}',
        None,
        "action.target",
    ),
    (
        "extra-top-key",
        '{"rationale": "r", "action": {"type": "terminate"}, "confidence": 1}',
        None,
        "confidence",
    ),
    (
        "duplicate-key",
        '{"rationale": "r", "rationale": "s", "action": {"type": "terminate"}}',
        None,
        "duplicate",
    ),
    ("nan", '{"rationale": "r", "action": {"type": "terminate"}, "x": NaN}', None, "NaN"),
]

LENIENT = [
    ("fenced", "```json\n" + OK + "\n```", CLICK_BUY, None),
    ("prose-around", "Sure! Here you go: " + OK + " Hope it helps.", CLICK_BUY, None),
    ("first-of-two", OK + '{"rationale": "r", "action": {"type": "terminate"}}', CLICK_BUY, None),
    ("broken-brace-then-object", "{oops} " + OK, CLICK_BUY, None),
    (
        "extra-keys-ignored",
        '{"rationale": "r", "action": {"type": "terminate"}, "confidence": 1}',
        Action("terminate"),
        None,
    ),
    (
        "paper-format-in-prose",
        'Answer: {"rationale": "r", "action": {"type": "click", "name": "buy", "text": ""}}',
        CLICK_BUY,
        None,
    ),
    ("no-object", "I would click buy.", None, "no JSON object"),
    ("first-object-invalid", '{"a": 1} ' + OK, None, "rationale"),
    (
        "semantics-still-checked",
        '```{"rationale": "r", "action": {"type": "click"}}```',
        None,
        "action.name",
    ),
]


def _check(parsed: Parsed, action, error):
    if action is None:
        assert not parsed.ok and parsed.action is None
        assert error in parsed.error
    else:
        assert parsed.ok, parsed.error
        assert parsed.action == action and parsed.error is None


@pytest.mark.parametrize(("case", "text", "action", "error"), STRICT, ids=[c[0] for c in STRICT])
def test_strict_table(case, text, action, error):
    _check(parse_completion(text), action, error)


@pytest.mark.parametrize(("case", "text", "action", "error"), LENIENT, ids=[c[0] for c in LENIENT])
def test_lenient_table(case, text, action, error):
    _check(parse_completion(text, strict=False), action, error)


@pytest.mark.parametrize(
    ("text", "strict"),
    [
        (OK, True),
        ("  " + OK, True),
        ("```json\n" + OK + "```", False),
        ('{"action": {"type": "click", "name": "rationale"}, "rationale": "I need shoes."}', True),
        ('{"rationale": "I need \\"shoes\\".", "action": {"type": "terminate"}}', True),
        (
            '{"rationale": "I need shoes.", "action": {"type": "type_and_submit", "name": "x", "text": "{\\"rationale\\": \\"no\\"}"}}',
            True,
        ),
    ],
)
def test_rationale_span_points_at_the_value(text, strict):
    parsed = parse_completion(text, strict=strict)
    start, end = parsed.rationale_span
    assert json.loads('"' + text[start:end] + '"') == parsed.rationale


def test_non_string_and_deep_nesting_do_not_raise():
    assert parse_completion(None).error.startswith("completion is not a string")  # type: ignore[arg-type]
    assert not parse_completion("{" * 200_000).ok
    assert not parse_completion('{"a":' * 100_000, strict=False).ok
    assert not parse_completion("[" * 100_000 + "]" * 100_000).ok


# ---- ROUGE-L ---------------------------------------------------------------


def _lcs_reference(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


@pytest.mark.parametrize(
    ("pred", "ref", "expected"),
    [
        ("trail running shoes", "trail running shoes", 1.0),
        ("Trail-Running, SHOES!", "trail running shoes", 1.0),
        ("running shoes", "trail running shoes", 0.8),  # P=1, R=2/3
        ("red running shoes", "running shoes for men", 4 / 7),  # P=2/3, R=1/2
        ("shoes running trail", "trail running shoes", 1 / 3),
        ("add_to_cart", "Add to cart", 1.0),
        ("tent", "trail running shoes", 0.0),
        ("", "x", 0.0),
        ("", "", 1.0),
        ("--", "--", 1.0),
        ("--", "++", 0.0),
        ("the the the", "the", 0.5),  # P=1/3, R=1
    ],
)
def test_rouge_l_hand_values(pred, ref, expected):
    assert rouge_l(pred, ref) == pytest.approx(expected)


def test_tokens_are_lowercase_alphanumeric_runs():
    assert tokens("Hello, World_42! Ça-va") == ("hello", "world", "42", "ça", "va")


@given(
    st.lists(st.sampled_from("abcde"), max_size=30), st.lists(st.sampled_from("abcdf"), max_size=30)
)
def test_lcs_matches_reference_dp(a, b):
    assert lcs_length(tuple(a), tuple(b)) == _lcs_reference(a, b)


# ---- exact match and metrics ------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        (Action("terminate"), Action("terminate"), True),
        (Action("click", "buy"), Action("click", "buy"), True),
        (Action("click", " buy "), Action("click", "buy"), True),
        (Action("click", "buy_now"), Action("click", "buy"), False),
        (Action("click", "buy"), Action("terminate"), False),
        (
            Action("type_and_submit", "q", "running shoes"),
            Action("type_and_submit", "q", "trail running shoes"),
            True,
        ),
        (
            Action("type_and_submit", "q", "shoes"),
            Action("type_and_submit", "q", "trail running shoes"),
            False,
        ),
        (
            Action("type_and_submit", "q2", "trail running shoes"),
            Action("type_and_submit", "q", "trail running shoes"),
            False,
        ),
    ],
)
def test_exact_match(pred, gold, expected):
    assert exact_match(pred, gold) is expected


def _p(action):
    return Parsed(ok=True, action=action, rationale="r")


def test_metrics_hand_computed():
    golds = [
        Action("click", "a"),
        Action("click", "b"),
        Action("type_and_submit", "s", "x y"),
        Action("terminate"),
        Action("terminate"),
    ]
    preds = [
        _p(Action("click", "a")),
        _p(Action("click", "c")),
        Parsed(ok=False, error="bad"),
        _p(Action("terminate")),
        _p(Action("click", "a")),
    ]
    m = compute_metrics(golds, preds)
    assert m["schema"] == "shop-r1.score/1" and m["n"] == 5
    assert m["exact_match"] == pytest.approx(0.4)
    assert m["type_accuracy"] == pytest.approx(0.6)
    assert m["parse_failure_rate"] == pytest.approx(0.2)
    click, tas, term = (m["per_type"][k] for k in ("click", "type_and_submit", "terminate"))
    assert (click["precision"], click["recall"], click["f1"]) == pytest.approx((2 / 3, 1.0, 0.8))
    assert (tas["precision"], tas["recall"], tas["f1"], tas["support"]) == (0.0, 0.0, 0.0, 1)
    assert (term["precision"], term["recall"], term["f1"]) == pytest.approx((1.0, 0.5, 2 / 3))
    assert (click["exact_match"], term["exact_match"]) == pytest.approx((0.5, 0.5))
    assert m["type_macro_f1"] == pytest.approx((0.8 + 0 + 2 / 3) / 3)
    assert m["confusion"]["type_and_submit"]["unparsed"] == 1
    assert m["confusion"]["terminate"] == {
        "click": 1,
        "type_and_submit": 0,
        "terminate": 1,
        "unparsed": 0,
    }


def test_metrics_macro_f1_skips_absent_types_and_empty_input():
    m = compute_metrics([Action("terminate")], [_p(Action("terminate"))])
    assert m["type_macro_f1"] == 1.0
    empty = compute_metrics([], [])
    assert empty["n"] == 0 and empty["exact_match"] == 0.0
