"""A framework's metadata in ltm's messages: how the AutoGen and CrewAI adapters store a memory's metadata dict.

Those frameworks let a memory carry any dict, while ltm's store reads some top-level keys itself (``user_id``,
``agent_id``, ``run_id``: scopes, checked as text; ``expires_at``: the expiry, checked as a time;
``embed_context``: a second text to embed) and a filter reads ``metadata.a.b`` as key ``b`` inside key ``a``. So
the adapters store the framework's dict with the keys that would clash escaped, and read it back exactly as it
was given (types included):

- a top-level key that ltm reads, that the adapter uses itself, that holds ``.`` or that starts with ``-`` is
  stored as ``-`` + the key with each ``-`` written ``--`` and each ``.`` written ``-_`` (``user_id`` as
  ``-user_id``, ``a.b`` as ``-a-_b``); a nested key only for ``.`` or a leading ``-``. Every other key is stored
  as it is, so a filter on ``metadata.KEY`` reads it where it always was, and so does data written before.
- a scope or expiry key whose value ltm can read (text of 1-256 characters; unix seconds or an ISO 8601 time) is
  also copied under its own name, where it keeps its ltm meaning (a scope to filter by, an expiry); any other
  value is the framework's alone, stored and given back but never refused.

Filters follow the same rules (:func:`stored_key`, :func:`stored_path`). A string holding NUL can never be
stored, so a comparison with one is decided here (:func:`without_nul`): no match for ``eq`` / ``in`` /
``contains``, every message for ``ne`` / ``nin``; both engines then answer alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import scoped

__all__ = [
    "LTM_KEYS",
    "NEVER",
    "decode_metadata",
    "encode_metadata",
    "has_nul",
    "joined",
    "stored_key",
    "stored_path",
    "without_nul",
]

_SCOPES = ("user_id", "agent_id", "run_id")
_EXPIRY = "expires_at"
LTM_KEYS = frozenset({*_SCOPES, _EXPIRY, "embed_context"})  # top-level metadata keys the store reads itself
NEVER: dict[str, Any] = {"id": ""}  # a filter no message matches: every stored id is non-empty
_ALWAYS: dict[str, Any] = {"id": {"ne": ""}}
_ESCAPE = "-"


def _escaped(key: str) -> str:
    return _ESCAPE + key.replace("-", "--").replace(".", "-_")


def _unescaped(stored: str) -> str:
    out, i, body = [], 0, stored[1:]
    while i < len(body):
        if body[i] == "-" and i + 1 < len(body) and body[i + 1] in "-_":
            out.append("-" if body[i + 1] == "-" else ".")
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def stored_key(key: str, owned: frozenset[str] = frozenset(), *, top: bool = True) -> str:
    """The key under which the framework's ``key`` is stored (``owned``: the adapter's own top-level keys)."""
    if "." in key or key.startswith(_ESCAPE) or (top and (key in LTM_KEYS or key in owned)):
        return _escaped(key)
    return key


def _encode(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {stored_key(k, top=False) if isinstance(k, str) else k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return {_unescaped(k) if k.startswith(_ESCAPE) else k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _ltm_reads(key: str, value: Any) -> bool:
    """Whether ltm can take ``value`` as its scope / expiry ``key`` (the store's own check decides)."""
    try:
        scoped(Message("-"), **{key: value})
    except (InvalidInput, TypeError, ValueError, OverflowError):
        return False
    return True


def encode_metadata(metadata: Mapping[str, Any] | None, owned: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The stored form of a framework's ``metadata`` (``owned``: the adapter's own top-level keys, which the
    adapter adds to the result itself)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata must be a dict, got {type(metadata).__name__}")
    stored: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise InvalidInput(f"metadata keys are text (JSON holds no other), got {key!r}; use str({key!r})")
        stored[stored_key(key, owned)] = _encode(value)
        if key in (*_SCOPES, _EXPIRY) and value is not None and _ltm_reads(key, value):
            stored[key] = value
    return stored


def decode_metadata(stored: Mapping[str, Any], owned: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The framework's metadata back from its stored form: the adapter's own keys and ltm's copies left out (a
    scope / expiry key without its escaped twin was written before the escaping, and is the framework's)."""
    metadata: dict[str, Any] = {}
    for key, value in stored.items():
        if key in owned or (key in LTM_KEYS and _escaped(key) in stored):
            continue
        metadata[_unescaped(key) if key.startswith(_ESCAPE) else key] = _decode(value)
    return metadata


def stored_path(path: str, owned: frozenset[str] = frozenset()) -> str:
    """A ``metadata.`` filter path of the framework's keys as a path of their stored keys. ``\\.`` is a ``.``
    inside a key (``metadata.a\\.b`` is the key ``a.b``; ``metadata.a.b`` is ``b`` inside ``a``)."""
    keys, current, i = [], [], 0
    while i < len(path):
        if path[i] == "\\" and i + 1 < len(path) and path[i + 1] in ".\\":
            current.append(path[i + 1])
            i += 2
            continue
        if path[i] == ".":
            keys.append("".join(current))
            current = []
        else:
            current.append(path[i])
        i += 1
    keys.append("".join(current))
    return ".".join(stored_key(key, owned, top=n == 0) for n, key in enumerate(keys))


def has_nul(value: Any) -> bool:
    """Whether ``value`` (or anything inside it) is a string holding NUL, which no stored message holds."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(has_nul(v) for v in value)
    return False


_NO_MATCH = ("eq", "contains", "icontains")  # with a NUL value: no stored string matches
_ORDERED = ("gt", "gte", "lt", "lte")


def without_nul(filters: Any) -> Any:
    """``filters`` (ltm's filter language) with every comparison to a string holding NUL decided: such a string
    is never stored, so ``eq`` / ``contains`` never match and ``ne`` always does, ``in`` / ``nin`` drop it, and an
    order compares with the text before the NUL (the same answer for text without NUL). Anything malformed is
    left for the store to refuse."""
    if not isinstance(filters, Mapping) or not has_nul(filters):
        return filters
    parts: list[dict[str, Any]] = []
    for key, value in filters.items():
        if key in ("AND", "OR") and isinstance(value, list | tuple):
            parts.append({key: [without_nul(v) for v in value]})
        elif key == "NOT":
            parts.append({key: without_nul(value)})
        elif isinstance(value, Mapping):
            parts.extend(_decided(key, str(op), v) for op, v in value.items())
        elif isinstance(value, list | tuple | set | frozenset):
            parts.append(_decided(key, "in", value))
        else:
            parts.append(_decided(key, "eq", value))
    return joined(parts)


def joined(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The AND of filter ``parts``: one dict while their keys differ (several keys in one dict are AND-ed), so that
    no level of nesting is added to the store's limit; an ``AND`` list otherwise."""
    keys = [key for part in parts for key in part]
    if len(keys) == len(set(keys)):
        return {key: value for part in parts for key, value in part.items()}
    return {"AND": parts}


def _decided(field: str, op: str, value: Any) -> dict[str, Any]:
    if not has_nul(value):
        return {field: {op: value}}
    if op in _NO_MATCH:
        return NEVER
    if op == "ne":
        return _ALWAYS
    if op in ("in", "nin") and isinstance(value, list | tuple | set | frozenset):
        kept = [v for v in value if not has_nul(v)]
        if kept:
            return {field: {op: kept}}
        return NEVER if op == "in" else _ALWAYS
    if op in _ORDERED and isinstance(value, str):
        before = value.split("\x00", 1)[0]
        # text without NUL is above "ab\0c" exactly when it is above "ab", and below it when at most "ab"
        return {field: {"gt" if op in ("gt", "gte") else "lte": before}}
    return {field: {op: value}}
