"""Message: one utterance or action output, with MetaGPT's fields and meanings.

``cause_by``, ``sent_from`` and ``send_to`` accept classes, instances or strings and are stored as strings
("module.ClassName" for a class or an instance's class). ``instruct_content`` may be a pydantic model or a
plain dict; a model is serialized with its class, module and field types so it can be rebuilt even when its
class was created at run time and cannot be imported.
"""

from __future__ import annotations

import importlib
import json
import time
import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field, ValidationError, create_model, field_serializer, field_validator

from ltm.errors import InvalidInput

__all__ = [
    "MESSAGE_ROUTE_TO_ALL",
    "USER_REQUIREMENT",
    "Message",
    "UserRequirement",
    "any_to_str",
    "any_to_str_set",
]

MESSAGE_ROUTE_TO_ALL = "<all>"


class UserRequirement:
    """The action a user's requirement is caused by (MetaGPT's ``UserRequirement``)."""


def any_to_str(val: Any) -> str:
    """A string for routing: strings stay, classes and functions give "module.Name", instances their class's."""
    if isinstance(val, str):
        return val
    target = val if callable(val) else type(val)
    return f"{target.__module__}.{target.__qualname__}"


def any_to_str_set(val: Any) -> set[str]:
    """``any_to_str`` over a collection (a dict's values) or a single value, as a set."""
    if isinstance(val, dict):
        val = val.values()
    if isinstance(val, list | set | tuple | frozenset) or (isinstance(val, Iterable) and not isinstance(val, str)):
        return {any_to_str(v) for v in val}
    return {any_to_str(val)}


USER_REQUIREMENT = any_to_str(UserRequirement)

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _rebuild_model(spec: dict[str, Any]) -> BaseModel:
    """Rebuild an instruct_content model: import its class, or recreate it from the stored field types."""
    cls: Any = None
    module, name = spec.get("module"), spec.get("class")
    if module and name:
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            cls = None
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        fields = {
            key: (_JSON_TYPES.get(kind, Any), ...) for key, kind in (spec.get("mapping") or {}).items()
        } or {key: (Any, ...) for key in spec.get("value", {})}
        cls = create_model(str(name or "InstructContent"), **fields)  # type: ignore[call-overload]
    try:
        return cls(**spec.get("value", {}))
    except ValidationError as exc:
        raise InvalidInput(f"instruct_content does not fit its model {name}: {exc}") from exc


def _field_kind(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    for option in schema.get("anyOf", []):
        if option.get("type") not in (None, "null"):
            return str(option["type"])
    return "any"


class Message(BaseModel):
    """One message. ``Message("text")`` works; ``str(m)`` is ``"role: content"``."""

    id: str = Field(default="", validate_default=True)
    content: str = ""
    instruct_content: Any = Field(default=None, validate_default=True, description="A model, a dict or None.")
    role: str = "user"
    cause_by: str = Field(default="", validate_default=True)
    sent_from: str = Field(default="", validate_default=True)
    send_to: set[str] = Field(default_factory=lambda: {MESSAGE_ROUTE_TO_ALL}, validate_default=True)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: float = Field(default_factory=time.time, description="Unix seconds.")

    def __init__(self, content: str = "", /, **data: Any) -> None:
        data.setdefault("content", content)
        super().__init__(**data)

    @field_validator("id", mode="before")
    @classmethod
    def _check_id(cls, value: Any) -> str:
        return str(value) if value else uuid.uuid4().hex

    @field_validator("instruct_content", mode="before")
    @classmethod
    def _check_instruct_content(cls, value: Any) -> Any:
        if isinstance(value, dict) and "class" in value and "value" in value:
            return _rebuild_model(value)
        if value is None or isinstance(value, BaseModel | dict):
            return value or None
        raise InvalidInput(f"instruct_content must be a pydantic model or a dict, got {type(value).__name__}")

    @field_validator("cause_by", mode="before")
    @classmethod
    def _check_cause_by(cls, value: Any) -> str:
        return any_to_str(value) if value else USER_REQUIREMENT

    @field_validator("sent_from", mode="before")
    @classmethod
    def _check_sent_from(cls, value: Any) -> str:
        return any_to_str(value) if value else ""

    @field_validator("send_to", mode="before")
    @classmethod
    def _check_send_to(cls, value: Any) -> set[str]:
        return any_to_str_set(value) if value else {MESSAGE_ROUTE_TO_ALL}

    @field_serializer("instruct_content", mode="plain")
    def _ser_instruct_content(self, ic: BaseModel | dict[str, Any] | None) -> dict[str, Any] | None:
        if ic is None or isinstance(ic, dict):
            return ic
        schema = type(ic).model_json_schema()
        props = schema.get("properties", {})
        return {
            "class": type(ic).__name__,
            "module": type(ic).__module__,
            "mapping": {key: _field_kind(prop) for key, prop in props.items()},
            "value": ic.model_dump(mode="json"),
        }

    @field_serializer("send_to")
    def _ser_send_to(self, send_to: set[str]) -> list[str]:
        return sorted(send_to)

    def __setattr__(self, key: str, value: Any) -> None:
        if key in ("cause_by", "sent_from"):
            value = any_to_str(value) if value else (USER_REQUIREMENT if key == "cause_by" else "")
        elif key == "send_to":
            value = any_to_str_set(value) if value else {MESSAGE_ROUTE_TO_ALL}
        super().__setattr__(key, value)

    def __str__(self) -> str:
        return f"{self.role}: {self.content}"

    def __hash__(self) -> int:
        return hash(self.id)

    def dump(self) -> str:
        """This message as JSON (``Message.load`` reads it back, id included)."""
        return self.model_dump_json()

    @classmethod
    def load(cls, payload: str | bytes | dict[str, Any]) -> Message:
        """Read a message written by :meth:`dump` (or its dict)."""
        try:
            data = json.loads(payload) if isinstance(payload, str | bytes) else dict(payload)
            return cls(**data)
        except (ValueError, TypeError, ValidationError) as exc:
            raise InvalidInput(f"not a dumped Message: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the structure ``dump`` writes)."""
        return self.model_dump(mode="json")
