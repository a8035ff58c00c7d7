"""LangGraph's filters (exact values, nested dicts, ``$eq $ne $gt $gte $lt $lte``) on an item's value: as a
narrowing in the store's filter language over the head's ``lg_value`` (:func:`value_filter`), and the exact
check after the store's SQL (:func:`matches`)."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from typing import Any

from ltm.errors import InvalidInput

__all__ = ["matches", "value_filter"]

_SEGMENT_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_OPS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_RANGES = {"$gt", "$gte", "$lt", "$lte"}
_DOT = re.compile(r"(?<!\\)\.")  # a filter key's dot that reaches into a nested dict (``\.`` is a literal dot)
_FLOAT_MAX = sys.float_info.max
_INT_BOUND = 2**63  # SQLite and PostgreSQL bind integers up to 64 bits; larger ones compare as floats


def value_filter(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's ``filter`` (exact values, nested dicts, ``$eq $ne $gt $gte $lt $lte``) in the store's filter
    language over the head's ``lg_value``, as a narrowing: :func:`matches` decides (a numeric range lets every
    text through, as text that reads as a number matches; a key written with ``\\.`` is a literal dotted key,
    not narrowed here). None when there is nothing to narrow by. A key's dot reaches into a nested dict."""
    if not filters:
        return None
    if not isinstance(filters, Mapping):
        raise InvalidInput(f"filter must be a dict of value keys to conditions, got {type(filters).__name__}")
    parts = _conditions("metadata.lg_value", filters)
    return {"AND": parts} if parts else None


def _segments(key: object) -> list[str]:
    """A filter key's path: split at each dot but an escaped one (``\\.``, a literal dot in the key)."""
    segments = [s.replace("\\.", ".") for s in _DOT.split(key)] if isinstance(key, str) else []
    if not segments or not all(s and set(s.replace(".", "")) <= _SEGMENT_CHARS and len(s) <= 64 for s in segments):
        raise InvalidInput(
            f"Invalid filter key {key!r}: ltm filters on value keys of 1-64 letters, digits, _ or - "
            "(a dot reaches into a nested dict; write a key's own dot as \\.)"
        )
    return segments


def _conditions(path: str, filters: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for key, condition in filters.items():
        segments = _segments(key)
        if any("." in s for s in segments):  # a literal dotted key: its stored form is escaped, matches() checks it
            _check_operators(key, condition)
            continue
        field = f"{path}.{'.'.join(segments)}"
        if isinstance(condition, Mapping) and any(str(op).startswith("$") for op in condition):
            _check_operators(key, condition)
            for op, operand in condition.items():
                compared = _compare(field, _OPS[op], operand)
                if op in _RANGES and not isinstance(operand, str):  # a number stored as text may match too:
                    compared = {"OR": [compared, {field: {"gte": ""}}]}  # every text passes, matches() decides
                parts.append(compared)
        elif isinstance(condition, Mapping):
            parts.extend(_conditions(field, condition))
        elif isinstance(condition, list | tuple):  # narrowed here to lists holding each element; matches() is exact
            parts.extend(
                _compare(field, "contains", element)
                for element in condition
                if isinstance(element, str | int | float) and not isinstance(element, bool)
            )
        else:
            parts.append(_compare(field, "eq", condition))
    return parts


def _check_operators(key: object, condition: Any) -> None:
    if isinstance(condition, Mapping) and any(str(op).startswith("$") for op in condition):
        for op in condition:
            if op not in _OPS:
                raise InvalidInput(f"filter operator {op!r} on {key!r} is not one of {sorted(_OPS)}")
    elif isinstance(condition, Mapping):
        for inner, nested in condition.items():
            _segments(inner)
            _check_operators(inner, nested)


def matches(value: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` meets LangGraph's ``filter`` exactly (as its InMemoryStore compares, a key's dots
    reaching into nested dicts as in SqliteStore): the check after the store's SQL."""
    return not filters or all(_meets(_at(value, key), condition) for key, condition in filters.items())


def _at(value: Any, key: str) -> Any:
    for segment in _segments(key):
        value = value.get(segment) if isinstance(value, Mapping) else None
    return value


def _meets(have: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping):
        if any(str(op).startswith("$") for op in condition):
            return all(_holds(have, op, operand) for op, operand in condition.items())
        return isinstance(have, Mapping) and all(_meets(_at(have, k), v) for k, v in condition.items())
    if isinstance(condition, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(condition)
            and all(_meets(h, c) for h, c in zip(have, condition, strict=True))
        )
    return bool(have == condition)


def _holds(have: Any, op: str, operand: Any) -> bool:
    """One operator, as LangGraph's stores apply it: ``$gt``-like ones with a number compare numbers, a stored
    number given as text (``"7"``) included (text that is no number never matches: InMemoryStore and
    PostgresStore raise on it, SqliteStore reads it as 0); with a text operand they compare text with text."""
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    if isinstance(operand, str):
        if not isinstance(have, str):
            return False
        left: Any = have
        right: Any = operand
    else:
        left, right = _number(have), _number(operand)
        if left is None or right is None:
            return False
    return bool({"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op])


def _number(value: Any) -> float | None:
    if not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):  # text that is no number; an int beyond a float's range
        return None


_NOTHING: dict[str, Any] = {"AND": [{"metadata.lg_part": {"eq": 0}}, {"metadata.lg_part": {"ne": 0}}]}


def _compare(field: str, op: str, operand: Any) -> dict[str, Any]:
    """One comparison; operands the store cannot bind (NaN, infinities, NUL text, huge ints) become the
    condition they mean."""
    if isinstance(operand, float) and math.isnan(operand):
        return {"metadata.lg_part": {"ne": -1}} if op == "ne" else _NOTHING  # NaN equals and orders with nothing
    if isinstance(operand, float) and math.isinf(operand):
        up = operand > 0
        if op in (("lt", "lte") if up else ("gt", "gte")):  # below +inf / above -inf: every number
            return {field: {"gte" if up else "lte": -_FLOAT_MAX if up else _FLOAT_MAX}}
        return {"metadata.lg_part": {"ne": -1}} if op == "ne" else _NOTHING
    if isinstance(operand, int) and not isinstance(operand, bool) and abs(operand) >= _INT_BOUND:
        operand = float(operand)
    if isinstance(operand, str) and "\x00" in operand:  # stored text never holds NUL
        return {"metadata.lg_part": {"ne": -1}} if op == "ne" else _NOTHING
    return {field: {op: operand}}
