"""The store's filter language as SQLite: the embedded engine's SQL dialect of :mod:`ltm.store.search.filters`.

One parser (:func:`ltm.store.search.filters.parse`) gives one tree; this module writes it as a WHERE clause over
``messages m`` with bound parameters (PostgreSQL's dialect: :mod:`ltm.store.pg.filters`). Only a metadata key's
JSON path is written into the SQL text, after :func:`~ltm.store.search.filters.metadata_path` checked it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ltm.errors import InvalidInput, LTMError
from ltm.store.search.filters import FIELDS, And, Compare, Filter, Not, Or, casefold, metadata_path, parse

__all__ = ["compile_filters", "compile_sql", "to_sql"]

_SQL_OP = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def compile_sql(filters: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``filters`` as a WHERE clause over ``messages m`` and its parameters; ("1", []) when empty."""
    tree = parse(filters)
    return ("1", []) if tree is None else to_sql(tree)


def to_sql(tree: Filter) -> tuple[str, list[Any]]:
    """A parsed tree as (SQL boolean expression over ``messages m``, parameters)."""
    params: list[Any] = []
    return _sql(tree, params), params


def compile_filters(filters: Mapping[str, Any] | None) -> tuple[str | None, list[Any]]:
    """The one place filters become SQL, for search and list alike: (a WHERE clause over ``messages m``
    or None when unfiltered, its parameters): the filter language of :mod:`ltm.store.search.filters`. InvalidInput for
    an unknown field or operator or a bad value; a shape the compiler cannot read is InvalidInput too, never a
    TypeError."""
    try:
        where, params = compile_sql(filters)
    except LTMError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise InvalidInput(
            f"filters {filters!r:.200} are not understood ({exc}); see ltm.store.search.filters"
        ) from exc
    return (where if filters else None), list(params)


def _sql(node: Filter, params: list[Any]) -> str:
    if isinstance(node, And):
        return "(" + " AND ".join(_sql(p, params) for p in node.parts) + ")"
    if isinstance(node, Or):
        return "(" + " OR ".join(_sql(p, params) for p in node.parts) + ")"
    if isinstance(node, Not):
        # Positive predicates are NULL where the field is absent; NULL is "false" here, so NOT is exact.
        return f"(NOT coalesce({_sql(node.part, params)}, 0))"
    if node.op in ("ne", "nin"):
        return _sql(Not(Compare(node.field, "eq" if node.op == "ne" else "in", node.value)), params)
    if node.field.startswith("metadata."):
        return _metadata_sql(node, params)
    if FIELDS[node.field][0] == "set":
        return _set_sql(node, params)
    return _column_sql(FIELDS[node.field][1], node, params)


def _column_sql(column: str, node: Compare, params: list[Any]) -> str:
    """A plain column: written so that SQLite can use an index on it (``col = ?``, ``col IN (...)``)."""
    if node.op == "eq":
        if node.value is None:
            return f"{column} IS NULL"
        params.append(node.value)
        return f"{column} = ?"
    if node.op == "in":
        values = [v for v in node.value if v is not None]
        parts = []
        if values:
            params.extend(values)
            parts.append(f"{column} IN ({','.join('?' * len(values))})")
        if len(values) < len(node.value):
            parts.append(f"{column} IS NULL")
        return "(" + " OR ".join(parts) + ")"
    if node.op in _SQL_OP:
        params.append(node.value)
        return f"{column} {_SQL_OP[node.op]} ?"
    params.append(casefold(node.value) if node.op == "icontains" else node.value)
    target = f"ltm_fold({column})" if node.op == "icontains" else column
    return f"instr({target}, ?) > 0"


def _set_sql(node: Compare, params: list[Any]) -> str:
    """``send_to``, a JSON array in the body: the message matches when any recipient does."""
    inner = _column_sql("j.value", node, params)
    return f"EXISTS (SELECT 1 FROM json_each(m.body, '$.send_to') j WHERE {inner})"


def _metadata_sql(node: Compare, params: list[Any]) -> str:
    path = metadata_path(node.field)
    value_sql, type_sql = f"json_extract(m.metadata, {path})", f"json_type(m.metadata, {path})"
    if node.op in ("eq", "in"):
        # values of one JSON type are one IN list: an index on the path serves it as one probe per value, and its
        # SQL stays short (an OR per value cost ~50 us a value to prepare, more than the probes themselves)
        groups: dict[tuple[str, str], list[Any]] = {}
        null = False
        for value in node.value if node.op == "in" else (node.value,):
            if value is None:
                null = True
            else:
                sql_value, first, second = _json_typed(value)
                groups.setdefault((first, second), []).append(sql_value)
        parts = [f"{type_sql} = 'null'"] if null else []
        for types, values in groups.items():
            params.extend(values)
            params.extend(types)
            test = "= ?" if len(values) == 1 else f"IN ({','.join('?' * len(values))})"
            parts.append(f"({value_sql} {test} AND {type_sql} IN (?, ?))")
        return "(" + " OR ".join(parts) + ")"
    if node.op in _SQL_OP and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return _number_range_sql(value_sql, type_sql, _SQL_OP[node.op], node.value, params)
    if node.op in _SQL_OP:
        params.extend(_json_typed(node.value))
        return f"({value_sql} {_SQL_OP[node.op]} ? AND {type_sql} IN (?, ?))"
    # contains: a substring of a text value, or an element of a list value
    fold = node.op == "icontains"
    value = casefold(node.value) if fold else node.value
    text = "instr(ltm_fold(j.value), ?) > 0" if fold else "instr(j.value, ?) > 0"
    element = "ltm_fold(j.value) = ?" if fold else "j.value = ?"
    params.extend([value, value])
    return (
        f"EXISTS (SELECT 1 FROM json_each(m.metadata, {path}) j WHERE CASE {type_sql} "
        f"WHEN 'text' THEN j.type = 'text' AND {text} "
        f"WHEN 'array' THEN j.type NOT IN ('array', 'object') AND {element} ELSE 0 END)"
    )


def _number_range_sql(value_sql: str, type_sql: str, op: str, number: float, params: list[Any]) -> str:
    """``value op number`` over a number, or a number written as text (``ltm_number``: its value, NULL for other
    text). Written as two ranges of ``value_sql`` that an index on it serves (SQLite orders every number before
    every text): the numbers (``< ''``), and the text that can be a number, which starts with a sign, a dot or a
    digit (``'+'`` to ``':'`` in byte order)."""
    params.extend([number, number])
    bound = " AND " + value_sql + " < ''" if op in (">", ">=") else ""  # ``> number`` would span every text too
    return (
        f"(({value_sql} {op} ?{bound} AND {type_sql} IN ('integer', 'real')) OR "
        f"({type_sql} = 'text' AND {value_sql} >= '+' AND {value_sql} < ':' AND ltm_number({value_sql}) {op} ?))"
    )


def _json_typed(value: Any) -> tuple[Any, str, str]:
    """(SQL value, JSON types it may match): true/false are stored as JSON, 1/0 compare as SQL."""
    if isinstance(value, bool):
        kind = "true" if value else "false"
        return int(value), kind, kind
    if isinstance(value, int | float):
        return value, "integer", "real"
    return value, "text", "text"
