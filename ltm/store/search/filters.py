r"""The one filter language of the store: parsed and checked here, compiled to parameterised SQL.

Search, list, delete_where, the CLI and the llama-index adapter all go through :func:`parse`; front ends
translate into this shape, never around it. A filter is a dict:

- ``{"role": "user"}``: equality (a list value means ``in``);
- ``{"created_at": {"gte": t0, "lt": t1}}``: operators, AND-ed: ``eq ne in nin gt gte lt lte contains
  icontains``;
- ``{"AND": [f, ...]}``, ``{"OR": [f, ...]}``, ``{"NOT": f}`` combine; several keys in one dict are AND-ed;
- fields: ``id``, ``content``, ``role``, ``cause_by``, ``sent_from``, ``send_to`` (a set: ``eq`` means "is one
  of the recipients"), ``created_at`` and ``expires_at`` (unix seconds, a ``datetime`` or an ISO 8601 string),
  the scopes ``user_id`` / ``agent_id`` / ``run_id`` (read from the message's metadata keys of the same name),
  the times ``valid_from`` / ``valid_to`` / ``superseded_at`` / ``recorded_at`` (:mod:`ltm.store.validity`),
  and any metadata key as ``metadata.KEY`` (``metadata.a.b`` reaches into a nested dict; ``metadata.a\.b`` is the key
  ``a.b``: :func:`metadata_keys`, :func:`metadata_field`).

Logic is two-valued: a message without the field never matches a positive operator, and ``ne`` / ``nin`` /
``NOT`` are exact complements (they match messages without the field). ``contains`` is a substring test on
text and a membership test on a list; ``icontains`` folds case (Unicode casefold). ``gt``-like operators
compare numbers with numbers and text with text, except that with a number they also compare a number stored as
text by its value (``"7" > 5``, as LangGraph's stores do): text written as a plain decimal number
(:data:`NUMBER_TEXT`: ``7``, ``-2.5``, ``.5``, ``1e3``; not ``inf``, ``0x10`` or text with spaces); other text
never matches a number, and a number never matches text. No stored text holds NUL (the store refuses it), so
a filter value holding one matches what that means on every engine: nothing for ``eq`` / ``in`` / ``contains``,
everything for ``ne`` / ``nin``, and its place in code point order for ``gt``-like operators.

Values never enter the SQL text: every value is a bound parameter (a metadata key, a checked name, is written
as a JSON path literal so that an index on it can serve the filter: see :func:`metadata_path`). The old search
kwargs (``role``, ``cause_by``, ``sent_from``, ``created_after``, ``created_before``, ``metadata={...}``)
are still accepted and translated (:func:`parse` does it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from ltm.errors import InvalidInput
from ltm.message import any_to_str

__all__ = [
    "FIELDS",
    "NOTHING",
    "NUMBER_TEXT",
    "NUMBER_TEXT_MAX",
    "OPERATORS",
    "And",
    "Compare",
    "Filter",
    "Not",
    "Or",
    "casefold",
    "metadata_field",
    "metadata_keys",
    "metadata_path",
    "parse",
    "text_number",
]

OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")
_ORDERED = ("gt", "gte", "lt", "lte")
_SQL_OP = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
Kind = Literal["text", "time", "set", "metadata"]
# field -> (kind, SQL expression over ``messages m``, nullable)
FIELDS: dict[str, tuple[Kind, str, bool]] = {
    "id": ("text", "m.id", False),
    "content": ("text", "json_extract(m.body, '$.content')", False),
    "role": ("text", "m.role", False),
    "cause_by": ("text", "m.cause_by", False),
    "sent_from": ("text", "m.sent_from", False),
    "send_to": ("set", "m.body", False),
    "created_at": ("time", "m.created_at", False),
    "expires_at": ("time", "m.expires_at", True),
    "user_id": ("text", "m.user_id", True),
    "agent_id": ("text", "m.agent_id", True),
    "run_id": ("text", "m.run_id", True),
    # valid time and record time (ltm.store.validity)
    "valid_from": ("time", "m.valid_from", True),
    "valid_to": ("time", "m.valid_to", True),
    "superseded_at": ("time", "m.superseded_at", True),
    "recorded_at": ("time", "m.recorded_at", True),
}
_SEGMENT = re.compile(r"(?:[A-Za-z0-9_\-]|\\\.){1,64}")  # a key of a metadata path, its dots escaped
_DOT = re.compile(r"(?<!\\)\.")  # a dot that separates two keys (not one escaped as \.)
# text written as a plain decimal number ("7", "-2.5", ".5", "1e3"; no spaces, no inf / nan / hex): what a gt-like
# operator with a number compares by value. The same pattern on both engines (a function on SQLite's connections,
# a regular expression in PostgreSQL's SQL); at most NUMBER_TEXT_MAX characters and a 2-digit exponent, so that
# every such text is a finite float and a PostgreSQL numeric alike
NUMBER_TEXT = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,2})?"  # all of the text: fullmatch, ^( )$
NUMBER_TEXT_MAX = 64
_NUMBER_TEXT = re.compile(NUMBER_TEXT)
_LEGACY = {"created_after", "created_before", "metadata"}
_MAX_IN = 10_000
MAX_DEPTH = 8  # nested AND / OR / NOT: SQLite's parser overflows its stack past about 17 nested NOTs
MAX_TERMS = 256  # comparisons in one filter: a flat AND is as deep to SQLite as it is long
Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Compare:
    """``field op value``: a checked leaf (``value`` already converted to what the column holds)."""

    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class And:
    """All of ``parts``."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    """Any of ``parts``."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    """The exact complement of ``part``."""

    part: Filter


Filter = Compare | And | Or | Not
NOTHING = Compare("id", "eq", None)  # every message has an id: the filter no message matches, in every dialect


def parse(filters: Mapping[str, Any] | None) -> Filter | None:
    """Check ``filters`` and return its tree; None when empty. Raises InvalidInput naming the fix."""
    if filters is None:
        return None
    if not isinstance(filters, Mapping):
        raise InvalidInput(f"filters must be a dict such as {{'role': 'user'}}, got {type(filters).__name__}")
    if not filters:
        return None
    tree = _node(filters, "filters", 1)
    if _terms(tree) > MAX_TERMS:
        raise InvalidInput(
            f"filters hold more than {MAX_TERMS} comparisons; use 'in' with a list of values, or split the query"
        )
    return tree


def _terms(tree: Filter) -> int:
    if isinstance(tree, Compare):
        return 1
    if isinstance(tree, Not):
        return _terms(tree.part)
    return sum(_terms(p) for p in tree.parts)


def text_number(value: Any) -> float | None:
    """The SQL function ``ltm_number`` (registered on every embedded store connection): the value of text written
    as a plain decimal number (:data:`NUMBER_TEXT`), else None (also for anything that is not text)."""
    if isinstance(value, str) and len(value) <= NUMBER_TEXT_MAX and _NUMBER_TEXT.fullmatch(value):
        return float(value)
    return None


def casefold(value: Any) -> Any:
    """The SQL function ``ltm_fold`` (registered on every store connection): Unicode case folding."""
    return value.casefold() if isinstance(value, str) else value


# -- parsing -----------------------------------------------------------------------------------------------
def _legacy(filters: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pre-language search kwargs, rewritten into the language (the rest is left as it is)."""
    if not _LEGACY & set(filters):
        return filters
    if "metadata" in filters and not isinstance(filters["metadata"], Mapping):
        raise InvalidInput("filter 'metadata' takes a dict of key -> value; or filter one key as 'metadata.KEY'")
    out: dict[str, Any] = {k: v for k, v in filters.items() if k not in _LEGACY}
    times: dict[str, Any] = {}
    for name, op in (("created_after", "gte"), ("created_before", "lt")):
        if filters.get(name) is not None:
            times[op] = filters[name]
    if times:
        out["created_at"] = {**times, **_as_ops(out.get("created_at"))}
    for key, value in (filters.get("metadata") or {}).items():
        if not isinstance(key, str):
            raise InvalidInput(f"metadata filter keys are text, got {key!r}")
        out[f"metadata.{key}"] = value
    return out


