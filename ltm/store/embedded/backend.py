""":class:`EmbeddedBackend`: one namespace as a SQLite file + FAISS indexes in a local directory (the default engine).

``<storage_dir>/<kind>/<safe namespace>/`` holds ``memory.sqlite`` (the truth: :mod:`ltm.store.embedded.log`), the
FAISS snapshots that follow it (:mod:`ltm.store.embedded.mirror`) and ``manifest.json`` (model, dimension, schema).
Several processes may open one namespace: SQLite serialises their writes, and each process's mirror replays the
others' commits before it reads. In one process, the handles on a namespace share one engine (one connection, one
copy of the indexes: :mod:`ltm.store.embedded.shared`), parked by the pool when idle (:mod:`ltm.store.embedded.pool`).

A :class:`EmbeddedBackend` is one handle's view of its open namespace (the handle is the
:class:`~ltm.store.storage.MemoryStorage` that opened it); the handle calls it under its lock, which is the shared
engine's lock once the namespace is open. Its reads other than search (rows by id, pages, the trail, vectors'
neighbours, stats) are its base :class:`~ltm.store.embedded.reads.EmbeddedReads`'s.
"""

from __future__ import annotations

import builtins
import contextlib
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.embedded import history as trail
from ltm.store.embedded.behind import Staging, WriteBehind
from ltm.store.embedded.erase import erase
from ltm.store.embedded.filters import to_sql
from ltm.store.embedded.log import MessageLog, translate
from ltm.store.embedded.mirror import IndexMirror
from ltm.store.embedded.pool import POOL, PooledNamespace
from ltm.store.embedded.query import SearchQuery
from ltm.store.embedded.reads import EmbeddedReads
from ltm.store.embedded.retrieval import keyword_side, retrieve
from ltm.store.embedded.shared import SHARED
from ltm.store.embedded.validity import has_validity, served
from ltm.store.embedded.versions import supersede
from ltm.store.embedded.writes import delete_matching, insert_groups, replace_rows
from ltm.store.embedder import Embedder
from ltm.store.handle import Handle
from ltm.store.naming import namespace_dir
from ltm.store.records import ForgetReceipt, KeywordSide, MemoryHit, Row
from ltm.store.request import SearchContext, SearchRequest, answered, context_of, expire
from ltm.store.roles import Roles
from ltm.store.search.filters import Compare, Filter, metadata_path
from ltm.store.search.fusion import DEPTH
from ltm.store.search.query import analyse

__all__ = ["EmbeddedBackend"]

# From this many rows a hybrid search's keyword side reads through the log's second connection, beside the search
# (keyword_ahead): below it BM25 ends well within the model's time (docs/SEARCH_SPEED.md), and a small namespace keeps
# to one connection (file descriptors: ltm.store.embedded.pool).
READ_BESIDE_FROM = 10_000


