"""pip's `(from versions: ...)` against the requirement it could not meet, by version order.

pip prints `Could not find a version that satisfies the requirement REQ[ (from PARENT)]
(from versions: V1, V2, ...)` (pip 26.3 resolvelib/factory.py:755) with REQ as its
SpecifierSet writes it (`onnxruntime<=1.8.0,==1.8.0`) and the versions it could use on this
interpreter and platform. Where every one of them lies above the requirement's upper bound
(an `==`/`===` pin, a `<=`/`<` cap), the releases the requirement wants exist but ship
nothing this interpreter can install (made before this Python); where every one lies below
its floor (`>=`, `>`, a pin), the releases it wants are newer than any that install here.
Versions are compared as PEP 440 versions (`packaging`), public parts only: a local tag
(`2.2.0+cu121`) is the same release as `2.2.0`. Text that does not parse answers False.
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import Specifier
from packaging.version import InvalidVersion, Version

_UPPER = ("==", "===", "<=", "<")  # bounds from above: the pin, the cap
_LOWER = (">=", ">")  # bounds from below: the floor (a pin above the list is absent, not this)


def _offered(text: str) -> list[Version]:
    found = []
    for part in text.split(","):
        try:
            found.append(Version(Version(part.strip()).public))
        except InvalidVersion:
            continue
    return found


def _bounds(req: str, operators: tuple[str, ...]) -> list[tuple[str, Version]]:
    try:
        specs = Requirement(req).specifier
    except InvalidRequirement:
        return []
    bounds = []
    for spec in specs:
        if not isinstance(spec, Specifier) or spec.operator not in operators:
            continue
        try:  # a prefix pin (`==1.8.*`) bounds a series, not a version: skipped here
            bounds.append((spec.operator, Version(Version(spec.version).public)))
        except InvalidVersion:
            continue
    return bounds


def below_every_offered(match: re.Match[str]) -> bool:
    """An upper bound of the requirement (pin or cap) excludes every version pip offered."""
    offered = _offered(match.group("offered"))
    if not offered:
        return False
    first = min(offered)
    return any(
        v <= first if op == "<" else v < first for op, v in _bounds(match.group("req"), _UPPER)
    )


def above_every_offered(match: re.Match[str]) -> bool:
    """The requirement's floor excludes every version pip offered."""
    offered = _offered(match.group("offered"))
    if not offered:
        return False
    last = max(offered)
    return any(
        v >= last if op == ">" else v > last for op, v in _bounds(match.group("req"), _LOWER)
    )


TESTS = {
    "below_every_offered": below_every_offered,
    "above_every_offered": above_every_offered,
}
