"""How a LangGraph item lives in one ltm namespace, and LangGraph's filters in the store's filter language.

An item ``(namespace, key) -> value`` is one or more messages, one per text it is indexed on (LangGraph embeds
each field an ``IndexConfig``'s ``fields`` names, and an item scores as its best field):

- part 0, the head, id ``lg-<hash>.0``: always there; its content is the first indexed text, or a label when
  the item is not indexed (``index=False``, or no field holds text), stored without a vector (the store's
  placeholder, ``NO_VECTOR``) and kept out of every search;
- parts 1.., ids ``lg-<hash>.<i>``: the other indexed texts.

A put on a stored key writes a new **version** of the item: the store supersedes the old version's messages with
the new one's (:meth:`MemoryStorage.supersede_batch`), so reads ``as_of`` a past time see the old value. The
first version's ids are the ones above; a later version's carry a token of their own (``lg_v``), ids
``lg-<hash>.<token>.<i>``, since the versions before stay stored.

The head carries the item's value (``lg_value``) once, whatever the number of parts; every part carries what
places it (``lg_item``, ``lg_key``, the namespace ``lg_ns``, ``lg_created`` / ``lg_updated`` as unix
seconds, the item's TTL in minutes), so a search hit on any part leads to its head by id. A value whose dict
keys hold ``.`` (which the store's metadata refuses, as filters read a dot as nesting) is kept with those keys
escaped (``.`` as ``%2E``, ``%`` as ``%25``) and ``lg_escaped`` set; reads give back the keys as written. The
expiry rides in ltm's own ``expires_at``: an expired item is invisible to every read at once and purged by the
next one.

Items written when every part carried the value read as ever: readers take the value from the head only. Items
written with ``lg_prefixes`` (every prefix of the namespace, which searches once read) keep it unread: a prefix is
a range of ``lg_ns`` (:func:`namespace_filter`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import Item, SearchItem, get_text_at_path

from ltm.errors import InvalidInput
from ltm.integrations.langgraph.filters import matches, value_filter
from ltm.message import Message
from ltm.store import MemoryStorage

__all__ = [
    "MAX_VALUE_DEPTH",
    "ROLE",
    "check_value",
    "Part",
    "head_id",
    "head_of",
    "is_head",
    "item_filter",
    "item_key",
    "item_of",
    "item_parts",
    "matches",
    "namespace_filter",
    "namespace_label",
    "nothing_outside",
    "outside_filter",
    "part_id",
    "search_item_of",
    "texts_of",
    "value_filter",
    "value_of",
    "within",
]

ROLE = "langgraph"  # the role of every message that holds an item
_ESCAPED = re.compile(r"%(2E|25)")
MAX_VALUE_DEPTH = 31  # the store nests metadata at most 32 levels deep, lg_value being one of them


def namespace_label(namespace: Sequence[str]) -> str:
    """The namespace as one string (a JSON list: labels may hold any character but NUL)."""
    return _label(tuple(namespace))


@functools.lru_cache(maxsize=4096)
def _label(namespace: tuple[str, ...]) -> str:
    return json.dumps(list(namespace), ensure_ascii=False)  # a store's puts go to few namespaces: made once each


def item_key(namespace: Sequence[str], key: str) -> str:
    """The item's id stem: a hash of its namespace and key (ids stay short whatever the key)."""
    # the text hashed is json.dumps([list(namespace), key], ensure_ascii=False), the namespace's part made once
    text = "[" + _label(tuple(namespace)) + ", " + json.dumps(key, ensure_ascii=False) + "]"
    return "lg-" + hashlib.sha256(text.encode()).hexdigest()[:40]


def head_id(namespace: Sequence[str], key: str) -> str:
    """The id of the item's first version's head message (part 0)."""
    return item_key(namespace, key) + ".0"


def part_id(stem: str, version: str, part: int) -> str:
    """The id of part ``part`` of the item ``stem``'s version ``version`` ("" for its first)."""
    return f"{stem}.{version}.{part}" if version else f"{stem}.{part}"


