"""Message: one utterance or action output, with MetaGPT's fields and meanings.

``cause_by``, ``sent_from`` and ``send_to`` accept classes, instances or strings and are stored as strings
("module.ClassName" for a class or an instance's class). ``instruct_content`` may be a pydantic model or a
plain dict; a model is serialized with its class, module and field types.

Loading never imports code: a stored body names its class and module, but that text comes from
files, Redis or a JSONL import that anyone may have written. A class is resolved only from the registry the
application fills with :func:`register_instruct_content`; any other payload is rebuilt as a data-only model
from the stored field types (so ``ic.field`` keeps working for MetaGPT's run-time classes), and when even
that cannot be built it stays the stored dict, which dumps back unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    PydanticUserError,
    ValidationError,
    create_model,
    field_serializer,
    field_validator,
)
from pydantic_core import PydanticSerializationError, SchemaError

from ltm.errors import InvalidInput

__all__ = [
    "MESSAGE_ROUTE_TO_ALL",
    "Message",
    "USER_REQUIREMENT",
    "UserRequirement",
    "any_to_str",
    "any_to_str_set",
    "register_instruct_content",
    "registered_instruct_content",
    "with_context",
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


_REGISTRY: dict[str, type[BaseModel]] = {}


def register_instruct_content(*classes: type[BaseModel]) -> None:
    """Let loaded messages rebuild ``instruct_content`` as instances of these classes (keyed "module.Name").

    Loading never imports: a class not registered here comes back as a data-only model with the same fields.
    """
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            raise TypeError(f"register_instruct_content takes pydantic model classes, got {cls!r}")
        _REGISTRY[f"{cls.__module__}.{cls.__qualname__}"] = cls


def registered_instruct_content() -> dict[str, type[BaseModel]]:
    """A copy of the registry: "module.Name" -> class."""
    return dict(_REGISTRY)


def _rebuild_model(spec: dict[str, Any]) -> BaseModel | dict[str, Any]:
    """Rebuild an instruct_content payload without importing anything: a registered class, else a data-only
    model from the stored field types, else the stored dict itself."""
    module, name = spec.get("module"), spec.get("class")
    cls: Any = _REGISTRY.get(f"{module}.{name}")
    value = spec.get("value")
    if not isinstance(value, dict):
        return spec
    if cls is None:
        mapping = spec.get("mapping")
        kinds = mapping if isinstance(mapping, dict) else {}
        fields = {str(key): (_JSON_TYPES.get(str(kind), Any), ...) for key, kind in kinds.items()} or {
            str(key): (Any, ...) for key in value
        }
        try:
            cls = create_model(str(name or "InstructContent"), **fields)  # type: ignore[call-overload]
        except (NameError, TypeError, ValueError, SchemaError, PydanticUserError):  # names pydantic cannot hold
            return spec
        if set(cls.model_fields) != set(fields):  # pydantic turned some into private attributes: data would drop
            return spec
    try:
        return cls(**value)  # type: ignore[no-any-return,unused-ignore]  # Any without the pydantic plugin
    except ValidationError as exc:
        raise InvalidInput(f"instruct_content does not fit its model {name}: {exc}") from exc
    except TypeError:
        return spec


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
    created_at: float = Field(default_factory=time.time, allow_inf_nan=False, description="Unix seconds (finite).")

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
        registered = _REGISTRY.get(f"{type(ic).__module__}.{type(ic).__qualname__}")
        schema = type(ic).model_json_schema()
        props = schema.get("properties", {})
        return {
            "class": type(ic).__qualname__ if registered is not None else type(ic).__name__,
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
        """This message as JSON (``Message.load`` reads it back, id included); InvalidInput when a field
        cannot be written as UTF-8 JSON (an unpaired surrogate, an object JSON cannot hold)."""
        try:
            return self.model_dump_json()
        except PydanticSerializationError as exc:
            raise InvalidInput(
                f"message {self.id[:64]!r} cannot be written as JSON ({exc}); pass valid Unicode text and JSON values"
            ) from exc

    @classmethod
    def load(cls, payload: str | bytes | dict[str, Any]) -> Message:
        """Read a message written by :meth:`dump` (or its dict)."""
        try:
            data = json.loads(payload) if isinstance(payload, str | bytes) else dict(payload)
            return cls(**data)
        except ValidationError as exc:  # one line per field, the whole on one line (the CLI prints it)
            fields = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']} (got {e['input']!r:.60})"
                for e in exc.errors()
            )
            raise InvalidInput(f"not a valid Message: {fields}") from exc
        except (ValueError, TypeError) as exc:
            raise InvalidInput(f"not a dumped Message: {exc}") from exc
        except RecursionError as exc:
            raise InvalidInput("not a dumped Message: nested too deeply; flatten its metadata") from exc

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the structure ``dump`` writes)."""
        return self.model_dump(mode="json")


def with_context(turns: Sequence[Message], window: int = 1) -> list[Message]:
    """Copies of conversation ``turns`` ready for ``storage.add_batch``: each gets ``metadata["context"]``, the
    ``window`` turns before and after it (as "speaker: content" lines, for the keyword index), and
    ``metadata["embed_context"]``, the turns before plus the turn itself (embedded as its second, *context*
    vector). The caller's messages are not mutated.

    Pass each turn as a Message whose metadata says who spoke and when (``speaker``, ``session``, ``date``):
    the keyword index then reaches "when did Alice mention her trip" even if the turn says "I", and short
    turns ("I did, last week") get their topic from the turn before. On the labelled conversation set
    (``python -m bench.eval_retrieval``) this context is what lifts hybrid search above dense and keyword.
    """
    out: list[Message] = []
    for i, turn in enumerate(turns):
        near = [*turns[max(0, i - window) : i], *turns[i + 1 : i + 1 + window]]
        copy = turn.model_copy(deep=True)
        copy.metadata["context"] = "\n".join(_turn_line(m) for m in near)
        copy.metadata["embed_context"] = "\n".join(_turn_line(m) for m in [*turns[max(0, i - window) : i], turn])
        out.append(copy)
    return out


def _turn_line(message: Message) -> str:
    return f"{message.metadata.get('speaker') or message.sent_from or message.role}: {message.content}"
