"""One set of pins for an image: the profile plus its `--with` extras, merged per package.

Every install in a built image runs under the constraints file this produces, so a later
layer (verl, megatron) cannot replace what an earlier one installed: verl 0.9.1 declares
`transformers<5.11`, and without that bound in the shared file the profile's
`transformers>=5.5.3,<6` layer installs 5.12 first and verl's layer then downgrades it.
Requirements that cannot all hold (an empty intersection) are conflicts, reported by
`shop-r1 profiles check` and refused by `build-image`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from shop_r1_doctor.profiles.model import Profile


@dataclass(frozen=True)
class Pin:
    """One package's merged requirement and where each part came from."""

    dist: str
    spec: SpecifierSet
    sources: tuple[str, ...]

    def line(self) -> str:
        # Sorted specifiers: the rendered file must not depend on set iteration order.
        return self.dist + ",".join(sorted(str(s) for s in self.spec))


@dataclass(frozen=True)
class Resolved:
    pins: tuple[Pin, ...]
    conflicts: tuple[str, ...]

    def lines(self) -> list[str]:
        return [pin.line() for pin in self.pins]


def _requirements(profile: Profile, extras: Sequence[str]) -> Iterable[tuple[str, str, str]]:
    """(dist, specifier, source) for everything the image installs with a version rule."""
    yield "torch", f"=={profile.torch.local}", "torch"
    if profile.vllm is not None:
        yield "vllm", f"=={profile.vllm}", "vllm"
    for dist, range_ in profile.packages.items():
        yield dist, str(range_), f"packages.{dist}"
    for extra in extras:
        extra_spec = profile.extras[extra]
        for dist, version in extra_spec.packages.items():
            yield dist, f"=={version}", f"extras.{extra}.packages.{dist}"
        for dist, pin in extra_spec.pins.items():
            yield dist, pin, f"extras.{extra}.pins.{dist}"


def _candidates(spec: SpecifierSet) -> list[Version]:
    """Versions that satisfy `spec` if anything does: each bound and the next release."""
    out: list[Version] = []
    for s in spec:
        try:
            v = Version(s.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        release = list(v.release)
        bumped = Version(".".join(map(str, [*release[:-1], release[-1] + 1])))
        out += [v, bumped, Version(".".join(map(str, [*release, 1])))]
        if v.local:
            out.append(Version(v.public))
    return out


def satisfiable(spec: SpecifierSet) -> bool:
    if not list(spec):
        return True
    return any(spec.contains(v, prereleases=True) for v in _candidates(spec))


def resolve(profile: Profile, extras: Sequence[str] = ()) -> Resolved:
    merged: dict[str, tuple[str, SpecifierSet, list[str]]] = {}
    for dist, spec, source in _requirements(profile, extras):
        key = canonicalize_name(dist)
        shown, have, sources = merged.get(key, (dist, SpecifierSet(), []))
        merged[key] = (shown, have & SpecifierSet(spec), [*sources, f"{source} {spec}"])
    pins, conflicts = [], []
    for name in sorted(merged):
        dist, merged_spec, parts = merged[name]
        pins.append(Pin(dist, merged_spec, tuple(parts)))
        if not satisfiable(merged_spec):
            conflicts.append(f"{dist}: no version satisfies {'; '.join(parts)}")
    return Resolved(tuple(pins), tuple(conflicts))
