"""The store backend seam: what :class:`~ltm.store.storage.MemoryStorage` needs from an engine.

The facade owns everything engines share: checking input, planning and running the embedding (batched,
cached), building rows, ids, thresholds, expiry, the async twins. A backend owns one namespace's rows, vectors and
keyword index, and answers in stored terms (message JSON bodies, insertion ``seq`` numbers, hits). A handle
composes one engine (``MemoryStorage(..., backend=...)``, as an HTTP client composes a transport), by default the
one :func:`backend_for` picks from the settings:

- :class:`~ltm.store.embedded.EmbeddedBackend` (default): a SQLite file + FAISS indexes in
  ``<storage_dir>/<kind>/<namespace>/``, one machine;
- :class:`~ltm.store.pg.PgBackend` (``Settings.store_url = "postgresql://..."``): PostgreSQL + pgvector, any
  number of processes on any number of hosts.

An engine is a class with the two class methods of :class:`Engine`; what it opens is a :class:`DocumentBackend`,
the core every engine implements, and any of the capabilities that only some engines have (:class:`StagedAdds`,
:class:`WritesBehind`, :class:`KeywordFirst`, :class:`TermStatistics`): the facade checks for those with
``isinstance`` and goes without, so no engine stubs a member it cannot fill.
A new engine is a package beside ``embedded/`` and ``pg/`` with both, passing the contract suite
(``tests/store/contract``, parametrised over the engines); docs/ARCHITECTURE.md draws where it goes.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ltm.config import Settings
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.handle import Handle
from ltm.store.records import (
    Analysis,
    DatabaseNamespace,
    ForgetReceipt,
    HistoryEvent,
    KeywordAhead,
    KeywordSide,
    MemoryHit,
    NamespaceInfo,
    Row,
    StoreStats,
)
from ltm.store.search.filters import Filter

__all__ = [
    "DatabaseCatalog",
    "DocumentBackend",
    "Engine",
    "KeywordFirst",
    "LocalCatalog",
    "StagedAdd",
    "StagedAdds",
    "TermStatistics",
    "WritesBehind",
    "backend_for",
    "database_catalog",
    "local_catalog",
]


class StagedAdd(Protocol):
    """An add's new messages committed while the model embeds them (:mod:`ltm.store.adding`): called once on a
    helper thread; the write after the model then moves them (``write_groups(..., staging)``) without an fsync."""

    sids: builtins.list[int] | None  # what was committed (None: nothing yet, or taken back)
    bodies: dict[str, str]  # the messages' bodies made already, by id (set before the call)
    moved_by_others: set[str]  # ids another reader stored before the move: stored, and this add's

    def __call__(self) -> None:
        """Commit the messages (under the handle's lock)."""

    def undo(self) -> None:
        """Take the committed messages back (the add failed)."""


@runtime_checkable
class DocumentBackend(Protocol):
    """One handle's open namespace of an engine: what every engine implements. The facade calls it under the
    handle's lock (it is not thread-safe by itself). What only some engines can do is a capability beside it
    (:class:`StagedAdds`, :class:`WritesBehind`, :class:`KeywordFirst`, :class:`TermStatistics`), which the facade
    checks for with ``isinstance``."""

    # -- where, and what dimension -------------------------------------------------------------------------
    @property
    def directory(self) -> Path | None:
        """The namespace's directory (None where a server keeps it)."""

    def touch(self) -> None:
        """The handle used the namespace (an engine that bounds what idle handles hold may release others)."""

    def dimension(self) -> int | None:
        """The stored vectors' dimension, None before the first vector (catching up with other writers)."""

    def known_dimension(self) -> int | None:
        """The dimension when it is known without a read; None: ask :meth:`dimension`."""

    def ensure_dim(self, dim: int) -> None:
        """Record ``dim`` at the namespace's first vector; StoreMismatch for another dimension."""

    # -- writes ----------------------------------------------------------------------------------------------
    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored."""

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Stored content vectors by content key: the embedder's cache (no model call for known text)."""

    def write(
        self,
        rows: Sequence[Row],
        *,
        replace: bool,
        update: bool = False,
        history_limit: int = 0,
        delete: Filter | None = None,
    ) -> int:
        """Insert ``rows`` in ONE transaction, skipping stored ids; or with ``replace`` put each in place of the
        stored message with its id, in the same transaction; each with its history event (kept up to
        ``history_limit`` per namespace). How many were inserted (or replaced). ``update``: NotFound, nothing
        written, when an id is no longer stored. ``delete`` (with ``replace``): the messages matching it are
        deleted first, in the same transaction, each with its DELETE event."""

    def write_groups(
        self,
        items: Sequence[tuple[rowplan.Pending, np.ndarray]],
        keys: Callable[[Sequence[str]], builtins.list[bytes]],
        history_limit: int,
        staging: StagedAdd | None = None,
    ) -> builtins.list[int]:
        """The adds of several callers (each a pending plan and its vectors; ``keys`` the content keys of
        texts): how many messages of each were new. ``staging``: what :meth:`StagedAdds.staging` made for them
        (None on an engine without staged adds)."""

    def remove(self, tree: Filter | None, history_limit: int) -> int:
        """Delete every message matching ``tree`` (all when None) in one transaction, with DELETE events."""

    def set_expiry(self, expiries: Mapping[str, float]) -> int:
        """Set ``expires_at`` (unix seconds) of the messages with these ids in one transaction, changing nothing
        else (no history event, same seq, content and vectors); how many were stored."""

    def forget(
        self, ids: Sequence[str] | None, tree: Filter | None, reason: str | None, history_limit: int
    ) -> ForgetReceipt:
        """Erase every copy of the messages with ``ids`` (and matching ``tree``, when given) or, without ids, of
        those matching ``tree``: rows, keyword index, vectors, history contents (a FORGET event each, with
        ``reason``), staged rows, and the bytes the engine's files or tables keep after a delete."""

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

    def has_validity(self) -> bool:
        """Whether any row of the namespace carries validity (:mod:`ltm.store.validity`): when none does, a read
        adds no visibility clause."""

    def index_metadata(self, key: str) -> None:
        """Index filters on ``metadata.KEY``."""

    def load_trail(self, rows: Sequence[tuple[str, str, str | None, float]], history_limit: int) -> None:
        """Make ``rows`` the history of the ids they name (replacing theirs)."""

    def bulk(self) -> AbstractContextManager[None]:
        """A load of many batches (each still one transaction): the engine may defer index upkeep to its end."""

    # -- reads -----------------------------------------------------------------------------------------------
    def body_of(self, message_id: str) -> str | None:
        """The stored message JSON, or None."""

    def count_where(self, tree: Filter | None) -> int:
        """Messages matching ``tree`` (all when None)."""

    def recent(self, n: int) -> list[str]:
        """The ``n`` newest bodies by insertion order, oldest first."""

    def page(self, after: int, limit: int, with_vectors: bool) -> list[tuple[int, str, np.ndarray | None]]:
        """(seq, body, content vector) of up to ``limit`` messages after seq ``after``, in insertion order."""

    def listed(self, after: int, limit: int, tree: Filter | None) -> list[tuple[int, str]]:
        """(seq, body) of up to ``limit`` messages matching ``tree`` after seq ``after``, in order."""

    def due(self, now: float) -> bool:
        """Whether some message's expiry is at or before ``now``."""

    def events(self, message_id: str) -> list[HistoryEvent]:
        """The message's history, oldest first."""

    def trail_rows(self) -> list[tuple[str, str, str | None, float]]:
        """The namespace's history, oldest first: (id, event, old body, at)."""

    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]:
        """{word: stored speaker, ``sent_from`` and role names holding it (of a bounded sample of messages)} for
        the ``words`` (lower case) a stored message's names hold (:mod:`ltm.store.search.speakers`: a question's names
        are put in the first person before it is embedded)."""

    # -- searches --------------------------------------------------------------------------------------------
    def search(
        self,
        text: str,
        vector: np.ndarray | None,
        k: int,
        mode: str,
        filters: Mapping[str, Any] | None,
        exact_key: bytes | None = None,
        lines: np.ndarray | None = None,
        plan: Analysis | None = None,
        keyword: KeywordAhead | None = None,
    ) -> list[MemoryHit]:
        """The ``k`` best hits for ``text`` (embedded as ``vector``; None in keyword mode) in ``mode``; messages
        whose content key is ``exact_key`` (the query verbatim) first. ``lines``: hybrid only, a long query's
        lines embedded one by one (:func:`ltm.store.search.query.query_lines`): its dense signal is then
        :func:`ltm.store.search.fusion.line_scores`. ``plan``: ``text``'s
        :func:`~ltm.store.search.query.analyse`, when the caller made it; ``keyword``: hybrid only, on an engine
        that finds the keyword side first (:class:`KeywordFirst`), what it found while the model embedded the
        query, or the future of its call."""

    def signal_scores(
        self, ids: Sequence[str], vector: np.ndarray | None, text: str | None
    ) -> dict[str, dict[str, float]]:
        """Per-signal scores (dense, context, keyword) of messages ``ids`` for a query, for ``explain``."""

    def similar(self, vector: np.ndarray, k: int, threshold: float, key: bytes) -> list[Message]:
        """Up to ``k`` messages with cosine >= ``threshold`` to ``vector``; exact copies (``key``) first."""

    def best_similarities(self, vectors: np.ndarray, keys: Sequence[bytes] | None) -> np.ndarray:
        """Each vector's highest cosine to a stored message (-1.0 when none; 1.0 for stored keys)."""

    def stats(self, namespace: str | None, model: str, embedding_calls: int) -> StoreStats:
        """Counts for health checks."""

    # -- lifetime --------------------------------------------------------------------------------------------
    def save(self) -> None:
        """Make the next open fast (a FAISS snapshot); nothing to do where the server keeps the index."""

    def close(self) -> None:
        """Release files or connections; the facade reopens on the next use."""

    def drop(self) -> None:
        """Delete the namespace's data (after close)."""


