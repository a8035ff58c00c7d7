"""The small roles a :class:`~ltm.store.backend.DocumentBackend` gathers, each a concept of its own (as chroma's
segments split reading, writing and their lifetime into small interfaces): what a handle reads of the rows
(:class:`Reads`), a message's history (:class:`History`), its lifespan (:class:`Lifespan`: expiry, versions,
erasure) and the engine's upkeep (:class:`Upkeep`). The backend hands each out as a property, so its own protocol
keeps the core of writes, searches and lifetime; every engine implements every role (an engine that is all of them
at once mixes in :class:`Roles`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np

from ltm.message import Message
from ltm.store.records import ForgetReceipt, HistoryEvent, Row, StoreStats
from ltm.store.search.filters import Filter

__all__ = ["History", "Lifespan", "Reads", "Roles", "Upkeep"]


class Reads(Protocol):
    """What a handle reads of the rows besides a search (``list``, ``get``, ``count``, ``export``, ``stats``)."""

    def body_of(self, message_id: str) -> str | None:
        """The stored message JSON, or None."""

    def count_where(self, tree: Filter | None) -> int:
        """Messages matching ``tree`` (all when None)."""

    def recent(self, n: int) -> builtins.list[str]:
        """The ``n`` newest bodies by insertion order, oldest first."""

    def page(self, after: int, limit: int, with_vectors: bool) -> builtins.list[tuple[int, str, np.ndarray | None]]:
        """(seq, body, content vector) of up to ``limit`` messages after seq ``after``, in insertion order."""

    def listed(self, after: int, limit: int, tree: Filter | None) -> builtins.list[tuple[int, str]]:
        """(seq, body) of up to ``limit`` messages matching ``tree`` after seq ``after``, in order."""

    def stats(self, namespace: str | None, model: str, embedding_calls: int) -> StoreStats:
        """Counts for health checks."""


class History(Protocol):
    """The namespace's history of events (``history``, and its transfer by ``export`` / ``import``)."""

    def events(self, message_id: str) -> builtins.list[HistoryEvent]:
        """The message's history, oldest first."""

    def trail_rows(self) -> builtins.list[tuple[str, str, str | None, float]]:
        """The namespace's history, oldest first: (id, event, old body, at)."""

    def load_trail(self, rows: Sequence[tuple[str, str, str | None, float]], history_limit: int) -> None:
        """Make ``rows`` the history of the ids they name (replacing theirs)."""


class Lifespan(Protocol):
    """How long a message lives and as what: expiry, versions and their validity, and erasure (``forget``)."""

    def due(self, now: float) -> bool:
        """Whether some message's expiry is at or before ``now``."""

    def set_expiry(self, expiries: Mapping[str, float]) -> int:
        """Set ``expires_at`` (unix seconds) of the messages with these ids in one transaction, changing nothing
        else (no history event, same seq, content and vectors); how many were stored."""

    def has_validity(self) -> bool:
        """Whether any row of the namespace carries validity (:mod:`ltm.store.validity`): when none does, a read
        adds no visibility clause."""

    def supersede(
        self,
        old_ids: Sequence[str],
        close: Callable[[Message], Message],
        rows: Sequence[Row],
        history_limit: int,
        delete: Filter | None = None,
    ) -> None:
        """In ONE write transaction: each stored ``old_ids`` message becomes ``close(old)`` (metadata and validity
        only), ``rows`` (the new version) are inserted, all recorded in the history; NotFound / InvalidInput as
        :meth:`MemoryStorage.supersede <ltm.store.storage.MemoryStorage.supersede>` says. ``delete``: the messages
        matching it are deleted first, in the same transaction, each with its DELETE event."""

    def forget(
        self, ids: Sequence[str] | None, tree: Filter | None, reason: str | None, history_limit: int
    ) -> ForgetReceipt:
        """Erase every copy of the messages with ``ids`` (and matching ``tree``, when given) or, without ids, of
        those matching ``tree``: rows, keyword index, vectors, history contents (a FORGET event each, with
        ``reason``), staged rows, and the bytes the engine's files or tables keep after a delete."""


class Upkeep(Protocol):
    """What an operator asks of the engine's indexes: a metadata index, a bulk load."""

    def index_metadata(self, key: str) -> None:
        """Index filters on ``metadata.KEY``."""

    def bulk(self) -> AbstractContextManager[None]:
        """A load of many batches (each still one transaction): the engine may defer index upkeep to its end."""


class Roles:
    """An engine that is each of its roles itself (both engines are): every role property is the engine."""

    @property
    def reads(self: Reads) -> Reads:
        return self

    @property
    def history(self: History) -> History:
        return self

    @property
    def lifespan(self: Lifespan) -> Lifespan:
        return self

    @property
    def upkeep(self: Upkeep) -> Upkeep:
        return self
