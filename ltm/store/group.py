"""Group commit: adds from concurrent threads share one SQLite transaction, so one fsync acknowledges them all.

A durable add costs one ``COMMIT`` with ``synchronous=FULL``: a WAL fsync, 2-5 ms on a local disk under load
(BENCHMARKS.md), against ~0.3 ms of Python and SQLite work. When several threads (or the async twins, which run in
the store's thread pool) add at once, :class:`GroupCommit` lets them queue while one commit is in flight; whichever
caller takes the store's lock next commits everything queued in ONE transaction (the "leader") and every
queued caller returns once that transaction is on disk. Nothing is acknowledged before its commit, so a
kill -9 loses only adds whose call had not returned (tests/store/contract/test_durability.py).

A group is committed as one: if it fails (one caller's rows are bad, say), each queued add is retried alone so
the error reaches the caller it belongs to and the others still succeed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

__all__ = ["GroupCommit"]

T = TypeVar("T")
GATHER_S = 0.003  # at most this long a leader waits for the last group's callers to queue again


class _Ticket(Generic[T]):
    __slots__ = ("done", "error", "item", "result")

    def __init__(self, item: T) -> None:
        self.item = item
        self.done = False
        self.result = 0
        self.error: BaseException | None = None

    def outcome(self) -> int:
        if self.error is not None:
            raise self.error
        return self.result


class GroupCommit(Generic[T]):
    """Commits queued items together under ``lock``: ``commit(items)`` returns one count per item.

    One caller at a time leads: it takes everything queued and runs ``commit`` under ``lock``; the others wait
    on a condition (not on ``lock``), so when a group is done its callers return at once, without taking the
    lock in turn, and the callers that queued meanwhile form the next group."""

    def __init__(self, lock: AbstractContextManager[Any], commit: Callable[[list[T]], list[int]]) -> None:
        self._lock = lock
        self._commit = commit
        self._turn = threading.Condition(threading.Lock())  # guards the queue and who leads
        self._leading = False
        self._queue: list[_Ticket[T]] = []
        self._peak = 1  # recent largest group: more than one means callers are arriving concurrently
        self.groups = 0  # transactions committed (for tests and the bench)
        self.items = 0  # items they carried

    def submit(self, item: T) -> int:
        """Commit ``item`` (alone or with others queued meanwhile); returns its count once it is on disk."""
        ticket = _Ticket(item)
        with self._turn:
            self._queue.append(ticket)
            while self._leading and not ticket.done:  # a group is in flight: ours rides with the next one
                self._turn.wait()
            if ticket.done:
                return ticket.outcome()
            self._leading = True  # nobody leads: this caller commits everything queued
        try:
            with self._lock:
                self._gather()
                with self._turn:
                    group, self._queue = self._queue, []
                self._peak = max(len(group), self._peak - 1)  # follows the concurrency up at once, down slowly
                self._run(group)
        finally:
            with self._turn:
                self._leading = False
                self._turn.notify_all()  # the group's callers return; one of the next ones leads
        return ticket.outcome()

    def _gather(self) -> None:
        """When recent groups had company, give their callers (just woken, taking their next item) up to
        GATHER_S to queue again, so the groups stay as large as the concurrency; a lone caller never waits."""
        if self._peak <= 1:
            return
        deadline = time.perf_counter() + GATHER_S
        while len(self._queue) < self._peak and time.perf_counter() < deadline:
            time.sleep(0)  # let the other threads run

    def _run(self, group: list[_Ticket[T]]) -> None:
        try:
            if len(group) > 1:
                try:
                    counts = self._commit([t.item for t in group])
                except Exception:  # noqa: BLE001 - retried one by one below, where the error is reported
                    pass
                else:
                    for ticket, count in zip(group, counts, strict=True):
                        ticket.result = count
                    self._count(1, len(group))
                    return
            for ticket in group:
                try:
                    ticket.result = self._commit([ticket.item])[0]
                    self._count(1, 1)
                except BaseException as exc:
                    ticket.error = exc
        finally:
            for ticket in group:
                ticket.done = True

    def _count(self, groups: int, items: int) -> None:
        self.groups += groups
        self.items += items