# -- capabilities: what only some engines do ------------------------------------------------------------------
@runtime_checkable
class StagedAdds(Protocol):
    """An engine that commits an add's messages while the model embeds them (:mod:`ltm.store.adding`), so the
    write after the model needs no fsync of its own."""

    def staging(self, messages: builtins.list[Message]) -> StagedAdd | None:
        """What commits an add's new messages while the model embeds them; None when this namespace's settings
        leave nothing to hide (no fsync per commit)."""


@runtime_checkable
class WritesBehind(Protocol):
    """An engine that acknowledges an add before its vector exists (``Settings.write_behind``)."""

    def add_behind(self, messages: builtins.list[Message]) -> int | None:
        """Stage ``messages`` durably, their vectors computed later; how many were new. None when the handle's
        settings do not ask for write-behind (the handle adds as ever)."""


@runtime_checkable
class KeywordFirst(Protocol):
    """An engine whose hybrid search can take its keyword side found beforehand, while the model embeds the
    query (:meth:`DocumentBackend.search`'s ``keyword``), rather than ranking it inside one statement."""

    def keyword_candidates(
        self,
        text: str,
        plan: Analysis,
        k: int,
        filters: Mapping[str, Any] | None,
        model_done: threading.Event | None = None,
    ) -> KeywordSide:
        """A hybrid search's keyword side for ``text``, with whatever of the candidates' rows the engine can read
        without the query vector before ``model_done`` is set (what is left, :meth:`DocumentBackend.search` reads
        with the dense candidates' rows). Called under the handle's lock."""

    def keyword_beside(
        self,
        text: str,
        plan: Analysis,
        k: int,
        filters: Mapping[str, Any] | None,
        model_done: threading.Event | None = None,
    ) -> Callable[[], KeywordSide] | None:
        """:meth:`keyword_candidates` as a call to run on another thread without the handle's lock (made under
        it), so that the search can take it as a future and do its dense side before it needs it; None where the
        keyword side needs the lock (then :meth:`keyword_candidates` runs under it)."""


