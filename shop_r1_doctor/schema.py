"""The one schema reader for the doctor's YAML/JSON inputs: typed contracts, one error shape.

A contract (knowledge file, profile, plan) is declared once as a msgspec `Contract`
Struct and decoded by `decode`/`decode_file` in one step, so code reads attributes, never
`dict[str, Any]`. msgspec does the type, required, unknown-field and allowed-value
checks; a rule the types cannot say raises `FieldError` in `__post_init__` (or in a
`check` passed to `decode`), naming the field it is about.

Every error has one shape, `FILE:LINE: FIELD: message`, built by `field_error`: FIELD is
the dotted key path (`torch.version`, `codes.X.urls`, `signatures[3].code`) and LINE the
line of that key in the file, or of its nearest parent that is there (a missing key
points at the mapping that lacks it). Lines are indexed only when an error needs them.
A decode from an in-memory mapping (tests, producers in code) has no lines and drops
the `:LINE` part. `Reader` keeps the error shape for inputs that are not contracts yet
(the trainer's config).

msgspec over pydantic: the doctor loads every knowledge file and profile on each run;
msgspec imports and builds these types in a fraction of pydantic's time
(docs/architecture.md, "Typed contracts").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import msgspec
import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.yamlio import SafeLoader, read_yaml

T = TypeVar("T")


def listing(what: str) -> msgspec.Meta:
    """`Annotated[tuple[str, ...], listing("finding codes")]`: errors say `a list of finding codes`."""
    return msgspec.Meta(description=what)


# msgspec's names for JSON-ish kinds -> the words of our messages
_KIND_WORDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true/false",
    "array": "a list",
    "object": "a mapping",
}
_KIND_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    list: "a list",
    dict: "a mapping",
    bool: "true/false",
}


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

    def __eq__(self, other: object) -> bool:  # equal texts index equally; skip the parse
        if isinstance(other, LazyLines):
            return self._text == other._text
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


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
    """Where a key path is in one file, and its errors as `FILE:LINE: FIELD: ...`.

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


# --- typed contracts ------------------------------------------------------------------


