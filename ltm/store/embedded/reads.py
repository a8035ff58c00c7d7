"""The reads of :class:`~ltm.store.embedded.backend.EmbeddedBackend` beside its search: messages by id, count and page,
the audit trail, the per-signal scores of ``explain``, the keyword index's term statistics, the nearest stored
messages to given vectors (``search_similar``, ``find_news``) and the health counts.

:class:`EmbeddedReads` is a base of :class:`~ltm.store.embedded.backend.EmbeddedBackend`; like every call of the
backend, each read runs under the handle's lock.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ltm.message import Message
from ltm.store.embedded import history as trail
from ltm.store.embedded.explain import sqlite_signals
from ltm.store.embedded.filters import to_sql
from ltm.store.embedded.log import MessageLog, translate
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.nearest import best_similarities, similar
from ltm.store.embedded.retrieval import keyword_match
from ltm.store.embedded.validity import hidden_now
from ltm.store.records import HistoryEvent, StoreStats, unpack
from ltm.store.search.filters import Filter

__all__ = ["EmbeddedReads"]


class EmbeddedReads:
    """The open namespace's reads (a base class of :class:`~ltm.store.embedded.backend.EmbeddedBackend`)."""

    if TYPE_CHECKING:  # PooledNamespace's and EmbeddedBackend's

        def _require(self) -> tuple[MessageLog, IndexMirror]: ...
        def _synced(self) -> tuple[MessageLog, IndexMirror]: ...

    def body_of(self, message_id: str) -> str | None:
        return self._require()[0].body_of(message_id)

    def count(self) -> int:
        return self._require()[0].count()

    def count_where(self, tree: Filter | None) -> int:
        log = self._require()[0]
        return log.count() if tree is None else len(log.matching_seqs(*to_sql(tree)))

    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]:
        return self._require()[0].speaker_names(words)

    def recent(self, n: int) -> builtins.list[str]:
        return self._require()[0].recent(n)

    def page(self, after: int, limit: int, with_vectors: bool) -> builtins.list[tuple[int, str, np.ndarray | None]]:
        return [
            (seq, body, None if blob is None else unpack(blob))
            for seq, body, blob in self._require()[0].page(after, limit, with_vectors)
        ]

    def listed(self, after: int, limit: int, tree: Filter | None) -> builtins.list[tuple[int, str]]:
        where, params = to_sql(tree) if tree is not None else ("1", [])
        return self._require()[0].listed(after, limit, where, params)

    def events(self, message_id: str) -> builtins.list[HistoryEvent]:
        log = self._require()[0]
        with translate(log.path), log.transaction(write=False):
            return trail.events_of(log.db, message_id, log.body_of(message_id))

    def due(self, now: float) -> bool:
        log = self._require()[0]
        with translate(log.path):
            return log.db.execute("SELECT 1 FROM messages WHERE expires_at <= ? LIMIT 1", (now,)).fetchone() is not None

    def trail_rows(self) -> builtins.list[tuple[str, str, str | None, float]]:
        log = self._require()[0]
        with translate(log.path):
            rows = log.db.execute("SELECT id, event, old, at FROM history ORDER BY hseq").fetchall()
        return [(str(i), str(e), o, float(a)) for i, e, o, a in rows]

    def signal_scores(
        self, ids: Sequence[str], vector: np.ndarray | None, text: str | None
    ) -> dict[str, dict[str, float]]:
        log = self._require()[0]
        match = keyword_match(log, text) if text and text.strip() else None
        return sqlite_signals(log, vector, match)(list(ids))

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The keyword index's rows and each term's document frequency (:mod:`ltm.store.embedded.keywords`)."""
        return self._require()[0].term_stats(terms)

    def term_scores(self, term: str, ids: Sequence[str]) -> builtins.list[tuple[str, float]]:
        """``-bm25`` of ``term`` alone for the messages ``ids`` that hold it."""
        return self._require()[0].term_scores(term, ids)

    def similar(self, vector: np.ndarray, k: int, threshold: float, key: bytes) -> builtins.list[Message]:
        log, mirror = self._synced()
        return similar(log, mirror, vector, k, threshold, key, hidden_now(log))

    def best_similarities(self, vectors: np.ndarray, keys: Sequence[bytes] | None) -> np.ndarray:
        log, mirror = self._synced()
        return best_similarities(log, mirror, vectors, keys, hidden_now(log))

    def stats(self, namespace: str | None, model: str, embedding_calls: int) -> StoreStats:
        log, mirror = self._synced()
        return mirror.stats(namespace, log, model, embedding_calls)
