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

An engine is a class with the two class methods of :class:`Engine`; what it opens is a :class:`DocumentBackend`.
A new engine is a package beside ``embedded/`` and ``pg/`` with both, passing the contract suite
(``tests/store/contract``, parametrised over the engines); docs/ARCHITECTURE.md draws where it goes.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ltm.config import Settings
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.records import Analysis, HistoryEvent, KeywordAhead, KeywordSide, MemoryHit, Row, StoreStats
from ltm.store.search.filters import Filter

__all__ = ["DocumentBackend", "Engine", "StoreBackend", "backend_for"]


class StoreBackend(Protocol):
    """One open namespace of an engine. Not thread-safe by itself: the facade serialises calls."""

    @property
    def location(self) -> str:
        """Where the namespace lives (a directory, or a redacted URL and the namespace), for messages."""

    def dimension(self) -> int | None:
        """The stored vectors' dimension, None before the first vector (catching up with other writers)."""

    def ensure_dim(self, dim: int) -> None:
        """Record ``dim`` at the namespace's first vector; StoreMismatch for another dimension."""

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored."""

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Stored content vectors by content key: the embedder's cache (no model call for known text)."""

    def write(self, rows: Sequence[Row], *, replace: bool) -> int:
        """Insert ``rows`` in ONE transaction, skipping stored ids; or with ``replace`` put each in place of the
        stored message with its id, in the same transaction. How many were inserted (or replaced)."""

    def delete(self, message_id: str) -> bool:
        """Delete one message; False when it was not stored."""

    def body_of(self, message_id: str) -> str | None:
        """The stored message JSON, or None."""

    def count(self) -> int:
        """Messages stored."""

    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]:
        """{word: stored speaker, ``sent_from`` and role names holding it (of a bounded sample of messages)} for
        the ``words`` (lower case) a stored message's names hold (:mod:`ltm.store.search.speakers`: a question's names
        are put in the first person before it is embedded)."""

    def recent(self, n: int) -> list[str]:
        """The ``n`` newest bodies by insertion order, oldest first."""

    def page(self, after: int, limit: int, with_vectors: bool) -> list[tuple[int, str, np.ndarray | None]]:
        """(seq, body, content vector) of up to ``limit`` messages after seq ``after``, in insertion order."""

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
        :func:`~ltm.store.search.query.analyse`, when the caller made it; ``keyword``: hybrid only, the
        :meth:`keyword_candidates` the caller found while the model embedded the query, or the future of
        :meth:`keyword_beside`'s call."""

    def keyword_candidates(
        self,
        text: str,
        plan: Analysis,
        k: int,
        filters: Mapping[str, Any] | None,
        model_done: threading.Event | None = None,
    ) -> KeywordSide | None:
        """A hybrid search's keyword side for ``text`` (what :meth:`search` takes as ``keyword``): found while the
        model embeds the query, with whatever of the candidates' rows the engine can read without the query vector
        before ``model_done`` is set (what is left, :meth:`search` reads with the dense candidates' rows); None where
        :meth:`search` ranks the keyword side itself (one statement)."""

    def keyword_beside(
        self,
        text: str,
        plan: Analysis,
        k: int,
        filters: Mapping[str, Any] | None,
        model_done: threading.Event | None = None,
    ) -> Callable[[], KeywordSide] | None:
        """:meth:`keyword_candidates` as a call to run on another thread without the store's lock (made under it),
        so that :meth:`search` can take it as a future and do its dense side before it needs it; None where the
        keyword side needs the store's lock."""

    def similar(self, vector: np.ndarray, k: int, threshold: float, key: bytes) -> list[Message]:
        """Up to ``k`` messages with cosine >= ``threshold`` to ``vector``; exact copies (``key``) first."""

    def best_similarities(self, vectors: np.ndarray, keys: Sequence[bytes] | None) -> np.ndarray:
        """Each vector's highest cosine to a stored message (-1.0 when none; 1.0 for stored keys)."""

    def stats(self, namespace: str | None, model: str, embedding_calls: int) -> StoreStats:
        """Counts for health checks."""

    def save(self) -> None:
        """Make the next open fast (a FAISS snapshot); nothing to do where the server keeps the index."""

    def close(self) -> None:
        """Release files or connections; the facade reopens on the next use."""

    def drop(self) -> None:
        """Delete the namespace's data (after close)."""


