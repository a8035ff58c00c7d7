"""The store's filter language as PostgreSQL: the second SQL dialect of :mod:`ltm.store.search.filters`.

One parser (:func:`ltm.store.search.filters.parse`: the same checks, the same InvalidInput messages for a bad
filter), two emitters: SQLite's in :mod:`ltm.store.search.filters`, this one over ``ltm_messages m``. Every value is a
named, bound parameter (``%(fN)s``, cast to its type); a metadata key, a name already checked against
``[A-Za-z0-9_.-]{1,64}`` per key (:func:`~ltm.store.search.filters.metadata_keys`), is written as a quoted literal
of a jsonb ``->`` chain, as SQLite's emitter writes a JSON path literal: that is what lets an expression index
(``index_metadata``) serve it.

Semantics are the embedded engine's (the oracle in ``tests/store/contract/test_filters.py`` runs on both): two-valued
logic (``NOT coalesce(x, false)``), numbers compare with numbers (and with numbers written as text) and text with
text (byte order, ``COLLATE "C"``, as SQLite's BINARY), ``true`` equals only ``true``, ``contains`` is a substring
of a text value or an element of a list value. ``icontains`` folds case with the server's ``lower()`` on both sides
(Python's ``casefold`` on SQLite: the two differ only for letters such as ß, which ``lower`` keeps).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ltm.store.search.filters import (
    FIELDS,
    NUMBER_TEXT,
    NUMBER_TEXT_MAX,
    And,
    Compare,
    Filter,
    Not,
    Or,
    metadata_keys,
)
from ltm.store.search.query import checked_filters

__all__ = ["metadata_expr", "pg_filter", "pg_where"]

_SQL_OP = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
# field -> column of ltm_messages (send_to: a text[] column; content: read from the JSON body)
_COLUMNS = {
    "id": "m.id",
    "content": "(m.body::jsonb ->> 'content')",
    "role": "m.role",
    "cause_by": "m.cause_by",
    "sent_from": "m.sent_from",
    "created_at": "m.created_at",
    "expires_at": "m.expires_at",
    "user_id": "m.user_id",
    "agent_id": "m.agent_id",
    "run_id": "m.run_id",
    "valid_from": "m.valid_from",
    "valid_to": "m.valid_to",
    "superseded_at": "m.superseded_at",
    "recorded_at": "m.recorded_at",
}


def pg_filter(filters: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """(clause over ``ltm_messages m``, named parameters); ``("TRUE", {})`` when unfiltered. InvalidInput for a
    bad filter, with the embedded store's messages (a shape the parser cannot read is InvalidInput too)."""
    return pg_where(checked_filters(filters))


def pg_where(tree: Filter | None, prefix: str = "f") -> tuple[str, dict[str, Any]]:
    """A parsed tree as (PostgreSQL boolean expression, parameters named ``<prefix>0``, ``<prefix>1``...)."""
    if tree is None:
        return "TRUE", {}
    params: dict[str, Any] = {}
    return _Emitter(prefix, params).sql(tree), params


def metadata_expr(field: str) -> str:
    """``m.metadata -> 'a' -> 'b'`` for ``metadata.a.b`` (``-> 'a.b'`` for ``metadata.a\\.b``)."""
    # InvalidInput unless every key is [A-Za-z0-9_.-]{1,64}: no quote can get in
    return "(m.metadata" + "".join(f" -> '{k}'" for k in metadata_keys(field)) + ")"


