"""Data: schema, files, synthetic generator, splits, prompts, OPeRA conversion, CLIs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shop_r1.actions import Action
from shop_r1.cli import app
from shop_r1.data.io import check_sessions, load_sessions, write_sessions
from shop_r1.data.opera import convert_rows, read_opera_rows
from shop_r1.data.prompts import SYSTEM_PROMPT, build_messages, rl_rows, sft_rows
from shop_r1.data.schema import Session, Step
from shop_r1.data.split import split_by_session
from shop_r1.data.synth import generate_sessions, parse_mix
from shop_r1.parser import parse_completion
from shop_r1_doctor.errors import ToolError

runner = CliRunner()


def _session(sid="s1", n=3, page="<html><body><a name='x'>X</a></body></html>"):
    steps = [
        Step(
            page=f"{page}{i}", action=Action("click", f"x{i}"), rationale=f"reason {i}", url=f"u{i}"
        )
        for i in range(n)
    ]
    return Session(sid, steps)


def test_synth_is_deterministic_valid_and_round_trips(tmp_path):
    a, b = generate_sessions(40, seed=3), generate_sessions(40, seed=3)
    assert [s.to_json() for s in a] == [s.to_json() for s in b]
    assert [s.to_json() for s in a] != [s.to_json() for s in generate_sessions(40, seed=4)]
    for ext in ("jsonl", "parquet"):
        path = tmp_path / f"s.{ext}"
        write_sessions(a, path)
        assert [s.to_json() for s in load_sessions(path)] == [s.to_json() for s in a]
    for s in a:  # every gold name is on the page the shopper acted on
        for step in s.steps:
            if step.action.name:
                assert f'name="{step.action.name}"' in step.page


def test_synth_mix_controls_the_action_types():
    only_clicks = generate_sessions(30, seed=1, mix={"click": 1.0})
    kinds = {st.action.type for s in only_clicks for st in s.steps[:-1]}
    assert kinds == {"click"}
    with pytest.raises(ValueError, match="unknown action type"):
        parse_mix("scroll=1")
    with pytest.raises(ValueError, match="not type=weight"):
        parse_mix("click")


def test_validate_reports_every_bad_row_with_line(tmp_path):
    good = json.dumps(_session().to_json())
    bad_rows = [
        "{not json",
        json.dumps({"session_id": "s2", "steps": []}),
        json.dumps(
            {
                "session_id": "s3",
                "steps": [
                    {"page": "<p/>", "rationale": "r", "action": {"type": "click", "name": ""}}
                ],
            }
        ),
        json.dumps(
            {
                "session_id": "s4",
                "steps": [{"page": "<p/>", "rationale": "", "action": {"type": "jump"}}],
                "extra": 1,
            }
        ),
        good,  # duplicate session id
    ]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([good, *bad_rows]) + "\n")
    _, problems = check_sessions(path)
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6)]
    assert "steps: expected a non-empty list" in problems[1]
    assert "steps[0].action.name: empty" in problems[2]
    assert (
        "extra: unknown key" in problems[3]
        and "rationale" in problems[3]
        and "action.type" in problems[3]
    )
    assert "already used on line 1" in problems[4]
    result = runner.invoke(app, ["data", "validate", str(path)])
    assert result.exit_code == 1
    assert f"{path}:3: steps: expected a non-empty list" in result.output
    with pytest.raises(ToolError, match=r"d\.jsonl:2: not valid JSON .*and 4 more"):
        load_sessions(path)


def test_split_by_session_is_disjoint_and_deterministic():
    sessions = [_session(f"s{i}", 2) for i in range(50)]
    train, test = split_by_session(sessions, 0.2, seed=1)
    assert len(test) == 10 and len(train) == 40
    assert not {s.session_id for s in train} & {s.session_id for s in test}
    assert split_by_session(sessions, 0.2, seed=1)[1] == test
    assert len(split_by_session(sessions[:2], 0.01)[1]) == 1


@pytest.mark.parametrize(
    ("n", "fraction", "n_train", "n_test"),
    [
        (0, 0.5, 0, 0),
        (1, 0.0, 1, 0),
        (1, 0.6, 1, 0),  # one session trains: holding it out would leave nothing to train
        (1, 0.99, 1, 0),
        (1, 1.0, 0, 1),
        (2, 0.0, 2, 0),
        (2, 0.01, 1, 1),
        (2, 0.99, 1, 1),  # round(1.98) = 2 would hold out both
        (3, 0.9, 1, 2),
        (10, 0.96, 1, 9),
        (10, 1.0, 0, 10),
    ],
)
def test_split_keeps_a_training_session_below_a_fraction_of_one(n, fraction, n_train, n_test):
    train, test = split_by_session([_session(f"s{i}", 1) for i in range(n)], fraction, seed=2)
    assert (len(train), len(test)) == (n_train, n_test)


def test_prompts_full_latest_and_budget():
    session = _session(n=4, page="<html>" + "y" * 400 + "</html>")
    full = build_messages(session, 3)
    assert full[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert SYSTEM_PROMPT.endswith("OUTPUT A SINGLE JSON OBJECT, NOTHING ELSE.")
    user = full[1]["content"]
    assert user.count("## Step") == 4 and "reason 0" in user and "(current)" in user
    assert "reason 3" not in user  # the answer never leaks into its own prompt
    latest = build_messages(session, 3, context="latest")[1]["content"]
    assert latest.count("## Step") == 1
    # A budget drops the oldest pages first, keeping their actions and rationales.
    tight = build_messages(session, 3, max_tokens=330)[1]["content"]
    assert "reason 0" in tight and "omitted" in tight
    assert tight.index("omitted") < tight.index("reason 0")
    assert len(tight) / 4 <= 330
    tiny = build_messages(session, 3, max_tokens=60)[1]["content"]
    assert "reason 0" not in tiny and "truncated" in tiny and len(tiny) / 4 <= 60


def test_sft_and_rl_rows():
    sessions = [_session("a", 2)]
    sft, rl = sft_rows(sessions), rl_rows(sessions)
    assert [r["id"] for r in sft] == ["a#0", "a#1"] == [r["id"] for r in rl]
    completion = sft[1]["completion"][0]
    assert completion["role"] == "assistant"
    parsed = parse_completion(completion["content"])
    assert parsed.ok and parsed.action == Action("click", "x1") and parsed.rationale == "reason 1"
    # SFT targets use the paper's output format: all three action keys, "" where none.
    assert json.loads(completion["content"])["action"] == {
        "type": "click",
        "name": "x1",
        "text": "",
    }
    assert json.loads(rl[1]["gold_action"]) == {"type": "click", "name": "x1"}


def test_system_prompt_examples_parse_strictly():
    """Every action example the system prompt shows is accepted by the strict parser once
    its placeholders are filled, so the prompt never teaches a format the reward rejects."""
    import re

    examples = re.findall(r"^- (\{.*?\}):", SYSTEM_PROMPT, re.M)
    assert len(examples) == 3
    for example in examples:
        action = json.loads(re.sub(r"<[^>]+>", "v", example))
        assert set(action) == {"type", "name", "text"}
        text = json.dumps({"rationale": "r", "action": action})
        assert parse_completion(text).ok, (example, parse_completion(text).error)


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (Action("click", "b"), {"type": "click", "name": "b", "text": ""}),
        (Action("terminate"), {"type": "terminate", "name": "", "text": ""}),
        (
            Action("type_and_submit", "q", "t"),
            {"type": "type_and_submit", "name": "q", "text": "t"},
        ),
    ],
)
def test_paper_json_round_trips_through_the_parser(action, expected):
    assert action.to_paper_json() == expected
    assert Action.from_json(action.to_paper_json()) == action


OPERA_ROWS = [
    {
        "session_id": "u1",
        "action_id": "b",
        "timestamp": "2025-04-14T21:53:00Z",
        "action_type": "click",
        "click_type": "product_link",
        "semantic_id": "results.item_1.title",
        "url": "https://a/s",
        "simplified_html": "<div name='results.item_1.title'>T</div>",
        "rationale": "Looks right.",
        "input_text": None,
    },
    {
        "session_id": "u1",
        "action_id": "a",
        "timestamp": "2025-04-14T21:52:00Z",
        "action_type": "input",
        "click_type": None,
        "semantic_id": "nav_bar.search",
        "url": "https://a/",
        "simplified_html": "<input name='nav_bar.search'/>",
        "rationale": None,
        "input_text": "rice cooker",
    },
    {
        "session_id": "u1",
        "action_id": "c",
        "timestamp": "2025-04-14T21:54:00Z",
        "action_type": "terminate",
        "semantic_id": None,
        "simplified_html": "<div/>",
        "rationale": "Too expensive.",
    },
    {
        "session_id": "u2",
        "action_id": "d",
        "timestamp": "1",
        "action_type": "scroll",
        "simplified_html": "<div/>",
    },
    {
        "session_id": "u2",
        "action_id": "e",
        "timestamp": "2",
        "action_type": "click",
        "semantic_id": "",
        "simplified_html": "<div/>",
    },
]


def test_opera_conversion_from_local_files(tmp_path):
    path = tmp_path / "opera.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in OPERA_ROWS))
    sessions, report = convert_rows(read_opera_rows(str(path)))
    assert [s.session_id for s in sessions] == ["u1"]
    steps = sessions[0].steps
    assert [s.action for s in steps] == [
        Action("type_and_submit", "nav_bar.search", "rice cooker"),
        Action("click", "results.item_1.title"),
        Action("terminate"),
    ]
    assert (
        steps[0].rationale == "I'll search for rice cooker."
        and steps[1].rationale == "Looks right."
    )
    assert report["skipped"] == {"unknown action_type 'scroll'": 1, "click without semantic_id": 1}
    assert report["rationale_filled"] == 1
    out = tmp_path / "conv.parquet"
    result = runner.invoke(app, ["data", "convert", str(path), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 1 sessions (3 steps) from 5 rows" in result.output
    assert load_sessions(out)[0].steps[2].action == Action("terminate")


def test_synth_and_stats_cli(tmp_path):
    out = tmp_path / "s.jsonl"
    result = runner.invoke(
        app,
        [
            "data",
            "synth",
            "--sessions",
            "20",
            "--seed",
            "1",
            "--output",
            str(out),
            "--mix",
            "click=0.8,type_and_submit=0.1,terminate=0.1",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["data", "stats", str(out), "--json"])
    report = json.loads(result.output)
    assert report["sessions"] == 20 and sum(report["action_types"].values()) == report["steps"]
    assert report["context_tokens"]["counted"] == report["steps"]
    assert report["token_counter"].startswith("approximate")
    bad = runner.invoke(
        app, ["data", "synth", "--sessions", "2", "--output", str(out), "--mix", "jump=1"]
    )
    assert bad.exit_code != 0


def test_persona_leads_the_prompt_and_survives_the_budget():
    session = generate_sessions(5, seed=3)[2]
    persona = session.meta["persona"]
    assert persona.startswith("wants a ") and "budget up to $" in persona
    last = len(session.steps) - 1
    for context in ("full", "latest"):
        user = build_messages(session, last, context=context, max_tokens=120)[1]["content"]
        assert user.startswith(f"Customer profile: {persona}\n\n")
    # a session without one (e.g. OPeRA rows without a user join) has no profile line
    bare = Session(session.session_id, session.steps, {"source": "test"})
    assert "Customer profile" not in build_messages(bare, 0)[1]["content"]
