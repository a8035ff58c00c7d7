"""Search plumbing shared by every mode: filters as SQL, the FTS5 query, keyword-index text, fusion: fusion.py.

Filters (all optional, combined with AND): ``role``, ``cause_by`` (a class, instance or string, or a list
of them), ``sent_from``, ``created_after`` / ``created_before`` (unix seconds, inclusive / exclusive), and
``metadata`` (a dict; each key must equal its value, compared as JSON scalars).

Conversation turns: a message's keyword-index text has four columns: its content; *who* (metadata
``speaker``, ``sent_from`` and ``role``); *at* (metadata ``session`` and ``date``/``session_date``, and the UTC day
of ``created_at``); and
*context* (metadata ``context``, e.g. the neighbouring turns: see :func:`ltm.message.with_context`).
ISO dates are also written as words ("2024-04-09 April 9 2024").
BM25 weighs them 1.0 / 0.6 / 0.6 / 0.3, so the turn's own words rank first but "what did Alice say in the
May session" still reaches the right turn.
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ltm.errors import InvalidInput, LTMError
from ltm.message import Message, any_to_str_set

__all__ = ["KEYWORD_BUDGET", "compile_filters", "filter_sql", "keyword_columns", "keyword_plan", "query_terms"]

_FILTERS = {"role", "cause_by", "sent_from", "created_after", "created_before", "metadata"}
_WORD = re.compile(r"\w+", re.UNICODE)
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_KEY = re.compile(r"^[A-Za-z0-9_]{1,64}$")
_STOPWORD_TEXT = (
    "a an and are as at be but by did do does for from had has have he her his how i if in into is it its me my "
    "of on or our she so than that the their them then there these they this to us was we were what when where "
    "which who whom why will with you your"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split(" "))


def compile_filters(filters: Mapping[str, Any] | None) -> tuple[str | None, list[Any]]:
    """The one place filters become SQL, for search and list alike: (a WHERE clause over ``messages m``
    or None when unfiltered, its parameters). InvalidInput for an unknown filter or a bad value; a shape the
    compiler cannot read is InvalidInput too, never a TypeError (issue 13)."""
    try:
        where, params = filter_sql(filters)
    except LTMError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise InvalidInput(f"filters {filters!r:.200} are not understood ({exc}); see ltm.store.query") from exc
    return (where if filters else None), list(params)


def filter_sql(filters: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """A WHERE clause over the ``messages m`` table and its parameters; ("1", []) when unfiltered."""
    if not filters:
        return "1", []
    unknown = set(filters) - _FILTERS
    if unknown:
        raise InvalidInput(f"unknown filter(s) {sorted(unknown)}; use {sorted(_FILTERS)}")
    clauses: list[str] = []
    params: list[Any] = []
    for column in ("role", "cause_by", "sent_from"):
        value = filters.get(column)
        if value is None:
            continue
        values = sorted(any_to_str_set(value))  # a string, a class / instance (cause_by), or a list of them
        clauses.append(f"m.{column} IN ({','.join('?' * len(values))})")
        params.extend(values)
    for name, op in (("created_after", ">="), ("created_before", "<")):
        value = filters.get(name)
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InvalidInput(f"filter {name} takes unix seconds (a number), got {value!r}")
        clauses.append(f"m.created_at {op} ?")
        params.append(float(value))
    metadata = filters.get("metadata")
    if metadata:
        if not isinstance(metadata, Mapping):
            raise InvalidInput(f"filter metadata takes a dict of key -> value, got {type(metadata).__name__}")
        for key, value in metadata.items():
            if not isinstance(key, str) or not _KEY.match(key):
                raise InvalidInput(f"metadata filter keys are letters, digits and _, got {key!r}")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise InvalidInput(f"metadata filter {key!r} compares scalars only, got {type(value).__name__}")
            if value is None:
                clauses.append(f"json_type(m.metadata, '$.{key}') = 'null'")
            else:
                clauses.append(f"json_extract(m.metadata, '$.{key}') = ?")
                params.append(int(value) if isinstance(value, bool) else value)
    return (" AND ".join(clauses) or "1"), params


# A keyword query scores every row holding any of its terms, so its cost is the sum of the terms' document
# frequencies: a single word present in most rows ("ticket", "service") makes it O(N). Past this many rows
# the rarest terms are kept until their frequencies add up to it (see keyword_plan).
KEYWORD_BUDGET = 4000


def query_terms(query: str) -> list[str]:
    """The query's distinct lower-cased words (stopwords dropped unless nothing else is left), at most 64."""
    words = [w.lower() for w in _WORD.findall(query)]
    kept = [w for w in words if w not in _STOPWORDS] or words
    return list(dict.fromkeys(kept))[:64]


def keyword_plan(terms: Sequence[str], doc_freq: Mapping[str, int], rows: int,
                 budget: int = KEYWORD_BUDGET) -> str | None:
    """The FTS5 query to run for ``terms`` given their document frequencies (capped counts) in ``rows`` rows.

    Up to ``budget`` rows, every term is OR-ed (the cost is bounded by the table). Beyond, the rarest terms
    are OR-ed while their frequencies add up to at most ``budget``: the dropped ones are the common words,
    whose BM25 weight (idf) is low and which would make FTS5 score a large share of the table. When even the
    rarest term is that common, the terms are AND-ed instead (only rows holding all of them are scored).
    Terms in no row are dropped; None when nothing can match.
    """
    present = [t for t in terms if doc_freq.get(t, 0) > 0]
    if rows <= budget:
        return _joined(present, " OR ")
    kept: list[str] = []
    total = 0
    for term in sorted(present, key=lambda t: doc_freq[t]):
        if total + doc_freq[term] > budget:
            break
        kept.append(term)
        total += doc_freq[term]
    if kept:
        return _joined(kept, " OR ")
    return _joined(present, " AND ")


def _joined(terms: Sequence[str], joiner: str) -> str | None:
    return joiner.join('"' + t.replace('"', '""') + '"' for t in terms) if terms else None


def keyword_columns(message: Message) -> tuple[str, str, str, str]:
    """The (content, who, at, context) texts a message is keyword-indexed under."""
    meta = message.metadata
    who = " ".join(dict.fromkeys(str(v) for v in (meta.get("speaker"), message.sent_from, message.role) if v))
    named = [_human(str(meta[k])) for k in ("session", "date", "session_date") if meta.get(k) not in (None, "")]
    at = " ".join([*named, _day(message.created_at)])
    context = meta.get("context") or ""
    if not isinstance(context, str):
        context = json.dumps(context, ensure_ascii=False)
    return message.content, who, at, context


def _day(created_at: float) -> str:
    """The UTC day a message was made, as words ("2024-04-09 April 9 2024"), so a question naming the date
    reaches it by keyword (schema 3)."""
    try:
        day = datetime.fromtimestamp(created_at, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return ""
    return f"{day:%Y-%m-%d} {calendar.month_name[day.month]} {day.day} {day.year}"


def _human(value: str) -> str:
    """An ISO date also as words ("2024-04-09" -> "2024-04-09 April 9 2024") so "in April" matches."""
    match = _ISO_DATE.match(value)
    if not match:
        return value
    year, month, day = (int(g) for g in match.groups())
    if not 1 <= month <= 12:
        return value
    return f"{value} {calendar.month_name[month]} {day} {year}"