@runtime_checkable
class DocumentBackend(StoreBackend, Protocol):
    """One handle's open namespace of an engine, with everything the facade calls: the rows and searches of
    :class:`StoreBackend`, the document API (:mod:`ltm.store.documents`: filters as a parsed tree, history,
    expiry, explain) and the handle's side of the namespace (where it is, the write paths an engine may
    specialise). Called under the handle's lock."""

    engine_name: str  # "embedded", "postgresql": for reprs

    @property
    def directory(self) -> Path | None:
        """The namespace's directory (None where a server keeps it)."""

    def touch(self) -> None:
        """The handle used the namespace (an engine that bounds what idle handles hold may release others)."""

    def known_dimension(self) -> int | None:
        """The dimension when it is known without a read; None: ask :meth:`dimension`."""

    def write_groups(
        self,
        items: Sequence[tuple[rowplan.Pending, np.ndarray]],
        keys: Callable[[Sequence[str]], builtins.list[bytes]],
        history_limit: int,
        staging: Any = None,
    ) -> builtins.list[int]:
        """The adds of several callers (each a pending plan and its vectors; ``keys`` the content keys of
        texts): how many messages of each were new. ``staging``: what :meth:`staging` made for them."""

    def staging(self, messages: builtins.list[Message]) -> Any:
        """What commits an add's messages while the model embeds them, or None (the engine has no such path)."""

    def add_behind(self, messages: builtins.list[Message]) -> int | None:
        """With ``Settings.write_behind``, where the engine supports it: stage ``messages`` and embed them later;
        how many were new. None: the handle adds as ever."""

    def write(self, rows: Sequence[Row], *, replace: bool, update: bool = False, history_limit: int = 0) -> int:
        """Insert ``rows`` in ONE transaction, skipping stored ids; or with ``replace`` put each in place of the
        stored message with its id, in the same transaction; each with its history event (kept up to
        ``history_limit`` per namespace). How many were inserted (or replaced). ``update``: NotFound, nothing
        written, when an id is no longer stored."""

    def delete(self, message_id: str, history_limit: int = 0) -> bool:
        """Delete one message (with its DELETE event); False when it was not stored."""

    def remove(self, tree: Filter | None, history_limit: int) -> int:
        """Delete every message matching ``tree`` (all when None) in one transaction, with DELETE events."""

    def due(self, now: float) -> bool:
        """Whether some message's expiry is at or before ``now``."""

    def events(self, message_id: str) -> list[HistoryEvent]:
        """The message's history, oldest first."""

    def trail_rows(self) -> list[tuple[str, str, str | None, float]]:
        """The namespace's history, oldest first: (id, event, old body, at)."""

    def load_trail(self, rows: Sequence[tuple[str, str, str | None, float]], history_limit: int) -> None:
        """Make ``rows`` the history of the ids they name (replacing theirs)."""

    def supersede(
        self, old_ids: Sequence[str], close: Callable[[Message], Message], rows: Sequence[Row], history_limit: int
    ) -> None:
        """In ONE write transaction: each stored ``old_ids`` message becomes ``close(old)`` (metadata and validity
        only), ``rows`` (the new version) are inserted, all recorded in the history; NotFound / InvalidInput as
        :meth:`MemoryStorage.supersede <ltm.store.storage.MemoryStorage.supersede>` says."""

    def has_validity(self) -> bool:
        """Whether any row of the namespace carries validity (:mod:`ltm.store.validity`): when none does, a read
        adds no visibility clause."""

    def index_metadata(self, key: str) -> None:
        """Index filters on ``metadata.KEY``."""

    def count_where(self, tree: Filter | None) -> int:
        """Messages matching ``tree`` (all when None)."""

    def signal_scores(
        self, ids: Sequence[str], vector: np.ndarray | None, text: str | None
    ) -> dict[str, dict[str, float]]:
        """Per-signal scores (dense, context, keyword) of messages ``ids`` for a query, for ``explain``."""

    def listed(self, after: int, limit: int, tree: Filter | None) -> list[tuple[int, str]]:
        """(seq, body) of up to ``limit`` messages matching ``tree`` after seq ``after``, in order."""

    def bulk(self) -> AbstractContextManager[None]:
        """A load of many batches (each still one transaction): the engine may defer index upkeep to its end."""


class Engine(Protocol):
    """An engine as a handle composes it (``MemoryStorage(..., backend=EmbeddedBackend)``): the class whose
    :meth:`open` gives the handle its namespace."""

    def open(self, store: Any, namespace: str) -> DocumentBackend:
        """Open (creating when new) ``namespace`` for the handle ``store`` (its settings, kind, model, lock)."""

    def discard(self, store: Any, namespace: str) -> None:
        """Delete ``namespace``'s data for a handle that does not have it open."""


def backend_for(settings: Settings) -> Engine:
    """The engine the settings ask for: PostgreSQL with ``store_url``, else the embedded one."""
    if settings.store_url:
        from ltm.store.pg import PgBackend

        return PgBackend
    from ltm.store.embedded import EmbeddedBackend

    return EmbeddedBackend
