"""Read-only accessors over a snapshot dict, shared by checks and the trainer.

They encode the contract's three states once: a missing key is "unknown" (None from
the tri-state helpers), an explicit null is "absent", a value is "present".
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version


def parse_version(text: Any) -> Version | None:
    """`"2.11.0+cu130"` -> Version('2.11.0+cu130'); junk -> None (never raises)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def cc_tuple(cc: Any) -> tuple[int, int] | None:
    """Compute capability `"9.0"` -> (9, 0)."""
    if not isinstance(cc, str) or "." not in cc:
        return None
    major, _, minor = cc.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return None
    return int(major), int(minor)


class Facts:
    """A snapshot seen through the contract's rules. Never raises on odd input."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        self.raw = snapshot

    def section(self, name: str) -> dict[str, Any]:
        value = self.raw.get(name)
        return value if isinstance(value, dict) else {}

    def known(self, name: str) -> bool:
        return name in self.raw

    @property
    def from_dump(self) -> bool:
        """Facts parsed from a pasted dump (`doctor --from`): each section may be partial."""
        source = self.raw.get("source")
        return isinstance(source, dict) and source.get("kind") == "dump"

    @property
    def host(self) -> dict[str, Any]:
        return self.section("host")

    @property
    def driver(self) -> dict[str, Any]:
        return self.section("driver")

    @property
    def gpus(self) -> list[dict[str, Any]]:
        gpus = self.raw.get("gpus")
        return [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []

    @property
    def torch(self) -> dict[str, Any] | None:
        """The torch child's facts; None when unknown or not installed."""
        value = self.raw.get("torch")
        return value if isinstance(value, dict) else None

    @property
    def plan(self) -> dict[str, Any]:
        return self.section("plan")

    @property
    def env(self) -> dict[str, Any]:
        return self.section("env")

    def env_value(self, name: str) -> str | None:
        value = self.env.get(name)
        return value if isinstance(value, str) else None

    def package(self, name: str) -> dict[str, Any] | None:
        value = self.section("packages").get(name)
        return value if isinstance(value, dict) else None

    def installed(self, name: str) -> bool | None:
        """True/False when the packages section says so; None when unknown."""
        packages = self.section("packages")
        if name not in packages:
            return None
        return isinstance(packages[name], dict)

    def version(self, name: str) -> Version | None:
        pkg = self.package(name)
        return parse_version(pkg.get("version")) if pkg else None

    def requires(self, name: str) -> list[str]:
        pkg = self.package(name)
        reqs = pkg.get("requires") if pkg else None
        return [r for r in reqs if isinstance(r, str)] if isinstance(reqs, list) else []

    def import_ok(self, module: str) -> bool | None:
        value = self.section("imports").get(module)
        if not isinstance(value, dict):
            return None
        ok = value.get("ok")
        return ok if isinstance(ok, bool) else None

    def import_error(self, module: str) -> str:
        value = self.section("imports").get(module)
        err = value.get("error") if isinstance(value, dict) else None
        return err if isinstance(err, str) else ""

    def ccs(self) -> list[tuple[int, int]]:
        out = []
        for gpu in self.gpus:
            cc = cc_tuple(gpu.get("compute_capability"))
            if cc:
                out.append(cc)
        return out

    @property
    def os(self) -> str | None:
        value = self.host.get("os")
        return value if isinstance(value, str) else None

    @property
    def wsl(self) -> int | None:
        value = self.host.get("wsl")
        return value if isinstance(value, int) else None

    @property
    def container(self) -> str | None:
        value = self.host.get("container")
        return value if isinstance(value, str) else None