class Contract(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Base of every declared input: immutable, unknown keys fail, fields by name."""


class FieldError(ValueError):
    """A rule the types cannot say, about `field` (a key path relative to the Struct
    that raises it, or to the document when raised by a `decode` check)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def decode(
    data: Any,
    type_: type[T],
    file: str | Path,
    lines: Mapping[str, int] | None = None,
    hint: str = "",
    check: Callable[[T], None] | None = None,
) -> T:
    """`data` as a `type_` (a Contract), or ToolError `FILE:LINE: FIELD: message`.
    `check` holds rules that need more than the document (its file name, other files)."""
    reader = Reader(file, lines, hint)
    schema = _schema_of(type_)
    if schema is not None and (not isinstance(data, dict) or data.get("schema") != schema):
        got = data.get("schema") if isinstance(data, dict) else None
        raise reader.fail("schema", f"expected {schema!r}, got {got!r}")  # another kind of file
    try:
        out = msgspec.convert(data, type_, dec_hook=_dec_hook)
        if check is not None:
            check(out)
    except msgspec.ValidationError as exc:
        raise reader.fail(*_explain(exc, data, type_, "")) from None
    except FieldError as exc:
        raise reader.fail(exc.field, exc.message) from None
    return out


def decode_each(
    data: Mapping[Any, Any], type_: type[T], unknown: str = "unknown field", known_at: str = ""
) -> tuple[T | None, list[tuple[str, str]]]:
    """(the contract, []) or (None, every problem as (key path, message)) of a mapping
    whose top-level fields are independent (a user's plan). msgspec stops at the first
    error, so each key is decoded alone; an unknown key gets a did-you-mean (else
    `known_at`, where the fields are listed)."""
    names = type_.__struct_fields__  # type: ignore[attr-defined]
    problems: list[tuple[str, str]] = []
    for key, value in data.items():
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f"did you mean {close[0]!r}?" if close else known_at
            problems.append((str(key), f"{unknown}; {hint}" if hint else unknown))
            continue
        try:
            msgspec.convert({key: value}, type_, dec_hook=_dec_hook)
        except msgspec.ValidationError as exc:
            problems.append(_explain(exc, {key: value}, type_, ""))
    if problems:
        return None, problems
    try:  # rules across fields
        return msgspec.convert(dict(data), type_, dec_hook=_dec_hook), []
    except msgspec.ValidationError as exc:
        return None, [_explain(exc, data, type_, "")]


def decode_known(section: Mapping[Any, Any], type_: type[T]) -> T:
    """The fields of a recorded section that decode; any other stays at its default
    (not known). For facts a probe wrote: odd input never makes a check crash."""
    good = {}
    for key, value in section.items():
        try:
            msgspec.convert({key: value}, type_, dec_hook=_dec_hook)
        except msgspec.ValidationError:
            continue
        good[key] = value
    return msgspec.convert(good, type_, dec_hook=_dec_hook)


def decode_file(
    path: str | Path,
    type_: type[T],
    what: str,
    hint: str = "",
    check: Callable[[T], None] | None = None,
) -> tuple[T, Mapping[str, int]]:
    """(decoded contract, line index) of a YAML/JSON file (JSON is YAML)."""
    reader, data = Reader.read(path, what, hint)
    return decode(data, type_, path, reader.lines, hint, check), reader.lines


def _schema_of(type_: Any) -> str | None:
    """The one `schema:` value a contract file declares (`schema: Literal["x/1"]`)."""
    if not (isinstance(type_, type) and issubclass(type_, msgspec.Struct)):
        return None
    for f in msgspec.structs.fields(type_):
        if f.name == "schema" and get_origin(f.type) is Literal and len(get_args(f.type)) == 1:
            return str(get_args(f.type)[0])
    return None


def _dec_hook(type_: type, obj: Any) -> Any:
    """Types msgspec does not know: versions, ranges, regexes, and any class with a
    `from_yaml(obj)` classmethod (compute capabilities live in `hardware`)."""
    from_yaml = getattr(type_, "from_yaml", None)
    if from_yaml is not None:
        return from_yaml(obj)
    if not isinstance(obj, str):
        raise TypeError(f"expected a string, got {obj!r}")
    if type_ is Version:
        try:
            return Version(obj)
        except InvalidVersion:
            raise ValueError(f"not a version: {obj!r}") from None
    if type_ is SpecifierSet:
        try:
            return SpecifierSet(obj)
        except InvalidSpecifier:
            raise ValueError(f"not a version range: {obj!r}") from None
    if type_ is re.Pattern or get_origin(type_) is re.Pattern:
        try:
            return re.compile(obj)
        except re.error as exc:
            raise ValueError(f"not a valid regex ({exc})") from None
    raise NotImplementedError(f"no decoder for {type_!r}")


def nonempty(obj: object, *names: str) -> None:
    """FieldError for the first of `names` that is a blank string (YAML `name: ""`)."""
    for name in names:
        value = getattr(obj, name)
        if not value.strip():
            raise FieldError(name, f"expected a non-empty string, got {value!r}")


def https(url: str, field: str) -> None:
    if not url.startswith("https://"):
        raise FieldError(field, f"expected an https:// URL, got {url!r}")


def is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


# --- msgspec's error -> our key path and words ----------------------------------------

_AT = re.compile(r"(?s)(.*) - at `\$(.*)`")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_ANY_KEY = object()  # msgspec writes a dict key as `[...]`
_NOTHING = object()


def _explain(exc: msgspec.ValidationError, data: Any, type_: Any, base: str) -> tuple[str, str]:
    """(key path, message) of msgspec's error, in the words of `field_error`."""
    m = _AT.fullmatch(str(exc))
    text, at = (m.group(1), m.group(2)) if m else (str(exc), "")
    steps: list[Any] = [
        name if name else (_ANY_KEY if index == "..." else int(index))
        for name, index in _STEP.findall(at)
    ]
    if _ANY_KEY in steps:  # find the key: decode each value of that mapping alone
        i = steps.index(_ANY_KEY)
        container, value_type = _walk(data, steps[:i]), _type_at(type_, steps[:i])
        value_type = get_args(value_type)[1] if len(get_args(value_type)) == 2 else Any
        if isinstance(container, dict):
            for key, value in container.items():
                try:
                    msgspec.convert(value, value_type, dec_hook=_dec_hook)
                except msgspec.ValidationError as sub:
                    return _explain(sub, value, value_type, _path(base, [*steps[:i], key]))
        steps = steps[:i]
    path = _path(base, steps)
    cause = exc.__cause__
    if isinstance(cause, FieldError):
        return join(path, cause.field), cause.message
    value = _walk(data, steps)
    if m := re.fullmatch(r"Object contains unknown field `(.*)`", text):
        return join(path, m.group(1)), "unknown field"
    if m := re.fullmatch(r"Object missing required field `(.*)`", text):
        return join(path, m.group(1)), "missing"
    if m := re.fullmatch(r"Expected `(.*)`, got `.*`", text):
        kinds = [_KIND_WORDS.get(k, k) for k in m.group(1).split(" | ") if k != "null"]
        if steps and isinstance(steps[-1], int) and "a mapping" not in kinds:
            steps = steps[:-1]  # a bad item of a list of scalars: the list is what is wrong
            path, value, kinds = _path(base, steps), _walk(data, steps), ["a list"]
        what = _description(type_, steps)
        if kinds == ["a list"] and what:
            kinds = [f"a list of {what}"]
        return path, f"expected {' or '.join(kinds)}, got {value!r}"
    if text.startswith("Invalid enum value"):
        allowed = get_args(_type_at(type_, steps))
        if len(allowed) == 1:
            return path, f"expected {allowed[0]!r}, got {value!r}"
        return path, f"expected one of {', '.join(map(str, allowed))}, got {value!r}"
    return path, text


def _path(base: str, steps: list[Any]) -> str:
    out = base
    for step in steps:
        out = f"{out}[{step}]" if isinstance(step, int) else join(out, step)
    return out


def _walk(data: Any, steps: list[Any]) -> Any:
    for step in steps:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return _NOTHING
    return data


def _description(type_: Any, steps: list[Any]) -> str:
    """The `listing(...)` words of the field at a key path, or ""."""
    declared = _type_at(type_, steps, keep_annotated=True)
    if get_origin(declared) is Annotated:
        for meta in declared.__metadata__:
            if isinstance(meta, msgspec.Meta) and meta.description:
                return meta.description
    return ""


def _type_at(type_: Any, steps: list[Any], keep_annotated: bool = False) -> Any:
    """The declared type at a key path (`X | None` and Annotated unwrapped), or Any."""
    for step in [*steps, None]:
        if get_origin(type_) is Annotated and not (keep_annotated and step is None):
            type_ = get_args(type_)[0]
        args = [a for a in get_args(type_) if a is not type(None)]
        if get_origin(type_) is not Literal and len(args) < len(get_args(type_)):
            type_ = args[0] if len(args) == 1 else type_  # X | None -> X
            args = list(get_args(type_))
        if step is None:
            return type_
        if isinstance(type_, type) and issubclass(type_, msgspec.Struct):
            fields = msgspec.structs.fields(type_)
            type_ = next((f.type for f in fields if f.encode_name == step), Any)
        elif get_origin(type_) in (list, tuple):
            type_ = args[0] if args else Any
        elif get_origin(type_) is dict:
            type_ = args[1] if len(args) == 2 else Any
        else:
            return Any
    return type_
