"""`--profile WHAT`: a profile name, a compute capability or a GPU name, to one profile.

Users type what they know about their machine: `blackwell`, `sm_120`, `12.0`, `H100`,
`"RTX PRO 6000"`. A capability or GPU name resolves through the GPU knowledge
(`knowledge/gpus.yaml`) and the profiles' match rules, to the same profile the doctor's
match would pick for that GPU (a family's member: the smaller image). Anything else is
one line with the closest names, exit 2.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.hardware import CC, cc_text, load_gpus
from shop_r1_doctor.profiles.model import Profile, load_profiles

# sm_120, sm120, SM_90, compute_89; 12.0, 9.0; bare sm digits 120, 90, 86 (not a lone "9")
_SM = re.compile(r"(?:sm_?|compute_)?(\d{1,2})(\d)", re.IGNORECASE)
_DOTTED = re.compile(r"(\d{1,2})\.(\d)")
_VENDOR = re.compile(r"\b(nvidia|geforce)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Resolved:
    profile: Profile
    how: str  # "" for a profile name; else e.g. "RTX PRO 6000 -> sm_120"


def parse_capability(text: str) -> CC | None:
    """`sm_120`/`sm120`/`120`/`12.0` -> (12, 0); anything else -> None."""
    text = text.strip()
    m = _DOTTED.fullmatch(text) or _SM.fullmatch(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _words(text: str) -> str:
    return " ".join(_VENDOR.sub(" ", text).lower().split())


def gpu_capability(name: str) -> tuple[CC, str] | None:
    """(capability, the gpus.yaml pattern) of a GPU name as a user types it: the name
    contains a pattern (`RTX 5090` has `RTX 50`) or starts one (`RTX PRO 6000` of `RTX PRO
    6000 Blackwell`). None when unknown or when the candidates disagree."""
    typed = _words(name)
    if not typed:
        return None
    hits: dict[CC, str] = {}
    for gpu in load_gpus():
        for pattern in gpu.patterns:
            p = _words(pattern)
            hit = re.search(rf"\b{re.escape(p)}", typed) or re.match(rf"{re.escape(typed)}\b", p)
            # the shortest pattern names it (H100, not H100 PCIe, for "H100")
            if hit and (gpu.cc not in hits or len(pattern) < len(hits[gpu.cc])):
                hits[gpu.cc] = pattern
    return next(iter(hits.items())) if len(hits) == 1 else None


def profile_for_capability(cc: CC, profiles: dict[str, Profile]) -> Profile | None:
    """What the doctor's match picks for one GPU of capability `cc`."""
    from shop_r1_doctor.profiles.match import best_profile

    found = best_profile(_one_gpu({"compute_capability": cc_text(cc)}), profiles)
    return found[0] if found else None


def _one_gpu(gpu: dict[str, object]) -> Facts:

    return Facts({"gpus": [{"index": 0, **gpu}]})


def resolve_profile(text: str, profiles: dict[str, Profile] | None = None) -> Resolved:
    """The profile `--profile TEXT` means, or a ToolError with a did-you-mean."""
    profiles = profiles if profiles is not None else load_profiles()
    key = text.strip()
    by_lower = {name.lower(): p for name, p in profiles.items()}
    if key.lower() in by_lower:
        return Resolved(by_lower[key.lower()], "")
    cc = parse_capability(key)
    if cc is not None:
        found = profile_for_capability(cc, profiles)
        if found is None:
            raise ToolError(
                f"--profile {text}: no profile builds for sm_{cc[0]}{cc[1]} "
                f"(profiles cover {_covered(profiles)})"
            )
        return Resolved(found, f"{key} -> sm_{cc[0]}{cc[1]}")
    gpu = gpu_capability(key)
    if gpu is not None:
        cc, pattern = gpu
        found = profile_for_capability(cc, profiles)
        if found is None:
            raise ToolError(
                f"--profile {text}: {pattern} is sm_{cc[0]}{cc[1]}, which no profile builds for "
                f"(profiles cover {_covered(profiles)})"
            )
        return Resolved(found, f"{key} -> {pattern}, sm_{cc[0]}{cc[1]}")
    named = best_by_name(key, profiles)
    if named is not None:
        return Resolved(named, f"{key} -> name pattern of profile {named.name}")
    raise ToolError(
        f"--profile {text}: not a profile, GPU or compute capability; "
        + _did_you_mean(key, profiles)
    )


def best_by_name(name: str, profiles: dict[str, Profile]) -> Profile | None:
    """A GPU the GPU knowledge lacks but a profile's name patterns know (`GB300`)."""
    from shop_r1_doctor.profiles.match import best_profile

    found = best_profile(_one_gpu({"name": f"NVIDIA {name}"}), profiles)
    return found[0] if found and found[0].cuda is not None else None


def _covered(profiles: dict[str, Profile]) -> str:
    ccs = sorted({cc for p in profiles.values() for cc in p.match.compute_capabilities})
    return ", ".join(f"sm_{a}{b}" for a, b in ccs)


def _did_you_mean(text: str, profiles: dict[str, Profile]) -> str:
    names = sorted(profiles)
    candidates = {n.lower(): n for n in names}
    for gpu in load_gpus():
        for pattern in gpu.patterns:
            candidates.setdefault(pattern.lower(), pattern)
    close = difflib.get_close_matches(text.lower(), list(candidates), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(candidates[c]) for c in close)}? " if close else ""
    return (
        f'{hint}give a profile ({", ".join(names)}), a GPU name ("RTX PRO 6000", H100) '
        "or a compute capability (sm_120, 9.0)"
    )
