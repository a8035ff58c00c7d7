"""Search and list filters as PostgreSQL: the same filter dicts as the embedded store (see
:mod:`ltm.store.query`), compiled to a clause over ``ltm_messages m`` with named, bound parameters."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ltm.errors import InvalidInput
from ltm.message import any_to_str_set

__all__ = ["pg_filter"]

_FILTERS = {"role", "cause_by", "sent_from", "created_after", "created_before", "metadata"}
_KEY = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def pg_filter(filters: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """(clause, params): ``("TRUE", {})`` when unfiltered. InvalidInput for an unknown filter or a bad value,
    with the embedded store's messages."""
    if not filters:
        return "TRUE", {}
    unknown = set(filters) - _FILTERS
    if unknown:
        raise InvalidInput(f"unknown filter(s) {sorted(unknown)}; use {sorted(_FILTERS)}")
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for column in ("role", "cause_by", "sent_from"):
        value = filters.get(column)
        if value is not None:
            params[f"f_{column}"] = sorted(any_to_str_set(value))
            clauses.append(f"m.{column} = ANY(%(f_{column})s)")
    for name, op in (("created_after", ">="), ("created_before", "<")):
        value = filters.get(name)
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InvalidInput(f"filter {name} takes unix seconds (a number), got {value!r}")
        params[f"f_{name}"] = float(value)
        clauses.append(f"m.created_at {op} %(f_{name})s")
    metadata = filters.get("metadata")
    if metadata:
        if not isinstance(metadata, Mapping):
            raise InvalidInput(f"filter metadata takes a dict of key -> value, got {type(metadata).__name__}")
        for i, (key, value) in enumerate(metadata.items()):
            if not isinstance(key, str) or not _KEY.match(key):
                raise InvalidInput(f"metadata filter keys are letters, digits and _, got {key!r}")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise InvalidInput(f"metadata filter {key!r} compares scalars only, got {type(value).__name__}")
            params[f"mk{i}"] = key
            if value is None:
                clauses.append(f"jsonb_typeof(m.metadata -> %(mk{i})s) = 'null'")
            elif isinstance(value, bool):  # SQLite's json_extract makes true 1: match both spellings
                params[f"mv{i}"], params[f"mn{i}"] = json.dumps(value), json.dumps(int(value))
                clauses.append(f"(m.metadata -> %(mk{i})s = %(mv{i})s::jsonb "
                               f"OR m.metadata -> %(mk{i})s = %(mn{i})s::jsonb)")
            else:
                params[f"mv{i}"] = json.dumps(value)
                clauses.append(f"m.metadata -> %(mk{i})s = %(mv{i})s::jsonb")
    return (" AND ".join(clauses) or "TRUE"), params
