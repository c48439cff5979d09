"""The one schema reader for the doctor's YAML/JSON inputs (knowledge, profiles, plans).

Every error has one shape, `FILE:LINE: FIELD: message`, built by `field_error`: FIELD is
the dotted key path (`torch.version`, `codes.X.urls`, `signatures[3].code`) and LINE the
line of that key in the file, or of its nearest parent that is there (a missing key
points at the mapping that lacks it). `Reader.read` parses through `yamlio` (JSON is
YAML) and indexes the line of every key path once; the typed getters (`get`, `opt`,
`mapping`, `str_list`, `https`, `version`, `spec`, `parsed`, ...) raise ToolError in that
shape. A parse from an in-memory mapping (tests, producers in code) has no lines and
drops the `:LINE` part.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.yamlio import SafeLoader, read_yaml

_KIND_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    list: "a list",
    dict: "a mapping",
    bool: "true/false",
}

_MISSING = object()


def join(where: str, key: object) -> str:
    """`join("torch", "version")` -> `torch.version`; `join("", "name")` -> `name`."""
    return f"{where}.{key}" if where else str(key)


def field_error(file: str, line: int | None, field: str, message: str) -> ToolError:
    """The one error format: `FILE:LINE: FIELD: message` (`FILE: FIELD: ...` without a line)."""
    loc = f"{file}:{line}" if line else file
    return ToolError(f"{loc}: {field}: {message}" if field else f"{loc}: {message}")


def line_index(text: str) -> dict[str, int]:
    """Key path -> 1-based line for every mapping key and list item ("" = the document).

    Paths join keys with dots and items with `[i]` (`gpus[2].cc`). Best effort: text that
    does not compose gives {} (read_yaml has already rejected invalid YAML)."""
    out: dict[str, int] = {}

    def walk(node: yaml.Node, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = join(path, key.value)
                out.setdefault(sub, key.start_mark.line + 1)
                walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                sub = f"{path}[{i}]"
                out[sub] = item.start_mark.line + 1
                walk(item, sub)

    try:
        root = yaml.compose(text, Loader=SafeLoader)
    except yaml.YAMLError:
        return out
    if root is not None:
        out[""] = root.start_mark.line + 1
        walk(root, "")
    return out


class LazyLines(Mapping[str, int]):
    """`line_index(text)`, composed on first use: a valid file is never indexed (the
    index is a second parse; only an error message needs it)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._index: dict[str, int] | None = None

    def _lines(self) -> dict[str, int]:
        if self._index is None:
            self._index = line_index(self._text)
        return self._index

    def __getitem__(self, key: str) -> int:
        return self._lines()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines())

    def __len__(self) -> int:
        return len(self._lines())


def kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


