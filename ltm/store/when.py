"""Dates named in a search query, as a time window over ``created_at`` (issue 15: temporal questions).

"What did Elise play on 5 Jan 2024?", "where was Kate on 31 Dec 2023", "in March 2024", "on 2024-01-05",
"on 02.01.2024" (day first, as dotted dates are written in most of the world), and relative ones: "today",
"yesterday", "last week", "last month", "3 days ago" (relative to ``now``). A query naming no date, or only a
bare year (too broad, and often a number that is no year: "2666"), has no window. Days are UTC days, as the
keyword index writes them (see ``query.keyword_columns``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = ["query_window"]

_MONTHS = {name: i for i, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
     ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
     ("dec", "december")], start=1) for name in names}
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b"), "ymd"),
    (re.compile(r"\b(\d{1,2})\.(\d{1,2})\.((?:19|20)\d\d)\b"), "dmy"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I), "d-month-y"),
    (re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I), "month-d-y"),
    (re.compile(rf"\b{_MONTH}\s+(?:of\s+)?{_YEAR}\b", re.I), "month-y"),
]
_AGO = re.compile(r"\b(\d{1,3})\s+(day|week|month)s?\s+ago\b", re.I)


def query_window(query: str, now: float) -> tuple[float, float] | None:
    """The [start, end) unix-seconds window the query's first named date covers, or None."""
    for pattern, shape in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
        window = _window(match.groups(), shape)
        if window is not None:
            return window
    return _relative(query.lower(), now)


def _window(groups: tuple[str | None, ...], shape: str) -> tuple[float, float] | None:
    g = [x or "" for x in groups]
    try:
        if shape == "ymd":
            return _days(datetime(int(g[0]), int(g[1]), int(g[2]), tzinfo=timezone.utc), 1)
        if shape == "dmy":
            return _days(datetime(int(g[2]), int(g[1]), int(g[0]), tzinfo=timezone.utc), 1)
        if shape == "d-month-y":
            return _days(datetime(int(g[2]), _MONTHS[g[1].lower()], int(g[0]), tzinfo=timezone.utc), 1)
        if shape == "month-d-y":
            return _days(datetime(int(g[2]), _MONTHS[g[0].lower()], int(g[1]), tzinfo=timezone.utc), 1)
        start = datetime(int(g[1]), _MONTHS[g[0].lower()], 1, tzinfo=timezone.utc)
    except (ValueError, KeyError):
        return None  # "31.02.2024" and the like: no such day
    end = datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=timezone.utc)
    return start.timestamp(), end.timestamp()


def _days(start: datetime, days: int) -> tuple[float, float]:
    return start.timestamp(), (start + timedelta(days=days)).timestamp()


def _relative(query: str, now: float) -> tuple[float, float] | None:
    today = datetime.fromtimestamp(now, tz=timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    if re.search(r"\btoday\b", query):
        return _days(today, 1)
    if re.search(r"\byesterday\b", query):
        return _days(today - timedelta(days=1), 1)
    if re.search(r"\b(last|past) week\b", query):
        return _days(today - timedelta(days=7), 8)
    if re.search(r"\b(last|past) month\b", query):
        return _days(today - timedelta(days=31), 32)
    match = _AGO.search(query)
    if match:
        n, unit = int(match.group(1)), match.group(2).lower()
        span = {"day": 1, "week": 7, "month": 30}[unit]
        return _days(today - timedelta(days=n * span + span // 2), span + 1)
    return None