def _as_ops(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    return dict(value) if isinstance(value, Mapping) else {"eq": value}


def _node(spec: Any, where: str, depth: int) -> Filter:
    if not isinstance(spec, Mapping) or not spec:
        raise InvalidInput(f"{where} must be a non-empty dict such as {{'role': 'user'}}, got {_short(spec)}")
    spec = _legacy(spec)
    parts: list[Filter] = []
    for key, value in spec.items():
        if key in ("AND", "OR"):
            if not isinstance(value, list | tuple) or not value:
                raise InvalidInput(f"{key} takes a non-empty list of filters, got {_short(value)}")
            _deeper(depth)
            children = tuple(_node(v, f"{key}[{i}]", depth + 1) for i, v in enumerate(value))
            parts.append(And(children) if key == "AND" else Or(children))
        elif key == "NOT":
            _deeper(depth)
            parts.append(Not(_node(value, "NOT", depth + 1)))
        elif isinstance(key, str):
            parts.extend(_field(key, value))
        else:
            raise InvalidInput(f"filter keys are field names, got {key!r}")
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _deeper(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidInput(
            f"filters nest AND / OR / NOT more than {MAX_DEPTH} levels deep; flatten them "
            "(several keys in one dict are AND-ed, 'in' takes a list)"
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _field(name: str, value: Any) -> list[Filter]:
    kind = _kind(name)
    if isinstance(value, Mapping):
        if not value:
            raise InvalidInput(f"filter {name!r} got an empty operator dict; use e.g. {{'eq': ...}}")
        return [_without_nul(_compare(name, kind, op, v)) for op, v in value.items()]
    if isinstance(value, list | tuple | set | frozenset):
        return [_without_nul(_compare(name, kind, "in", value))]
    return [_without_nul(_compare(name, kind, "eq", value))]


def _kind(name: str) -> Kind:
    if name in FIELDS:
        return FIELDS[name][0]
    if name.startswith("metadata."):
        metadata_keys(name)
        return "metadata"
    raise InvalidInput(
        f"unknown filter field {name!r}; fields are {sorted(FIELDS)} and metadata.KEY (combine with AND / OR / NOT)"
    )


def _compare(name: str, kind: Kind, op: Any, value: Any) -> Compare:
    if op not in OPERATORS:
        raise InvalidInput(f"unknown filter operator {op!r} on {name!r}; operators are {', '.join(OPERATORS)}")
    if op in ("in", "nin"):
        if not isinstance(value, list | tuple | set | frozenset) or not value:
            raise InvalidInput(f"filter {name!r} {op} takes a non-empty list, got {value!r}")
        if len(value) > _MAX_IN:
            raise InvalidInput(f"filter {name!r} {op} takes at most {_MAX_IN} values; split the query")
        return Compare(name, op, tuple(_value(name, kind, "eq", v) for v in value))
    return Compare(name, op, _value(name, kind, op, value))


def _value(name: str, kind: Kind, op: str, value: Any) -> Any:
    """``value`` checked against the field's kind and converted to what SQL compares it with."""
    if op in ("contains", "icontains"):
        if kind == "time":
            raise InvalidInput(f"filter {name!r} is a time: {op} does not apply; use gt / gte / lt / lte")
        if not isinstance(value, str) and kind != "metadata":
            raise InvalidInput(f"filter {name!r} {op} takes text, got {type(value).__name__}")
        if op == "icontains" and not isinstance(value, str):
            raise InvalidInput(f"filter {name!r} icontains takes text, got {type(value).__name__}")
        return _scalar(name, value) if kind == "metadata" else value
    if kind == "time":
        return _time(name, value, op)
    if kind == "metadata":
        scalar = _scalar(name, value)
        if op in _ORDERED and (scalar is None or isinstance(scalar, bool)):
            raise InvalidInput(f"filter {name!r} {op} compares a number or text, got {value!r}")
        return scalar
    if op in _ORDERED:
        raise InvalidInput(f"filter {name!r} is text: {op} does not apply; use eq / ne / in / nin / contains")
    if value is None and FIELDS[name][2]:
        return None
    if name in ("cause_by", "sent_from", "send_to") and _is_named(value):
        return any_to_str(value)  # MetaGPT passes action classes (or instances) for cause_by
    if not isinstance(value, str):
        raise InvalidInput(f"filter {name!r} takes text, got {type(value).__name__} {value!r}")
    return value


def _nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


def _without_nul(node: Compare) -> Filter:
    """``node`` with its NUL-holding text operands replaced by what they mean: the store refuses NUL in all it
    writes (:mod:`ltm.store.validation`), so no stored text equals or contains such a value, and it sorts (code
    point order) right after its part before the NUL. A driver that cannot bind NUL (PostgreSQL's) never sees one,
    and both engines answer the same."""
    if node.op in ("in", "nin"):
        values = tuple(v for v in node.value if not _nul(v))
        if len(values) == len(node.value):
            return node
        if values:
            return Compare(node.field, node.op, values)
        return NOTHING if node.op == "in" else Not(NOTHING)
    if not _nul(node.value):
        return node
    if node.op == "ne":
        return Not(NOTHING)
    if node.op in _ORDERED:  # x > "u\x00..." iff x > "u"; x < "u\x00..." iff x <= "u" (x holds no NUL)
        op = "gt" if node.op in ("gt", "gte") else "lte"
        return Compare(node.field, op, node.value[: node.value.index("\x00")])
    return NOTHING  # eq, contains, icontains


def _is_named(value: Any) -> bool:
    return isinstance(value, type) or not isinstance(
        value, str | int | float | bool | bytes | list | dict | tuple | set | frozenset | type(None) | date
    )


def _scalar(name: str, value: Any) -> Scalar:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"filter {name!r} got {value!r}; use a finite number")
        return value
    raise InvalidInput(f"filter {name!r} compares text, numbers, booleans or None, got {type(value).__name__}")


def _time(name: str, value: Any, op: str) -> float | None:
    if value is None and FIELDS[name][2] and op in ("eq", "ne"):
        return None
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError as exc:
            raise InvalidInput(f"filter {name!r} got {value!r}; use unix seconds or an ISO 8601 time") from exc
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise InvalidInput(f"filter {name!r} takes unix seconds, a datetime or an ISO 8601 time, got {value!r}")


def metadata_keys(field: str) -> list[str]:
    """The keys of the path ``metadata.KEY[.KEY...]``, outermost first: a dot separates two keys, ``\\.`` is a dot
    inside one (``metadata.a\\.b`` is key ``a.b``, ``metadata.a.b`` key ``b`` inside key ``a``). Each key is 1-64
    letters, digits, ``_``, ``-`` or (escaped) dots, else InvalidInput: nothing else can get into the SQL text."""
    path = field[len("metadata.") :] if field.startswith("metadata.") else ""
    segments = _DOT.split(path)
    if path and all(_SEGMENT.fullmatch(s) for s in segments):
        keys = [s.replace("\\.", ".") for s in segments]
        if all(len(k) <= 64 for k in keys):
            return keys
    raise InvalidInput(
        f"metadata filter {field!r}: each key is 1-64 letters, digits, _ or - and a dot separates two keys; "
        "write a dot inside a key as \\. ('metadata.a\\.b' is key 'a.b', 'metadata.a.b' is key 'b' inside 'a')"
    )


def metadata_field(*keys: str) -> str:
    """The filter field of metadata key ``keys[0]``, or of ``keys[1]`` inside it and so on, its dots escaped:
    ``metadata_field("a.b")`` is ``"metadata.a\\.b"``. InvalidInput for a key the filter language cannot name."""
    field = "metadata." + ".".join(k.replace(".", "\\.") if isinstance(k, str) else "" for k in keys)
    metadata_keys(field)
    return field


def metadata_path(field: str) -> str:
    """The SQL literal of the JSON path of ``metadata.KEY`` (``'$."a"."b"'``; key ``a.b``: ``'$."a.b"'``).

    The one piece of a filter written into the SQL text rather than bound: a name, not a value, and only after
    :func:`metadata_keys` checked every key against ``[A-Za-z0-9_.-]{1,64}`` (no quote can get in). Being a literal
    is what lets SQLite use an index on the expression (:meth:`MemoryStorage.index_metadata`)."""
    return "'$" + "".join(f'."{k}"' for k in metadata_keys(field)) + "'"
