"""benchmarks/synth_ceiling.py: the replayed generator and the oracle's per-step
distribution (the bound quoted for issue 15's learning goal)."""

from __future__ import annotations

import re

from repo_paths import load_script

ceiling = load_script("benchmarks/synth_ceiling.py")


def _session_and_log(index: int):
    rec = ceiling.Recorder(f"0:{index}")
    return ceiling._generate(index, 0, rec), rec.log


def _same(a, b) -> bool:
    return [(s.page, s.url, ceiling._key(s.action)) for s in a.steps] == [
        (s.page, s.url, ceiling._key(s.action)) for s in b.steps
    ]


def test_replaying_every_draw_reproduces_the_session_and_fresh_draws_do_not():
    for index in range(5):
        original, log = _session_and_log(index)
        assert log, "the recorder saw no draws"
        assert _same(ceiling._generate(index, 0, ceiling.Replay(log, len(log), 12345)), original)
        assert not _same(ceiling._generate(index, 0, ceiling.Replay(log, 0, 12345)), original)


def test_the_generator_is_untouched_after_a_replay():
    from shop_r1.data import synth

    before = synth.generate_sessions(3, seed=0)
    _session_and_log(1)
    assert [s.steps for s in synth.generate_sessions(3, seed=0)] == [s.steps for s in before]


def _steps(pattern: str, limit: int = 4):
    found = []
    for index in range(60):
        session, _ = _session_and_log(index)
        for j, step in enumerate(session.steps):
            if step.action.type == "click" and re.search(pattern, step.action.name or ""):
                found.append((index, j, step.action))
                break
        if len(found) >= limit:
            return found
    return found


def test_a_wanted_option_is_the_only_click_once_the_prompt_is_fixed():
    # the profile names the wanted option and the history shows what is picked: the
    # generator clicks the first missing one; its only other outcome is leaving (terminate)
    steps = _steps(r"dropdown|option|variant")
    assert steps
    for index, j, gold in steps:
        counts, _ = ceiling.step_distribution(index, 0, j, 16, 7)
        assert counts.most_common(1)[0][0] == ceiling._key(gold)
        assert {k for k in counts if k[0] == "click"} == {ceiling._key(gold)}


def test_which_result_to_open_is_a_draw_the_oracle_cannot_always_win():
    shares = []
    for index, j, gold in _steps(r"result|productCard", limit=6):
        counts, _ = ceiling.step_distribution(index, 0, j, 32, 7)
        assert ceiling._key(gold) in counts
        shares.append(max(counts.values()) / sum(counts.values()))
    assert shares and min(shares) < 1.0
