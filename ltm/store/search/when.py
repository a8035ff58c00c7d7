"""Dates named in a search query, as a time window over ``created_at`` (temporal questions).

"What did Elise play on 5 Jan 2024?", "where was Kate on 31 Dec 2023", "in March 2024", "on 2024-01-05",
"on 02.01.2024" (day first, as dotted dates are written in most of the world), and relative ones, counted from
``now`` (the search's ``now``; by default the newest message of the namespace, so a conversation imported long after
it happened reads "yesterday" as its people meant it): "today", "tonight", "yesterday", "last night", "last week",
"last weekend", "last month", "3 days ago", "two weeks ago", "a month ago", "a couple of days ago", and a month
without a year ("in May": the latest May up to ``now``). A query naming no date, or only a bare year (too broad,
and often a number that is no year: "2666"), has no window. Days are UTC days, as the keyword index writes them
(see ``query.keyword_columns``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = ["query_window"]

_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_YEAR}-(\d\d)-(\d\d)\b"), "ymd"),
    (re.compile(r"\b(\d{1,2})\.(\d{1,2})\.((?:19|20)\d\d)\b"), "dmy"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I), "d-month-y"),
    (re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b", re.I), "month-d-y"),
    (re.compile(rf"\b{_MONTH}\s+(?:of\s+)?{_YEAR}\b", re.I), "month-y"),
]
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
}
_AGO = re.compile(
    r"\b(\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(day|week|month)s?\s+ago\b",
    re.I,
)
_BARE_MONTH = re.compile(rf"\b(?:in|during|since|last)\s+{_MONTH}(?!\s*\d)", re.I)


def query_window(query: str, now: float) -> tuple[float, float] | None:
    """The [start, end) unix-seconds window the query's first named date covers, or None."""
    for pattern, shape in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
        window = _window(match.groups(), shape)
        if window is not None:
            return window
    return _relative(query.lower(), now) or _bare_month(query, now)


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
    if re.search(r"\b(today|tonight|this morning)\b", query):
        return _days(today, 1)
    if re.search(r"\b(yesterday|last night)\b", query):
        return _days(today - timedelta(days=1), 1)
    if re.search(r"\b(last|past) weekend\b", query):  # the last whole weekend before today
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 + (7 if today.weekday() >= 5 else 0))
        return _days(saturday, 2)
    if re.search(r"\b(last|past|this) week\b", query):
        return _days(today - timedelta(days=7), 8)
    if re.search(r"\b(last|past) month\b", query):
        return _days(today - timedelta(days=31), 32)
    match = _AGO.search(query)
    if match:
        count = match.group(1).lower()
        n, unit = (int(count) if count.isdigit() else _NUMBERS[count]), match.group(2).lower()
        span = {"day": 1, "week": 7, "month": 30}[unit]
        return _days(today - timedelta(days=n * span + span // 2), span + 1)
    return None


def _bare_month(query: str, now: float) -> tuple[float, float] | None:
    """ "in May": the latest May that began on or before ``now``'s month (this year's, else last year's)."""
    match = _BARE_MONTH.search(query)
    if match is None or (match.group(1).lower() == "may" and not re.search(r"\b(in|during|since) may\b", query, re.I)):
        return None  # "last may" is too often the verb
    month = _MONTHS[match.group(1).lower().rstrip(".")]
    today = datetime.fromtimestamp(now, tz=timezone.utc)
    year = today.year if month <= today.month else today.year - 1
    window = _window((match.group(1), str(year)), "month-y")
    if window is not None and re.match(r"since", match.group(0), re.I):  # "since May": up to ``now``'s day
        window = window[0], max(window[1], _days(today.replace(hour=0, minute=0, second=0, microsecond=0), 1)[1])
    return window
