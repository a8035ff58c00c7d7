"""How the ``ltm`` command reads times and writes data: ISO-8601 dates, table or JSON, progress on long work.

Times on the command line are ISO-8601 (``2026-11-01``, ``2026-11-01T09:30``, with or without an offset) or
unix seconds; a time without an offset is local time unless ``--utc``. Data goes to stdout as a table (one
line per item) or as JSON Lines with ``--format json`` / ``--json``; progress and notes go to stderr: a bar
with a total and an ETA at a terminal, plain lines otherwise (logs, CI).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, TextIO

from ltm.errors import InvalidInput
from ltm.message import Message

__all__ = ["Progress", "format_time", "parse_time", "write_messages"]

PLAIN_EVERY_S = 2.0  # at most one plain progress line this often


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
            out.write(
                json.dumps(
                    {**more, **m.to_dict(), "created_at_iso": format_time(m.created_at, utc=utc)}, ensure_ascii=False
                )
                + "\n"
            )
            continue
        score = f"{more['score']:8.4f}  " if "score" in more else ""
        where = f"[{more['namespace']}]  " if "namespace" in more else ""  # search --also: which namespace
        out.write(f"{score}{where}{format_time(m.created_at, utc=utc)}  {m.id}  {m.role}: {m.content}\n")


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