@runtime_checkable
class TermStatistics(Protocol):
    """An engine whose keyword scores are BM25 sums over terms, and that can give their parts: a search across
    namespaces (:func:`ltm.store.across.search_many`) then scores the union as ONE keyword index would."""

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The namespace's keyword rows, and how many of them hold each of ``terms``."""

    def term_scores(self, term: str, ids: Sequence[str]) -> builtins.list[tuple[str, float]]:
        """(id, keyword score of ``term`` alone) of the messages ``ids`` that hold it."""


class Engine(Protocol):
    """An engine as a handle composes it (``MemoryStorage(..., backend=EmbeddedBackend)``): the class whose
    :meth:`open` gives the handle its namespace."""

    def open(self, store: Handle, namespace: str) -> DocumentBackend:
        """Open (creating when new) ``namespace`` for the handle ``store`` (its settings, kind, model, lock)."""

    def discard(self, store: Handle, namespace: str) -> None:
        """Delete ``namespace``'s data for a handle that does not have it open."""


def backend_for(settings: Settings) -> Engine:
    """The engine the settings ask for: PostgreSQL with ``store_url``, else the embedded one."""
    if settings.store_url:
        from ltm.store.pg import PgBackend

        return PgBackend
    from ltm.store.embedded import EmbeddedBackend

    return EmbeddedBackend


class LocalCatalog(Protocol):
    """The embedded engine's reading of a data root (:mod:`ltm.store.embedded.catalog`): opens no namespace."""

    def namespaces(self, settings: Settings, kind: str | None) -> Iterator[NamespaceInfo]:
        """Every namespace directory under ``settings.storage_dir`` (``kind``'s only), by kind then name."""

    def is_namespace_dir(self, directory: Path) -> bool:
        """Whether ``directory`` is a namespace folder ltm made."""

    def holds_namespace(self, directory: Path) -> bool:
        """Whether the namespace directory was ever opened."""

    def recorded_model(self, directory: Path) -> str | None:
        """The embedding model the namespace directory records."""


class DatabaseCatalog(Protocol):
    """PostgreSQL's reading of a database's namespaces (:mod:`ltm.store.pg.catalog`): creates nothing."""

    def pg_namespaces(self, url: str) -> Iterator[DatabaseNamespace]:
        """Every namespace of the database at ``url``, by kind then name."""

    def pg_partitions(self, url: str) -> int:
        """How many hash partitions by namespace the database has (0: plain tables)."""

    def pg_namespace_exists(self, url: str, kind: str, name: str, partitions: int | None = None) -> bool:
        """Whether the database holds namespace ``kind/name``."""

    def pg_namespace_model(self, url: str, kind: str, name: str, partitions: int | None = None) -> str | None:
        """The embedding model namespace ``kind/name`` records (None: no such namespace)."""


def local_catalog() -> LocalCatalog:
    """The embedded engine's catalog of a data root (loaded on first use)."""
    from ltm.store.embedded import catalog

    return catalog


def database_catalog() -> DatabaseCatalog:
    """PostgreSQL's catalog of a database (loaded on first use: it needs the ``pg`` extra)."""
    from ltm.store.pg import catalog

    return catalog