class EmbeddedBackend(PooledNamespace, EmbeddedReads, Roles):
    """One handle's open namespace directory. Build it with :meth:`open`; call it under the handle's lock."""

    engine_name = "embedded"

    def __init__(self, store: Handle) -> None:
        self.settings, self.kind, self.namespace = store.settings, store.kind, None
        self._lock = store._lock
        self._store = weakref.ref(store)  # the engine holds its backends weakly: a dropped handle lets go
        self._behind = WriteBehind.of(self) if self.settings.write_behind else None  # ltm.store.embedded.behind

    @classmethod
    def open(cls, store: Handle, namespace: str) -> EmbeddedBackend:
        """Open (creating when new) ``namespace`` for the handle ``store``; StoreMismatch for another model."""
        backend = cls(store)
        backend._open(namespace)
        return backend

    @classmethod
    def discard(cls, store: Handle, namespace: str) -> None:
        """Delete ``namespace``'s directory for a handle that has it closed (other handles' engine let go first)."""
        directory = namespace_dir(store.settings.storage_dir, store.kind, namespace)
        shared = SHARED.find(directory, namespace)
        if shared is not None:
            with shared.lock:
                POOL.forget(shared)
                shared.drop()
        shutil.rmtree(directory, ignore_errors=True)

    @property
    def embedder(self) -> Embedder:
        store = self._store()
        assert store is not None, "the handle of this namespace was collected"
        return store.embedder

    @property
    def _embedder(self) -> Embedder | None:
        """The handle's embedder if it has one yet (the pool drops its cache when it parks the namespace)."""
        store = self._store()
        return None if store is None else store._embedder

    # -- where, and what dimension ---------------------------------------------------------------------------
    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def directory(self) -> Path | None:
        return self.path

    def touch(self) -> None:
        """Nothing: every call below marks the namespace used in the pool (:meth:`_require`)."""

    def _settle(self, log: MessageLog, mirror: IndexMirror) -> None:
        WriteBehind.settle_store(self, log, mirror)

    def _synced(self) -> tuple[MessageLog, IndexMirror]:
        """The open log and its mirror, caught up with every commit."""
        log, mirror = self._require()
        mirror.sync(log)
        return log, mirror

    def dimension(self) -> int | None:
        recorded = self._require()[1].manifest.dim  # the manifest's, once recorded: no need to load the indexes
        mirror = self._require()[1] if recorded is not None else self._synced()[1]
        mirror.check_model()  # another handle's model wrote the vectors since this one opened the namespace empty
        return recorded if recorded is not None else mirror.dim

    def known_dimension(self) -> int | None:
        """The manifest's dimension once recorded (it never changes); None when it has to be learned."""
        mirror = self._mirror
        return mirror.manifest.dim if mirror is not None else None

    def ensure_dim(self, dim: int) -> None:
        self._require()[1].ensure_dim(dim)

    # -- writes ----------------------------------------------------------------------------------------------
    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return self._require()[0].existing_ids(ids)

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        return self._require()[0].vectors_by_key(keys)

    def write(
        self,
        rows: Sequence[Row],
        *,
        replace: bool,
        update: bool = False,
        history_limit: int = 0,
        delete: Filter | None = None,
    ) -> int:
        log, mirror = self._require()
        if replace:
            return replace_rows(
                log,
                mirror,
                rows,
                update=update,
                namespace=self.namespace,
                history_limit=history_limit,
                delete=None if delete is None else to_sql(delete),
            )
        with mirror.writing(log) as write:
            write.insert(log.insert(rows))
            trail.record(log.db, [(row.id, "ADD", None) for _, row in write.inserted], time.time(), history_limit)
        return len(write.inserted)

    def write_groups(
        self,
        items: Sequence[tuple[rowplan.Pending, np.ndarray]],
        keys: Callable[[Sequence[str]], builtins.list[bytes]],
        history_limit: int,
        staging: object = None,
    ) -> builtins.list[int]:
        """The adds of several callers in ONE write transaction (:func:`ltm.store.embedded.writes.insert_groups`);
        ``staging`` (what :meth:`staging` made): their messages are committed in ``staged`` already, so this write
        moves them, unfsynced."""
        assert staging is None or isinstance(staging, Staging), "staging comes from this engine's staging()"
        log, mirror = self._require()
        return insert_groups(
            log,
            mirror,
            keys,
            items,
            history_limit,
            before=None if staging is None else staging.delete,
            durable=staging is None,
        )

    def staging(self, messages: builtins.list[Message]) -> Staging | None:
        """What commits an add's new messages while the model embeds them (:class:`Staging`); None with
        ``sqlite_synchronous="normal"``, whose commits have no fsync to hide."""
        return Staging(self, messages) if self.settings.sqlite_synchronous == "full" else None

    def add_behind(self, messages: builtins.list[Message]) -> int | None:
        """With ``Settings.write_behind``: stage ``messages`` durably, their vectors computed later; how many were
        new. None without it (the handle adds as ever)."""
        return None if self._behind is None else self._behind.add(messages)

    def delete(self, message_id: str, history_limit: int = 0) -> bool:
        return self.remove(Compare("id", "eq", message_id), history_limit) > 0

    def remove(self, tree: Filter | None, history_limit: int) -> int:
        """Delete the messages matching ``tree`` (all when None), each with a DELETE event; how many."""
        where, params = to_sql(tree) if tree is not None else ("1", [])
        log, mirror = self._require()
        with mirror.writing(log) as write:
            events = delete_matching(log, write, where, params)
            trail.record(log.db, events, time.time(), history_limit)
        return len(events)

    def set_expiry(self, expiries: Mapping[str, float]) -> int:
        """Set ``expires_at`` of the messages with these ids (column, metadata and body) in one transaction,
        nothing else: no history event, the rows keep their seq, content and vectors; how many were stored."""
        log = self._require()[0]
        changed = 0
        with translate(log.path), log.transaction(write=True):
            for message_id, when in expiries.items():
                changed += log.db.execute(
                    "UPDATE messages SET expires_at = ?, metadata = json_set(metadata, '$.expires_at', json(?)), "
                    "body = json_set(body, '$.metadata.expires_at', json(?)) WHERE id = ?",
                    (float(when), repr(float(when)), repr(float(when)), message_id),  # JSON text: every digit kept
                ).rowcount
        return changed

    def forget(
        self, ids: Sequence[str] | None, tree: Filter | None, reason: str | None, history_limit: int
    ) -> ForgetReceipt:
        """Erase every copy of the messages (:mod:`ltm.store.embedded.erase`)."""
        return erase(self, ids, tree, reason, history_limit)

    def supersede(
        self,
        old_ids: Sequence[str],
        close: Callable[[Message], Message],
        rows: Sequence[Row],
        history_limit: int,
        delete: Filter | None = None,
    ) -> None:
        log, mirror = self._require()
        gone = None if delete is None else to_sql(delete)
        supersede(log, mirror, old_ids, close, rows, self.namespace, history_limit, gone)

    def has_validity(self) -> bool:
        log = self._require()[0]
        with translate(log.path):
            return has_validity(log.db, log)

    def index_metadata(self, key: str) -> None:
        name = "messages_meta_" + key.replace(".", "__")
        log = self._require()[0]
        with log.transaction(write=True):
            path = metadata_path(f"metadata.{key}")
            log.db.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON messages(json_extract(metadata, {path}))')

    def load_trail(self, rows: Sequence[tuple[str, str, str | None, float]], history_limit: int) -> None:
        log = self._require()[0]
        with translate(log.path), log.transaction(write=True):
            log.db.executemany("DELETE FROM history WHERE id = ?", [(i,) for i in sorted({r[0] for r in rows})])
            trail.append(log.db, rows, history_limit)

    def bulk(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to defer: the embedded engine writes each batch as ever."""
        return contextlib.nullcontext()

    # -- search (the other reads: ltm.store.embedded.reads) ----------------------------------------------
    def search_context(self, words: Sequence[str], *, dimension: bool, validity: bool) -> SearchContext:
        return context_of(self, words, dimension, validity)

    def search(self, request: SearchRequest) -> builtins.list[MemoryHit]:
        expire(self, self.settings.history_limit)
        return answered(self, request, self._ranked(request))

    def _ranked(self, request: SearchRequest) -> builtins.list[MemoryHit]:
        if request.k == 0:
            return []
        # keyword search reads SQLite only: the vector indexes stay unloaded
        log, mirror = self._synced() if request.mode != "keyword" else self._require()
        where, params, hidden = _clause(log, request)
        return retrieve(
            log,
            mirror,
            SearchQuery(
                request.text,
                request.vector,
                request.k,
                request.mode,
                where,
                tuple(params),
                exact_key=request.exact_key,
                lines=request.lines,
                analysis=request.plan,
                keyword=request.keyword,
                hidden=hidden,
            ),
        )

    def keyword_ahead(
        self, request: SearchRequest, model_done: threading.Event
    ) -> tuple[Callable[[], KeywordSide], bool]:
        """FTS5's candidates and their rows (SQLite lets go of the GIL while it ranks and reads, so this overlaps
        the model's work; :func:`~ltm.store.embedded.retrieval.keyword_side`). In a namespace of
        :data:`READ_BESIDE_FROM` rows or more the call needs no store lock: it reads through the log's second
        connection (:meth:`~ltm.store.embedded.log.MessageLog.keyword_reader`), where BM25 alone can last as long
        as the model, and the search's dense side then runs while the keyword side finishes (docs/SEARCH_SPEED.md).
        Below that size, on read-only storage, or while another search's keyword side holds the reader, it reads
        under the lock through the store's connection."""
        log = self._require()[0]
        reader = log.keyword_reader() if log.heads()[0] >= READ_BESIDE_FROM else None
        if reader is None:
            return partial(self._keyword_side, request, model_done), False

        def run() -> KeywordSide:
            try:
                return _keyword_side(reader, request, model_done)
            finally:
                log.release_reader()

        return run, True

    def _keyword_side(self, request: SearchRequest, model_done: threading.Event) -> KeywordSide:
        return _keyword_side(self._require()[0], request, model_done)

    # -- lifetime --------------------------------------------------------------------------------------------
    def save(self) -> None:
        self._synced()[1].save()  # sync applied a staged add's deferred vectors and their upkeep first

    def drop(self) -> None:
        """Delete the namespace's directory; every handle on it lets go of the files (their next use starts
        empty)."""
        directory = self.path or namespace_dir(self.settings.storage_dir, self.kind, self.namespace or "")
        if self._shared is not None:
            POOL.forget(self._shared)
            self._shared.drop()
        self._detach()
        shutil.rmtree(directory, ignore_errors=True)


def _clause(log: MessageLog, request: SearchRequest) -> tuple[str | None, builtins.list[Any], frozenset[int] | None]:
    """(SQL clause over ``messages m`` or None, its parameters, seqs to leave out) of a request's filter tree: the
    default view alone is served by leaving out the few rows it hides (:func:`ltm.store.embedded.validity.served`)."""
    if request.view is not None:
        with translate(log.path):
            rest, hidden = served(log.db, request.view, log)
        if rest is None:
            return None, [], hidden
    if request.filters is None:
        return None, [], None
    where, params = to_sql(request.filters)
    return where, params, None


def _keyword_side(log: MessageLog, request: SearchRequest, model_done: threading.Event | None) -> KeywordSide:
    """A top-``k`` hybrid search's keyword side over ``log`` (the store's connection or its keyword reader)."""
    where, params, hidden = _clause(log, request)
    fetch = max(3 * request.k, DEPTH)
    plan = request.plan if request.plan is not None else analyse(request.text)
    if hidden:
        return keyword_side(log, request.text, plan, fetch, where or "1", params, model_done, hidden=hidden)
    return keyword_side(log, request.text, plan, fetch, where or "1", params, model_done)
