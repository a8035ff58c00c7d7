"""Search plumbing shared by every mode: filters as SQL, the FTS5 query, keyword-index text, fusion: fusion.py.

Filters: the one filter language of :mod:`ltm.store.search.filters` (which also still reads the old search
keywords ``created_after`` / ``created_before`` / ``metadata={...}``); :func:`compile_filters` is its entry
point for the store.

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
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ltm.errors import InvalidInput, LTMError
from ltm.message import Message
from ltm.store.records import MODES, Analysis
from ltm.store.search.filters import Filter, parse
from ltm.store.search.fusion import LONG_QUERY_TERMS, stems

__all__ = [
    "KEYWORD_BUDGET",
    "MAX_LINES",
    "STOPWORDS",
    "Analysis",
    "analyse",
    "check_query",
    "checked_filters",
    "keyword_columns",
    "keyword_plan",
    "keyword_terms",
    "query_lines",
    "query_terms",
    "question_stems",
]

_WORD = re.compile(r"\w+", re.UNICODE)
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_STOPWORD_TEXT = (
    "a an and are as at be but by did do does for from had has have he her his how i if in into is it its me my "
    "of on or our she so than that the their them then there these they this to us was we were what when where "
    "which who whom why will with you your"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split(" "))


def checked_filters(filters: Mapping[str, Any] | None) -> Filter | None:
    """``filters`` parsed into the one tree every engine compiles (None when empty); InvalidInput as
    :func:`compile_filters` says."""
    try:
        return parse(filters)
    except LTMError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise InvalidInput(
            f"filters {filters!r:.200} are not understood ({exc}); see ltm.store.search.filters"
        ) from exc


def analyse(query: str) -> Analysis:
    """The :class:`Analysis` of ``query``."""
    terms = tuple(query_terms(query))
    long = len(terms) > LONG_QUERY_TERMS
    question = None if long or "\n" in query.strip() else stems(terms)
    lines = [line.strip() for line in query.splitlines() if line.strip()] if long else []
    return Analysis(query, terms, long, question, tuple(lines[-MAX_LINES:]) if len(lines) >= 2 else ())


def question_stems(query: str) -> frozenset[str] | None:
    """The stems of the query's words (:func:`ltm.store.search.fusion.stems` of :func:`query_terms`) when it is one
    question: one line of at most LONG_QUERY_TERMS distinct words. None for a pasted conversation or a long query,
    whose candidates get no :func:`ltm.store.search.fusion.prior` (it was fitted on questions)."""
    return analyse(query).stems


# A keyword query scores every row holding any of its terms, so its cost is the sum of the terms' document
# frequencies: a single word present in most rows ("ticket", "service") makes it O(N). Past this many rows
# the rarest terms are kept until their frequencies add up to it (see keyword_plan).
KEYWORD_BUDGET = 4000


def query_terms(query: str) -> list[str]:
    """The query's distinct lower-cased words (stopwords dropped unless nothing else is left), at most 64."""
    words = [w.lower() for w in _WORD.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(kept))[:64]


MAX_LINES = 32  # a long query's lines embedded one by one (its last ones): bounds the extra embedding work


def query_lines(query: str) -> list[str]:
    """The lines a hybrid search also embeds one by one: the non-empty lines (at most the last
    :data:`MAX_LINES`) of a long query (more than :data:`LONG_QUERY_TERMS` distinct words) that has two or more;
    none for a question."""
    return list(analyse(query).lines)


def keyword_plan(
    terms: Sequence[str], doc_freq: Mapping[str, int], rows: int, budget: int = KEYWORD_BUDGET
) -> str | None:
    """The FTS5 query to run for ``terms`` given their document frequencies (capped counts) in ``rows`` rows:
    :func:`keyword_terms` quoted and joined. None when nothing can match."""
    kept, joiner = keyword_terms(terms, doc_freq, rows, budget)
    return _joined(kept, f" {joiner} ")


def keyword_terms(
    terms: Sequence[str], doc_freq: Mapping[str, int], rows: int, budget: int = KEYWORD_BUDGET
) -> tuple[list[str], str]:
    """(the terms to search, "OR" or "AND") for ``terms`` given their document frequencies (capped counts) in
    ``rows`` rows; both engines' keyword search plans with it (FTS5 here, tsvector in ltm.store.pg).

    Up to ``budget`` rows, every term is OR-ed (the cost is bounded by the table). Beyond, the rarest terms
    are OR-ed while their frequencies add up to at most ``budget``: the dropped ones are the common words,
    whose BM25 weight (idf) is low and which would make FTS5 score a large share of the table. When even the
    rarest term is that common, the terms are AND-ed instead (only rows holding all of them are scored).
    Terms in no row are dropped (no terms: nothing can match).
    """
    present = [t for t in terms if doc_freq.get(t, 0) > 0]
    if rows <= budget:
        return present, "OR"
    kept: list[str] = []
    total = 0
    for term in sorted(present, key=lambda t: doc_freq[t]):
        if total + doc_freq[term] > budget:
            break
        kept.append(term)
        total += doc_freq[term]
    return (kept, "OR") if kept else (present, "AND")


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
        return _day_words(math.floor(created_at / 86_400))  # a batch's messages share a few days: words made once
    except (OverflowError, ValueError):
        return ""


@functools.lru_cache(maxsize=1024)
def _day_words(days: int) -> str:
    """:func:`_day` of the UTC day ``days`` days after 1970-01-01."""
    try:
        day = datetime.fromtimestamp(days * 86_400, tz=timezone.utc)
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


def check_query(query: str, mode: str) -> None:
    """InvalidInput unless ``mode`` is a :data:`Mode` and ``query`` is non-empty text."""
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {MODES}, got {mode!r}")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query must be non-empty text")
