"""The Shop-R1 action space: exactly three action types (paper, Table 1).

| type              | fields         | meaning                                     |
|-------------------|----------------|---------------------------------------------|
| `click`           | `name`         | click the element with that `name=` attribute |
| `type_and_submit` | `name`, `text` | type `text` into the named field, press Enter |
| `terminate`       | none           | close the browser (unsatisfied)             |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACTION_TYPES = ("click", "type_and_submit", "terminate")

# Which fields each type carries; every other field must be absent, null or "" (the
# paper's output format always writes all three keys: `"text": ""` on a click).
FIELDS_BY_TYPE: dict[str, tuple[str, ...]] = {
    "click": ("name",),
    "type_and_submit": ("name", "text"),
    "terminate": (),
}


@dataclass(frozen=True)
class Action:
    """One shopper action. `name` / `text` are None where the type has no such field."""

    type: str
    name: str | None = None
    text: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The compact JSON form (data files): only the fields the type carries."""
        out: dict[str, Any] = {"type": self.type}
        for field in FIELDS_BY_TYPE.get(self.type, ()):
            out[field] = getattr(self, field)
        return out

    def to_paper_json(self) -> dict[str, Any]:
        """The paper's output form: always `type`, `name`, `text`; "" where the type has
        no such field (what a model prompted as in the paper writes, so SFT targets it)."""
        return {"type": self.type, "name": self.name or "", "text": self.text or ""}

    @classmethod
    def from_json(cls, obj: Any) -> Action:
        """Build an Action from its JSON object; ValueError names the field at fault.

        Type semantics are enforced: `click` needs a string `name`, `type_and_submit`
        string `name` and `text`, `terminate` neither. A field the type does not carry may
        be absent, null or "" (the paper's format writes `"text": ""` on a click); any
        other value is an error. Unknown keys are rejected, so a typo (`"nmae"`) is not
        silently read as a missing field. Empty strings are
        allowed here (the attribute reward tells them apart); datasets additionally
        require non-empty values (see `shop_r1.data.schema.validate_action`).
        """
        if not isinstance(obj, dict):
            raise ValueError(f"action: expected an object, got {_kind(obj)}")
        kind = obj.get("type")
        if kind not in ACTION_TYPES:
            raise ValueError(
                f"action.type: expected one of {', '.join(ACTION_TYPES)}, got {kind!r}"
            )
        wanted = FIELDS_BY_TYPE[kind]
        for key, value in obj.items():
            if key == "type":
                continue
            if key not in ("name", "text"):
                raise ValueError(f"action.{key}: unknown key (allowed: type, name, text)")
            if key not in wanted and value not in (None, ""):
                raise ValueError(f"action.{key}: a {kind} action has no {key}")
        values: dict[str, str] = {}
        for field in wanted:
            if field not in obj:
                raise ValueError(f"action.{field}: missing (a {kind} action needs {field})")
            value = obj[field]
            if not isinstance(value, str):
                raise ValueError(f"action.{field}: expected a string, got {_kind(value)}")
            values[field] = value
        return cls(type=kind, **values)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__