class _Emitter:
    def __init__(self, prefix: str, params: dict[str, Any]) -> None:
        self.prefix, self.params = prefix, params

    def bind(self, value: Any, cast: str) -> str:
        name = f"{self.prefix}{len(self.params)}"
        self.params[name] = value
        return f"%({name})s::{cast}"

    def sql(self, node: Filter) -> str:
        if isinstance(node, And):
            return "(" + " AND ".join(self.sql(p) for p in node.parts) + ")"
        if isinstance(node, Or):
            return "(" + " OR ".join(self.sql(p) for p in node.parts) + ")"
        if isinstance(node, Not):
            return f"(NOT coalesce({self.sql(node.part)}, false))"
        if node.op in ("ne", "nin"):
            return self.sql(Not(Compare(node.field, "eq" if node.op == "ne" else "in", node.value)))
        if node.field.startswith("metadata."):
            return self.metadata(node)
        if FIELDS[node.field][0] == "set":
            return self.send_to(node)
        return self.column(node)

    def column(self, node: Compare) -> str:
        column = _COLUMNS[node.field]
        cast = "float8" if FIELDS[node.field][0] == "time" else "text"
        if node.op == "eq":
            return f"{column} IS NULL" if node.value is None else f"{column} = {self.bind(node.value, cast)}"
        if node.op == "in":
            values = [v for v in node.value if v is not None]
            parts = [f"{column} = ANY({self.bind(values, cast + '[]')})"] if values else []
            if len(values) < len(node.value):
                parts.append(f"{column} IS NULL")
            return "(" + " OR ".join(parts) + ")"
        if node.op in _SQL_OP:
            return f"{column} {_SQL_OP[node.op]} {self.bind(node.value, cast)}"
        if node.op == "icontains":
            return f"strpos(lower({column}), lower({self.bind(node.value, 'text')})) > 0"
        return f"strpos({column}, {self.bind(node.value, 'text')}) > 0"

    def send_to(self, node: Compare) -> str:
        """``send_to``, a text[] column: the message matches when any recipient does."""
        if node.op == "eq":
            return f"{self.bind(node.value, 'text')} = ANY(m.send_to)"
        if node.op == "in":
            return f"m.send_to && {self.bind(list(node.value), 'text[]')}"
        needle = self.bind(node.value, "text")
        test = f"strpos(lower(r), lower({needle})) > 0" if node.op == "icontains" else f"strpos(r, {needle}) > 0"
        return f"EXISTS (SELECT 1 FROM unnest(m.send_to) AS s(r) WHERE {test})"

    def metadata(self, node: Compare) -> str:
        value = metadata_expr(node.field)
        if node.op in ("eq", "in"):
            values = node.value if node.op == "in" else (node.value,)
            return f"{value} = ANY({self.bind([json.dumps(v) for v in values], 'text[]')}::jsonb[])"
        if node.op in _SQL_OP:
            op = _SQL_OP[node.op]
            # CASE, not AND: PostgreSQL does not promise to test the type before it casts
            if isinstance(node.value, str):
                return (
                    f"(CASE WHEN jsonb_typeof({value}) = 'string' THEN ({value} #>> '{{}}') COLLATE \"C\" {op} "
                    f"{self.bind(node.value, 'text')} END)"
                )
            number = self.bind(
                Decimal(repr(node.value)) if isinstance(node.value, float) else Decimal(node.value), "numeric"
            )
            # a number written as text compares by its value (ltm.store.search.filters.NUMBER_TEXT); the inner CASE
            # tests the text before the cast
            text = f"({value} #>> '{{}}')"
            numeric_text = f"{text} ~ {self.bind(f'^({NUMBER_TEXT})$', 'text')} AND length({text}) <= {NUMBER_TEXT_MAX}"
            return (
                f"(CASE jsonb_typeof({value}) WHEN 'number' THEN ({value})::numeric {op} {number} "
                f"WHEN 'string' THEN (CASE WHEN {numeric_text} THEN {text}::numeric {op} {number} END) END)"
            )
        # contains: a substring of a text value, or an element of a list value (icontains folds case)
        fold = node.op == "icontains"
        text = f"({value} #>> '{{}}')"
        if isinstance(node.value, str):
            needle = self.bind(node.value, "text")
            in_text = f"strpos(lower({text}), lower({needle})) > 0" if fold else f"strpos({text}, {needle}) > 0"
        else:
            in_text = "false"  # a number, a boolean or None is not a substring of text
        if fold:
            element = (
                f"EXISTS (SELECT 1 FROM jsonb_array_elements({value}) AS e(v) WHERE jsonb_typeof(e.v) = "
                f"'string' AND lower(e.v #>> '{{}}') = lower({self.bind(node.value, 'text')}))"
            )
        else:
            element = f"{value} @> {self.bind(json.dumps([node.value]), 'jsonb')}"
        return f"(CASE jsonb_typeof({value}) WHEN 'string' THEN {in_text} WHEN 'array' THEN {element} ELSE false END)"
