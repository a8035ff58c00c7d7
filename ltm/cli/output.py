"""How the ``ltm`` command reads times and writes data: ISO-8601 dates, table or JSON, progress on long work.

Times on the command line are ISO-8601 (``2026-11-01``, ``2026-11-01T09:30``, with or without an offset) or
unix seconds; a time without an offset is local time unless ``--utc``. Data goes to stdout as a table (one
line per item) or as JSON Lines with ``--format json`` / ``--json``; progress and notes go to stderr: a bar
with a total and an ETA at a terminal, plain lines otherwise (logs, CI).

Stored text and names reach a terminal only through :func:`visible` (tables, notes, errors) or :func:`json_line`
(JSON): a message or a namespace name holding an escape sequence could otherwise recolour, retitle or rewrite
the user's terminal. Both show such characters as escapes (``\\x1b``, ``\\u202e``); JSON stays the exact data.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, TextIO

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["Progress", "format_time", "json_line", "parse_time", "visible", "write_messages"]

PLAIN_EVERY_S = 2.0  # at most one plain progress line this often

# What a terminal acts on instead of showing: C0 controls but newline and tab (ESC starts colour, cursor and
# title sequences; CR and backspace overwrite), DEL, C1 controls (0x9b is a one-byte CSI) and the bidirectional
# overrides and isolates that make text read in another order than it is stored.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# The characters of _CONTROLS that json.dumps(ensure_ascii=False) leaves raw (it escapes the C0 ones)
_JSON_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> str:
    """``text`` as a terminal shows it without acting on it: control characters (but newline and tab) and
    bidirectional overrides written as escapes, e.g. ESC as ``\\x1b``."""
    return _CONTROLS.sub(_escape, str(text))


def json_line(data: object) -> str:
    """``data`` as one line of JSON, the characters :func:`visible` escapes written as JSON escapes (``\\u009b``):
    the same JSON value, safe to print at a terminal."""
    text = json.dumps(data, ensure_ascii=False)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def parse_time(text: str, *, utc: bool = False) -> float:
    """Unix seconds from ISO-8601 or a number; a naive time is local (UTC with ``utc``)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(
            f"{text!r} is not a time: use ISO-8601 such as 2026-11-01 or 2026-11-01T09:30:00+01:00, or unix seconds"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc) if utc else moment.astimezone()
    return moment.timestamp()


def format_time(seconds: float, *, utc: bool = False) -> str:
    """ISO-8601 to the second, in local time (with its offset) or UTC."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return (moment if utc else moment.astimezone()).isoformat(timespec="seconds")


def write_messages(
    messages: Sequence[Message],
    out: TextIO,
    *,
    fmt: str = "table",
    utc: bool = False,
    extra: Sequence[dict[str, Any]] | None = None,
) -> None:
    """One line per message: ``time  id  role: content`` (after ``extra``'s score when given) or JSON Lines."""
    for i, m in enumerate(messages):
        more = extra[i] if extra else {}
        if fmt == "json":
            out.write(json_line({**more, **m.to_dict(), "created_at_iso": format_time(m.created_at, utc=utc)}) + "\n")
            continue
        score = f"{more['score']:8.4f}  " if "score" in more else ""
        where = f"[{visible(more['namespace'])}]  " if "namespace" in more else ""  # search --also: which namespace
        line = f"{format_time(m.created_at, utc=utc)}  {visible(m.id)}  {visible(m.role)}: {visible(m.content)}"
        out.write(f"{score}{where}{line}\n")


class Progress:
    """Progress of long work on stderr: a rich bar (total, rate, ETA) at a terminal, else plain lines.

    ``total`` may be None when unknown (stdin): the count and rate are shown without an ETA.
    """

    def __init__(self, label: str, total: int | None, stream: TextIO | None = None) -> None:
        self.label, self.total, self.done = label, total, 0
        self._stream = stream or sys.stderr
        self._started = self._last = time.monotonic()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if self._stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as Bar

            columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
            self._bar = Bar(*columns, transient=True, console=Console(file=self._stream))
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n)
            return
        now = time.monotonic()
        if now - self._last >= PLAIN_EVERY_S:
            self._last = now
            self._stream.write(self._line(now) + "\n")
            self._stream.flush()

    def _line(self, now: float) -> str:
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        if self.total:
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta = f", ETA {left:.0f} s" if left != float("inf") else ""
            share = 100 * self.done / self.total
            return f"{self.label}: {self.done:,}/{self.total:,} ({share:.0f}%), {rate:.0f}/s{eta}"
        return f"{self.label}: {self.done:,} ({rate:.0f}/s)"

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