def head_of(message: Message) -> str:
    """The id of the head of the version ``message`` (any of its parts) belongs to."""
    return part_id(message.metadata["lg_item"], str(message.metadata.get("lg_v", "")), 0)


def check_value(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object (what the store keeps); InvalidInput naming the problem otherwise."""
    if not isinstance(value, dict):
        raise InvalidInput(f"a store value is a dict, got {type(value).__name__}")
    flat = all(isinstance(v, str | int | float | bool) or v is None for v in value.values())  # the common value
    if not flat and _depth(value) > MAX_VALUE_DEPTH:
        raise InvalidInput(
            f"a store value is nested more than {MAX_VALUE_DEPTH} levels deep (ltm keeps values in its "
            "metadata, which bounds the depth); flatten it or keep the deep part as a JSON string"
        )
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"a store value must be JSON (dicts, lists, str, finite numbers, bool, None): {exc}; "
            "convert it first (e.g. a datetime to isoformat())"
        ) from exc
    return value


def _depth(value: Any) -> int:
    """How many levels ``value`` spans, itself the first and each scalar one more than its container (without
    recursion: a value may nest thousands deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_VALUE_DEPTH:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else ()
        stack.extend((child, level + 1) for child in children)
    return deepest


def _dotted(value: Any) -> bool:
    if isinstance(value, dict):
        return any("." in str(k) or _dotted(v) for k, v in value.items())
    return isinstance(value, list) and any(_dotted(v) for v in value)


def _rekey(value: Any, key: Any) -> Any:
    if isinstance(value, dict):
        return {key(k): _rekey(v, key) for k, v in value.items()}
    return [_rekey(v, key) for v in value] if isinstance(value, list) else value


def _escape(key: str) -> str:
    return key.replace("%", "%25").replace(".", "%2E")


def _unescape(key: str) -> str:
    return _ESCAPED.sub(lambda m: "." if m.group(1) == "2E" else "%", key)


def texts_of(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The distinct non-blank texts of ``value`` at ``fields`` (LangGraph's paths: ``a.b``, ``a[*].b``, ``$``)."""
    texts: list[str] = []
    for field in fields:
        for text in get_text_at_path(value, field):
            if text.strip() and text not in texts:
                texts.append(text)
    return texts


@dataclass(frozen=True)
class Part:
    """One message of an item, and whether it is embedded (False: stored without a vector)."""

    message: Message
    indexed: bool


def item_parts(
    namespace: tuple[str, ...],
    key: str,
    value: Mapping[str, Any],
    texts: list[str],
    *,
    created: float,
    updated: float,
    ttl_minutes: float | None,
    version: str = "",
    stem: str | None = None,
) -> list[Part]:
    """The messages that store the item's version ``version`` ("" for its first; see the module docstring);
    ``stem``: :func:`item_key` of the namespace and key, when the caller has it."""
    stem = item_key(namespace, key) if stem is None else stem
    metadata: dict[str, Any] = {
        "lg_item": stem,
        "lg_ns": namespace_label(namespace),
        "lg_key": key,
        "lg_created": created,
        "lg_updated": updated,
        "lg_parts": max(len(texts), 1),
        "lg_indexed": bool(texts),
    }
    if version:
        metadata["lg_v"] = version
    if ttl_minutes is not None:
        metadata["lg_ttl"] = ttl_minutes
        metadata["expires_at"] = updated + ttl_minutes * 60.0
    escaped = _dotted(value)
    head = {"lg_value": _rekey(dict(value), _escape) if escaped else dict(value)}
    if escaped:
        head["lg_escaped"] = True
    contents = texts or [f"{namespace_label(namespace)} {key} (not indexed)"]
    return [
        Part(
            Message(
                text,
                id=part_id(stem, version, i),
                role=ROLE,
                created_at=updated,
                metadata={**metadata, **(head if i == 0 else {}), "lg_part": i},
            ),
            bool(texts),
        )
        for i, text in enumerate(contents)
    ]


def is_head(message: Message) -> bool:
    """Whether ``message`` is its item's head (the part that holds the value)."""
    return bool(message.metadata.get("lg_part") == 0)


def value_of(head: Message) -> dict[str, Any]:
    """The item's value as it was put, from its head."""
    value: dict[str, Any] = head.metadata["lg_value"]
    return _rekey(value, _unescape) if head.metadata.get("lg_escaped") else value


def item_of(head: Message) -> Item:
    """The LangGraph ``Item`` its head message holds."""
    return Item(**_fields(head))


def search_item_of(head: Message, score: float | None) -> SearchItem:
    """The LangGraph ``SearchItem`` its head message holds, with its score (None: found without a query)."""
    return SearchItem(**_fields(head), score=score)


def _fields(head: Message) -> dict[str, Any]:
    meta = head.metadata
    return {
        "namespace": tuple(json.loads(meta["lg_ns"])),
        "key": meta["lg_key"],
        "value": value_of(head),
        "created_at": _when(meta["lg_created"]),
        "updated_at": _when(meta["lg_updated"]),
    }


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(float(seconds), tz=timezone.utc)


def _bounds(prefix: Sequence[str]) -> tuple[str, str, str]:
    """(the prefix's own label, and the range [low, high) of the labels of the namespaces below it): a label is
    a JSON list whose labels are joined by ``", "``, so every deeper namespace's label starts with the prefix's
    without its ``]``, then ``", "``; ``"!"`` follows ``" "`` in byte order."""
    label = namespace_label(prefix)
    return label, label[:-1] + ", ", label[:-1] + ",!"


def namespace_filter(prefix: Sequence[str]) -> dict[str, Any] | None:
    """Items whose namespace starts with ``prefix`` (literal labels, whole labels only); None for every item.
    Written as an equality and a range of ``lg_ns``, which the store's index on it serves (an index probe per
    search, where a list's ``contains`` reads every row)."""
    if not prefix:
        return None
    label, low, high = _bounds(prefix)
    field = "metadata.lg_ns"
    return {"OR": [{field: label}, {"AND": [{field: {"gte": low}}, {field: {"lt": high}}]}]}


def within(message: Message, prefix: Sequence[str]) -> bool:
    """Whether ``message`` is a part of an indexed item whose namespace starts with ``prefix``."""
    meta = message.metadata
    if "lg_item" not in meta or not meta.get("lg_indexed"):
        return False
    if not prefix:
        return True
    label, low, high = _bounds(prefix)
    found = str(meta.get("lg_ns", ""))
    return found == label or low <= found < high


def outside_filter(prefix: Sequence[str]) -> dict[str, Any]:
    """Items whose namespace does not start with ``prefix`` (not empty): three ranges of ``lg_ns`` that are each
    one index probe when empty, so that "is anything stored outside this prefix?" costs no scan."""
    label, low, high = _bounds(prefix)
    field = "metadata.lg_ns"
    return {
        "OR": [
            {field: {"lt": low}},
            {"AND": [{field: {"gte": high}}, {field: {"lt": label}}]},
            {field: {"gt": label}},
        ]
    }


def nothing_outside(storage: MemoryStorage, prefix: Sequence[str]) -> bool:
    """Whether every item ``storage`` holds is indexed and under ``prefix``: probes of the indexes on
    ``lg_indexed`` and ``lg_ns`` that find nothing (a count of what they find, so no scan in any order)."""
    probes: list[dict[str, Any]] = [{"metadata.lg_indexed": False}]
    if prefix:
        probes.append(outside_filter(prefix))
    return storage.count({"OR": probes} if len(probes) > 1 else probes[0]) == 0


def item_filter(stems: Sequence[str]) -> dict[str, Any]:
    """Every part of these items."""
    return {"metadata.lg_item": {"in": list(stems)}}
