"""The one parser of model output, shared by the rewards and the evaluation.

Expected output (paper, section 3): ONE JSON object and nothing else,

    {"rationale": "<first-person sentence>", "action": {"type": ..., "name": ..., "text": ...}}

- strict (the format reward, the default for scoring): the whole completion, apart
  from surrounding whitespace, is exactly one JSON object whose keys are `rationale`
  (non-empty string) and `action` (an object valid under `Action.from_json`, i.e. the
  type semantics of the paper). Duplicate keys and NaN/Infinity are rejected.
- lenient: the first JSON object found in the text (code fences, prose before or
  after); unknown keys are ignored, the action semantics are the same.

`parse_completion` never raises: a failure is `Parsed(ok=False, error=<why>)`.
`rationale_span` is the (start, end) character range of the rationale string's value
in the completion (between its quotes, escapes as written), so a tokenizer's offset
mapping can select exactly the rationale's tokens for the self-certainty reward.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from shop_r1.actions import Action

# A JSON string literal or one structural character; used to locate the rationale.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]', re.DOTALL)
# Lenient search gives up after this many '{' that do not start a JSON object, so a
# pathological completion ('{' repeated a million times) cannot take quadratic time.
_MAX_LENIENT_TRIES = 64


@dataclass(frozen=True)
class Parsed:
    """Result of parsing one completion; `error` says why when `ok` is False."""

    ok: bool
    action: Action | None = None
    rationale: str | None = None
    error: str | None = None
    rationale_span: tuple[int, int] | None = None


def parse_completion(text: str, *, strict: bool = True, with_span: bool = True) -> Parsed:
    """Parse one completion (see the module docstring). Never raises.

    `with_span=False` skips locating the rationale (`rationale_span` is None): the
    action rewards do not need it and it is the costliest step.
    """
    if not isinstance(text, str):
        return Parsed(ok=False, error=f"completion is not a string ({type(text).__name__})")
    try:
        if strict:
            return _parse_strict(text, with_span)
        return _parse_lenient(text, with_span)
    except RecursionError:
        return Parsed(ok=False, error="JSON nested too deeply")


@lru_cache(maxsize=8192)
def parse_cached(text: str, strict: bool = True) -> Parsed:
    """`parse_completion(..., with_span=False)` memoised, for the action rewards (TRL calls
    each reward component on the same batch). Its `rationale_span` is always None."""
    return parse_completion(text, strict=strict, with_span=False)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


_STRICT_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_reject_constant
)
_LENIENT_DECODER = json.JSONDecoder()


def _parse_strict(text: str, with_span: bool) -> Parsed:
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if not text.strip():
        return Parsed(ok=False, error="empty completion")
    if text[start] != "{":
        return Parsed(ok=False, error="output does not start with a JSON object")
    try:
        obj, stop = _STRICT_DECODER.raw_decode(text, start)
    except ValueError as exc:
        return Parsed(ok=False, error=f"invalid JSON: {exc}")
    if stop != end:
        return Parsed(ok=False, error=f"extra text after the JSON object at char {stop}")
    extra = sorted(set(obj) - {"rationale", "action"})
    if extra:
        return Parsed(ok=False, error=f"unexpected key(s): {', '.join(extra)}")
    return _build(obj, text, start, stop, with_span)


def _parse_lenient(text: str, with_span: bool) -> Parsed:
    pos = text.find("{")
    tries = 0
    while pos != -1 and tries < _MAX_LENIENT_TRIES:
        tries += 1
        try:
            obj, stop = _LENIENT_DECODER.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        return _build(obj, text, pos, stop, with_span)
    return Parsed(ok=False, error="no JSON object found in the output")


def _build(obj: dict[str, Any], text: str, start: int, stop: int, with_span: bool) -> Parsed:
    rationale = obj.get("rationale")
    if "rationale" not in obj:
        return Parsed(ok=False, error="missing key: rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        return Parsed(ok=False, error="rationale: expected a non-empty string")
    if "action" not in obj:
        return Parsed(ok=False, error="missing key: action")
    try:
        action = Action.from_json(obj["action"])
    except ValueError as exc:
        return Parsed(ok=False, error=str(exc))
    span = rationale_value_span(text, start, stop) if with_span else None
    return Parsed(ok=True, action=action, rationale=rationale, rationale_span=span)


def rationale_value_span(text: str, start: int, stop: int) -> tuple[int, int] | None:
    """Character range of the top-level `rationale` value inside text[start:stop].

    Walks the object's tokens tracking depth, so a "rationale" key nested in the action
    or inside a string is not mistaken for the top-level one. The last occurrence wins,
    as in json.loads.
    """
    depth = 0
    prev = ""  # the previous token at depth 1: "{", ",", ":", "s" (a string) or "}"
    key: str | None = None
    span: tuple[int, int] | None = None
    for match in _TOKEN.finditer(text, start, stop):
        token = match.group()
        if token in "{[":
            prev = token if depth == 0 else "}"
            depth += 1
        elif token in "}]":
            depth -= 1
        elif depth == 1:
            if token[0] == '"':
                if prev in ("{", ","):
                    key = json.loads(token)
                elif prev == ":" and key == "rationale":
                    span = (match.start() + 1, match.end() - 1)
                prev = "s"
            else:
                prev = token
    return span
