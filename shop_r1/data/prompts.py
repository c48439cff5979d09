"""Prompts and training rows (paper section 3: f(c_1..t, a_1..t-1, r_1..t-1) -> (r_t, a_t)).

The user message starts with the customer's profile when the session has one
(`meta.persona`, a string). Context modes:
- `full` (the paper's best setting): every earlier step's page, action and rationale,
  then the current page.
- `latest`: the current page only.

Token budget (`max_tokens`): the whole user message must fit. Drop, in this order, the
oldest earlier PAGES (their actions and rationales stay: they are short and carry the
shopper's intent), then the oldest earlier steps altogether, and last cut the tail of the
current page. `count_tokens` defaults to `approx_tokens` (1 token per 4 characters,
rounded up), which is close for English HTML with Qwen-family tokenizers; pass a real
tokenizer's counter for exact budgets.

Rows (TRL's conversational formats; TRL applies the model's chat template):
- SFT: `{"id", "prompt": [system, user], "completion": [{"role": "assistant", "content": <gold JSON>}]}`
- RL:  `{"id", "prompt": [system, user], "gold_action": "<action JSON string>"}`
`id` is `<session_id>#<step index>` (`shop_r1.data.schema.step_id`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from shop_r1.data.schema import Session, Step, step_id

SYSTEM_PROMPT = """You are simulating a real customer shopping on an online store. \
You see the session so far: the simplified HTML of each page the customer visited \
(every element they can interact with has a unique name="..." attribute), with the \
actions they took and their reasons. Predict the customer's NEXT action and the \
first-person rationale behind it.

Action space (use the exact name attribute from the current page; leave a field \
empty, "", when the action type has none):
- {"type": "click", "name": "<element name>", "text": ""}: click an element.
- {"type": "type_and_submit", "name": "<input name>", "text": "<text>"}: type text into \
an input field and press Enter.
- {"type": "terminate", "name": "", "text": ""}: close the browser because the customer \
is not satisfied.

Answer format:
{"rationale": "<one short first-person sentence>", "action": {"type": ..., "name": ..., "text": ...}}

OUTPUT A SINGLE JSON OBJECT, NOTHING ELSE."""

CONTEXTS = ("full", "latest")
OMITTED = "(page omitted to fit the context budget)"
TRUNCATED = "\n... (page truncated to fit the context budget)"


def approx_tokens(text: str) -> int:
    """Approximate token count: 1 token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def target_json(step: Step) -> str:
    """The gold completion: exactly the object the model must output, in the paper's
    format (the action always has `type`, `name` and `text`, as the system prompt says)."""
    return json.dumps(
        {"rationale": step.rationale, "action": step.action.to_paper_json()}, ensure_ascii=False
    )


def _earlier_block(n: int, step: Step, with_page: bool) -> str:
    page = step.page if with_page else OMITTED
    action = json.dumps(step.action.to_paper_json(), ensure_ascii=False)
    return (
        f"## Step {n}\nURL: {step.url or '-'}\nPage:\n{page}\n"
        f"Action: {action}\nRationale: {step.rationale}\n"
    )


def _current_block(n: int, step: Step, page: str) -> str:
    return f"## Step {n} (current)\nURL: {step.url or '-'}\nPage:\n{page}\n"


def build_messages(
    session: Session,
    step_index: int,
    *,
    context: str = "full",
    max_tokens: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> list[dict[str, str]]:
    """System + user messages asking for the action at `session.steps[step_index]`."""
    if context not in CONTEXTS:
        raise ValueError(f"context: expected one of {', '.join(CONTEXTS)}, got {context!r}")
    if not 0 <= step_index < len(session.steps):
        raise ValueError(f"step_index {step_index} out of range for {len(session.steps)} steps")
    count = count_tokens or approx_tokens
    earlier = session.steps[:step_index] if context == "full" else []
    current = session.steps[step_index]
    header = "Session so far:\n\n" if earlier else ""
    # The shopper's profile (OPeRA ships personas; synthetic sessions carry their goal and
    # budget) is always kept: without it intent-driven steps cannot be predicted at all.
    persona = session.meta.get("persona")
    if isinstance(persona, str) and persona.strip():
        header = f"Customer profile: {persona.strip()}\n\n" + header
    footer = "\nPredict the customer's next action on the current page."
    first = step_index - len(earlier) + 1  # step number of earlier[0]

    with_page = [True] * len(earlier)
    blocks = [_earlier_block(first + i, s, True) for i, s in enumerate(earlier)]
    sizes = [count(b) for b in blocks]
    cur = _current_block(step_index + 1, current, current.page)
    fixed = count(header) + count(footer) + count(cur)
    if max_tokens is not None:
        start = 0
        # Oldest pages first, then oldest whole steps.
        for i in range(len(blocks)):
            if fixed + sum(sizes[start:]) <= max_tokens:
                break
            with_page[i] = False
            blocks[i] = _earlier_block(first + i, earlier[i], False)
            sizes[i] = count(blocks[i])
        while start < len(blocks) and fixed + sum(sizes[start:]) > max_tokens:
            start += 1
        blocks = blocks[start:]
        if fixed > max_tokens:
            cur = _fit_current(step_index + 1, current, max_tokens - count(header + footer), count)
    user = header + "\n".join(blocks) + ("\n" if blocks else "") + cur + footer
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _fit_current(n: int, step: Step, budget: int, count: Callable[[str], int]) -> str:
    """Cut the current page's tail (binary search on length) until the block fits."""
    lo, hi = 0, len(step.page)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(_current_block(n, step, step.page[:mid] + TRUNCATED)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return _current_block(n, step, step.page[:lo] + TRUNCATED)


def _rows(sessions: list[Session], kw: dict[str, Any]) -> Any:
    for session in sessions:
        for i, step in enumerate(session.steps):
            yield step_id(session.session_id, i), build_messages(session, i, **kw), step


def sft_rows(sessions: list[Session], **kw: Any) -> list[dict[str, Any]]:
    """Conversational prompt/completion rows for SFT (completion = gold JSON)."""
    return [
        {
            "id": sid,
            "prompt": msgs,
            "completion": [{"role": "assistant", "content": target_json(step)}],
        }
        for sid, msgs, step in _rows(sessions, kw)
    ]


def rl_rows(sessions: list[Session], **kw: Any) -> list[dict[str, Any]]:
    """Prompt rows for GRPO with the gold action as a JSON string column."""
    return [
        {
            "id": sid,
            "prompt": msgs,
            "gold_action": json.dumps(step.action.to_json(), ensure_ascii=False),
        }
        for sid, msgs, step in _rows(sessions, kw)
    ]
