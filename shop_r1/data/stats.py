"""Summary numbers of a session file (`shop-r1 data stats`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from shop_r1.actions import ACTION_TYPES
from shop_r1.data.prompts import build_messages
from shop_r1.data.schema import Session


def percentile(values: list[int], q: float) -> int:
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def session_stats(
    sessions: Iterable[Session],
    *,
    context: str = "full",
    count_tokens: Callable[[Any], int] | None = None,
    sample: int | None = None,
    on_prompt: Callable[[], None] | None = None,
    total_steps: int | None = None,
) -> dict[str, Any]:
    """Action mix, steps per session, and prompt-length percentiles (system + user).

    `count_tokens` gets the text (or, when it has a truthy `chat` attribute, the messages
    list so it can apply a chat template). `sample` caps how many prompts are counted,
    evenly spaced, because exact tokenisation of 100k long prompts is slow. `sessions`
    is read once, so a stream works in constant memory; with `sample` it needs
    `total_steps` (else the sessions are first gathered in a list to count them).
    """
    from shop_r1.data.prompts import approx_tokens

    count: Callable[[Any], int] = count_tokens or approx_tokens
    wants_messages = bool(getattr(count, "chat", False))
    if sample and total_steps is None:
        sessions = list(sessions)
        total_steps = sum(len(s.steps) for s in sessions)
    picks: set[int] | None = None
    if sample and total_steps is not None and total_steps > sample:
        stride = total_steps / sample
        picks = {int(k * stride) for k in range(sample)}
    kinds: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    lengths: list[int] = []
    tokens: list[int] = []
    index = 0
    for session in sessions:
        lengths.append(len(session.steps))
        if session.steps:
            ends[session.steps[-1].action.type] += 1
        for i, step in enumerate(session.steps):
            kinds[step.action.type] += 1
            if picks is None or index in picks:
                messages = build_messages(session, i, context=context)
                tokens.append(
                    count(messages)
                    if wants_messages
                    else sum(count(m["content"]) for m in messages)
                )
                if on_prompt:
                    on_prompt()
            index += 1
    empty = {"p50": 0, "p90": 0, "p95": 0, "p99": 0, "max": 0}
    return {
        "sessions": len(lengths),
        "steps": sum(lengths),
        "action_types": {k: kinds.get(k, 0) for k in ACTION_TYPES},
        "session_end": dict(ends),
        "steps_per_session": {
            "mean": sum(lengths) / max(len(lengths), 1),
            "min": min(lengths, default=0),
            "p50": percentile(lengths, 50) if lengths else 0,
            "p90": percentile(lengths, 90) if lengths else 0,
            "max": max(lengths, default=0),
        },
        "context": context,
        "context_tokens": {
            "counted": len(tokens),
            **(
                {f"p{q}": percentile(tokens, q) for q in (50, 90, 95, 99)} | {"max": max(tokens)}
                if tokens
                else empty
            ),
        },
    }