def is_kind(value: Any, kind: type | tuple[type, ...]) -> bool:
    """isinstance, except that YAML `true` is not an integer where a number is wanted."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds and (int in kinds or float in kinds):
        return False
    return isinstance(value, kinds)


class Reader:
    """Typed field access over one parsed document; every error is `FILE:LINE: FIELD: ...`.

    `hint` ends every message with what to do ("fix the profile (see docs/profiles.md)")."""

    def __init__(
        self, file: str | Path, lines: Mapping[str, int] | None = None, hint: str = ""
    ) -> None:
        self.file = str(file)
        self.lines: Mapping[str, int] = lines if lines is not None else {}
        self.hint = hint

    @classmethod
    def read(cls, path: str | Path, what: str, hint: str = "") -> tuple[Reader, Any]:
        """(reader, data) of a YAML/JSON file; unreadable or malformed files raise
        `FILE[:LINE]: ...` through yamlio."""
        text, data = read_yaml(path, what)
        return cls(path, LazyLines(text), hint), data

    # --- locating and failing ---------------------------------------------------------
    def line(self, where: str) -> int | None:
        """Line of `where`, or of its nearest parent in the index."""
        probe = where
        while True:
            if probe in self.lines:
                return self.lines[probe]
            if not probe:
                return None
            cut = max(probe.rfind("."), probe.rfind("["))
            probe = probe[:cut] if cut > 0 else ""

    def fail(self, where: str, message: str) -> ToolError:
        text = f"{message}; {self.hint}" if self.hint else message
        return field_error(self.file, self.line(where), where, text)

    # --- typed getters ----------------------------------------------------------------
    def mapping(
        self, obj: Any, where: str, keys: Mapping[str, bool] | None = None
    ) -> dict[str, Any]:
        """`obj` as a mapping; with `keys` (name -> required), unknown and missing keys fail."""
        if not isinstance(obj, dict):
            raise self.fail(where, f"expected a mapping, got {type(obj).__name__}")
        if keys is not None:
            for key in obj:
                if key not in keys:
                    raise self.fail(join(where, key), "unknown field")
            for key, required in keys.items():
                if required and key not in obj:
                    raise self.fail(join(where, key), "missing")
        return obj

    def get(
        self,
        obj: Any,
        key: str,
        where: str,
        kind: type | tuple[type, ...] = str,
        allowed: tuple[Any, ...] | None = None,
        default: Any = _MISSING,
    ) -> Any:
        """A required field of `kind` (and one of `allowed`); with `default`, optional."""
        path = join(where, key)
        if not isinstance(obj, dict):
            raise self.fail(where, f"expected a mapping, got {type(obj).__name__}")
        if key not in obj:
            if default is not _MISSING:
                return default
            raise self.fail(path, "missing")
        value = obj[key]
        if not is_kind(value, kind):
            raise self.fail(path, f"expected {kind_name(kind)}, got {value!r}")
        if allowed is not None and value not in allowed:
            raise self.fail(path, f"expected one of {', '.join(map(str, allowed))}, got {value!r}")
        return value

    def opt(self, obj: Any, key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
        """An optional field: None when absent or null."""
        if isinstance(obj, dict) and obj.get(key) is None:
            return None
        return self.get(obj, key, where, kind)

    def text(self, obj: Any, key: str, where: str) -> str:
        """A required non-empty string."""
        value = self.get(obj, key, where, object)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(join(where, key), f"expected a non-empty string, got {value!r}")
        return value

    def positive_int(self, obj: Any, key: str, where: str) -> int | None:
        value = obj.get(key) if isinstance(obj, dict) else None
        if value is None:
            return None
        if not is_kind(value, int) or value < 1:
            raise self.fail(join(where, key), f"expected a positive integer, got {value!r}")
        return int(value)

    def flag(self, obj: Any, key: str, where: str, default: bool) -> bool:
        return bool(self.get(obj, key, where, bool, default=default))

    def str_list(
        self, obj: Any, key: str, where: str, what: str = "strings", nonempty: bool = False
    ) -> list[str]:
        """A required list of strings (`what` names them in the message)."""
        value = obj.get(key) if isinstance(obj, dict) else None
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not isinstance(value, list) or not ok or (nonempty and not value):
            raise self.fail(join(where, key), f"expected a list of {what}, got {value!r}")
        return list(value)

    def https(self, obj: Any, key: str, where: str) -> str:
        value = self.get(obj, key, where)
        if not value.startswith("https://"):
            raise self.fail(join(where, key), f"expected an https:// URL, got {value!r}")
        return str(value)

    def https_list(self, obj: Any, key: str, where: str) -> list[str]:
        urls = self.get(obj, key, where, list)
        if not all(isinstance(u, str) and u.startswith("https://") for u in urls):
            raise self.fail(join(where, key), "expected a list of https:// URLs")
        return list(urls)

    def str_map(self, obj: Any, where: str) -> dict[str, str]:
        """A mapping of names to strings; None is empty."""
        if obj is None:
            return {}
        if not isinstance(obj, dict):
            raise self.fail(where, "expected a mapping of names to strings")
        for key, value in obj.items():
            if not isinstance(value, str):
                raise self.fail(join(where, key), f"expected a string, got {value!r}")
        return {str(k): v for k, v in obj.items()}

    def version(self, obj: Any, key: str, where: str) -> Version:
        text = self.get(obj, key, where)
        try:
            return Version(text)
        except InvalidVersion:
            raise self.fail(join(where, key), f"not a version: {text!r}") from None

    def spec(self, obj: Any, key: str, where: str) -> SpecifierSet:
        text = self.get(obj, key, where)
        return self.spec_text(text, join(where, key))

    def spec_text(self, text: str, path: str) -> SpecifierSet:
        try:
            return SpecifierSet(text)
        except InvalidSpecifier:
            raise self.fail(path, f"not a version range: {text!r}") from None

    def parsed(self, value: Any, parse: Any, path: str, expected: str) -> Any:
        """`parse(value)`, where a None result fails as `expected ...: value` (the caller
        brings the parser: compute capabilities live in `hardware`, a layer above)."""
        out = parse(value)
        if out is None:
            raise self.fail(path, f"{expected}: {value!r}")
        return out

    def rows(self, data: Any, key: str, where: str = "") -> list[tuple[str, dict[str, Any]]]:
        """The items of a list of mappings, each with its path (`key[i]`)."""
        out = []
        for i, item in enumerate(self.get(data, key, where, list)):
            path = f"{join(where, key)}[{i}]"
            if not isinstance(item, dict):
                raise self.fail(path, "expected a mapping")
            out.append((path, item))
        return out
