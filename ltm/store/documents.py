"""MemoryStorage's document-store half: list, count, export, update, history, delete_where / delete_all,
expiry, JSONL transfer (its base :class:`~ltm.store.transfer.Transfers`).

:class:`DocumentStore` is a base class of :class:`~ltm.store.storage.MemoryStorage`; it holds the logic of
these operations once, for every engine: checking, parsing the filter (one tree, :mod:`ltm.store.search.filters`),
paging, merging an update, expiry. It reaches the rows through the handle's backend
(:class:`~ltm.store.backend.DocumentBackend`: the embedded engine's :mod:`ltm.store.embedded.backend`, PostgreSQL's
:mod:`ltm.store.pg.documents`). Every change runs in ONE write transaction of the engine, with its history event in
the same transaction: a kill -9 leaves the old state or the new one, never neither, and never a history that
disagrees with the data.
"""

from __future__ import annotations

import builtins
import math
import time
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from ltm.config import Settings
from ltm.errors import InvalidInput, NotFound
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.backend import DocumentBackend
from ltm.store.embedder import TEXT, Embedder
from ltm.store.locks import HandleLock
from ltm.store.offloop import OffLoop
from ltm.store.records import LIST_MAX, HistoryEvent, MessagePage, check_limit, decode_cursor
from ltm.store.scopes import SCOPES
from ltm.store.search.filters import Compare, Filter, metadata_path
from ltm.store.search.query import checked_filters
from ltm.store.transfer import Transfers
from ltm.store.validation import check_id, check_k
from ltm.store.validity import visibility, with_filters

__all__ = ["DocumentStore"]


class DocumentStore(Transfers, OffLoop):
    """list / iter / count / export, update / history / delete_where / delete_all / purge_expired, JSONL transfer."""

    settings: Settings
    namespace: str | None
    _lock: HandleLock

    # -- hooks the storage implements --------------------------------------------------------------------
    @abstractmethod
    def _engine(self) -> DocumentBackend:
        """The open namespace's backend (opening it on first use)."""

    @abstractmethod
    def _prepare(self, messages: Iterable[Message], *, fresh_only: bool) -> rowplan.Pending:
        """Check messages and plan their embedding (see :func:`ltm.store.rows.prepare`)."""

    @abstractmethod
    def _commit(
        self,
        pending: rowplan.Pending,
        vectors: np.ndarray,
        *,
        replace: bool,
        update: bool = False,
        delete: Filter | None = None,
    ) -> int:
        """Write pending rows in one transaction the mirror follows (``update``: each must still be stored;
        ``delete``: messages deleted first in the same transaction)."""

    @abstractmethod
    def _embed(self, texts: builtins.list[str], purpose: str, *, dim: int | None = None) -> np.ndarray:
        """Vectors for texts (stored ones reused by content key: no model call for them); ``dim``: the namespace's
        dimension when the caller knows it already (else it is read from the engine)."""

    @abstractmethod
    async def _aembed(self, texts: builtins.list[str], purpose: str, *, dim: int | None = None) -> np.ndarray:
        """Async twin of :meth:`_embed`."""

    @abstractmethod
    def _given_dim(self) -> int | None:
        """The dimension given vectors must have (the namespace's, or the configured model's when new)."""

    @abstractmethod
    def _model_dim(self) -> int:
        """The dimension of the model's vectors (one model call when nothing else knows it)."""

    @property
    @abstractmethod
    def embedder(self) -> Embedder:
        """The store's embedder."""

    @abstractmethod
    def add_batch(self, messages: Iterable[Message], *, vectors: Any = None) -> int:
        """See :meth:`MemoryStorage.add_batch`."""

    @property
    def model(self) -> str:
        """The embedding model name this namespace records (its manifest refuses another)."""
        return self.embedder.model

    # -- reading --------------------------------------------------------------------------------------------
    def get(self, message_id: str) -> Message:
        """The stored message with this id; NotFound otherwise."""
        check_id(message_id)
        with self._lock:
            self.purge_expired()
            body = self._engine().reads.body_of(message_id)
        if body is None:
            raise NotFound(f"no message {message_id!r} in namespace {self.namespace!r}")
        return Message.load(body)

    def delete(self, message_or_id: Message | str) -> bool:
        """Delete a message (or its id) from SQLite, FTS and FAISS; False when it was not stored."""
        message_id = check_id(message_or_id.id if isinstance(message_or_id, Message) else message_or_id)
        with self._lock:
            return self._engine().remove(Compare("id", "eq", message_id), self.settings.history_limit) > 0

    def __len__(self) -> int:
        """How many messages are stored, every version included (:meth:`count` counts those valid now)."""
        with self._lock:
            self.purge_expired()
            return self._engine().reads.count_where(None)

    def recent(self, n: int) -> builtins.list[Message]:
        """The ``n`` most recently added messages, oldest first."""
        with self._lock:
            return [Message.load(b) for b in self._engine().reads.recent(check_k(n))] if n else []

    def list(
        self,
        filters: Mapping[str, Any] | None = None,
        *,
        limit: int = 100,
        cursor: str | None = None,
        as_of: Any = None,
        known_at: Any = None,
    ) -> MessagePage:
        """A page of stored messages matching ``filters`` (those :meth:`search` takes), oldest first
        (insertion order), at most ``limit`` (1 to 10,000). Pass the page's ``next_cursor`` back for the
        next page: it stays valid while others add or delete. A message replaced (:meth:`replace`) meanwhile
        shows up again, as its new version, near the end (the new version has a new seq). Only what is valid now
        is listed (a superseded version is not), or what was valid ``as_of`` / known at ``known_at``
        (:mod:`ltm.store.validity`)."""
        after, limit = decode_cursor(cursor), check_limit(limit)
        tree = checked_filters(self._visible(filters, as_of, known_at))
        with self._lock:
            self.purge_expired()
            found = self._engine().reads.listed(after, limit + 1, tree)  # one more: is there a next?
        return MessagePage.of(found, limit)

    def iter(self, filters: Mapping[str, Any] | None = None, *, page: int = 1000) -> Iterator[Message]:
        """Every stored message matching ``filters``, oldest first: :meth:`list`'s pages of ``page`` messages
        (1 to 10,000) followed cursor to cursor, read one page at a time as the iteration reaches it (no lock is
        held between pages). What :meth:`list`'s cursor promises holds: others may add or delete meanwhile, and a
        message replaced meanwhile shows up again, as its new version, near the end."""
        if not isinstance(page, int) or isinstance(page, bool) or not 1 <= page <= LIST_MAX:
            raise InvalidInput(f"page is how many messages one read brings, from 1 to {LIST_MAX:,}, got {page!r}")
        checked_filters(filters)  # bad filters fail at the call, not at the first next()
        return self._pages(filters, page)

    def _pages(self, filters: Mapping[str, Any] | None, page: int) -> Iterator[Message]:
        cursor: str | None = None
        while True:
            found = self.list(filters, limit=page, cursor=cursor)
            yield from found.messages
            if found.next_cursor is None:
                return
            cursor = found.next_cursor

    def count(self, filters: Mapping[str, Any] | None = None, *, as_of: Any = None, known_at: Any = None) -> int:
        """How many messages the namespace holds (matching ``filters`` when given) that are valid now, or
        ``as_of`` / known at ``known_at`` as :meth:`list` reads them."""
        tree = checked_filters(self._visible(filters, as_of, known_at))
        with self._lock:
            self.purge_expired()
            return self._engine().reads.count_where(tree)

    def _visible(
        self, filters: Mapping[str, Any] | None, as_of: Any = None, known_at: Any = None
    ) -> Mapping[str, Any] | None:
        """``filters`` AND what a read sees of the versions (:func:`ltm.store.validity.visibility`); ``filters``
        itself, at the cost of one index probe, when neither time is given and no row carries validity."""
        if as_of is None and known_at is None:
            with self._lock:
                if not self._engine().lifespan.has_validity():
                    return filters
        return with_filters(filters, visibility(as_of, known_at))

    def export(self, *, with_vectors: bool = False, batch: int = 1000) -> Iterator[tuple[Message, np.ndarray | None]]:
        """Every stored message in insertion order, with its content vector when ``with_vectors``.

        ``add_batch(messages, vectors=...)`` into a namespace of the same model reads it back losslessly.
        """
        after = 0
        while True:
            with self._lock:
                rows = self._engine().reads.page(after, batch, with_vectors)
            if not rows:
                return
            for seq, body, vector in rows:
                yield Message.load(body), vector
                after = seq

    # -- update ------------------------------------------------------------------------------------------
    def update(
        self, message_id: str, *, content: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Message:
        """Change a stored message's ``content`` and / or ``metadata``; returns the new version.

        ``metadata`` is merged into the stored metadata (a key set to None is removed), so scopes survive an
        update that does not name them. One write transaction (the old version or the new one survives a
        crash); the content is re-embedded only when it changes. The id stays; the message moves to the end
        of :meth:`list` order. NotFound (an LTMError) when no message has this id, e.g. it was deleted.
        """
        pending = self._prepare([self._updated(message_id, content, metadata)], fresh_only=False)
        self._commit(pending, self._embed(pending.texts, TEXT), replace=True, update=True)
        return pending.messages[0]

    async def aupdate(
        self, message_id: str, *, content: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Message:
        """Async twin of :meth:`update` (blocking work off the event loop)."""
        new = await self._off(self._updated, message_id, content, metadata)
        pending = await self._off(self._prepare, [new], fresh_only=False)
        embedded = await self._aembed(pending.texts, TEXT)
        await self._off(self._commit, pending, embedded, replace=True, update=True)
        return pending.messages[0]

    def _updated(self, message_id: str, content: str | None, metadata: Mapping[str, Any] | None) -> Message:
        if content is None and metadata is None:
            raise InvalidInput("update needs content or metadata (or both); nothing was changed")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInput(f"metadata must be a dict, got {type(metadata).__name__}")
        with self._lock:
            self.purge_expired()
            old_body = self._engine().reads.body_of(str(message_id))
        if old_body is None:
            raise NotFound(
                f"no message {message_id!r} in namespace {self.namespace!r} (deleted, expired or never "
                "added); add it instead"
            )
        old = Message.load(old_body)
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = content
        if metadata is not None:
            merged = {**old.metadata, **metadata}
            changes["metadata"] = {k: v for k, v in merged.items() if v is not None}
        return Message.load({**old.to_dict(), **changes})

    def replace_batch(
        self, messages: Iterable[Message], *, vectors: Any = None, delete: Mapping[str, Any] | None = None
    ) -> int:
        """Store each message in place of the stored message with its id (or as new), all in ONE transaction;
        returns how many were written. ``vectors`` as in :meth:`add_batch` (a ``NO_VECTOR`` row: a message stored
        without a vector). History: UPDATE or ADD each.

        ``delete`` (a filter, as :meth:`delete_where` takes) deletes the messages matching it in that same
        transaction, before the messages are written: a crash leaves all of it or none. Every message is
        checked and embedded before anything is written, so a refused message or a failed model call leaves
        the store as it was."""
        tree = None
        if delete is not None:
            tree = checked_filters(delete)
            if tree is None:
                raise InvalidInput(
                    "replace_batch's delete needs a non-empty filter; to delete every message use delete_all()"
                )
        listed, given = rowplan.given_vectors(messages, vectors, self._given_dim, self._model_dim)
        pending = self._prepare(listed, fresh_only=False)
        if not pending.messages:
            if tree is not None:
                with self._lock:
                    self._engine().remove(tree, self.settings.history_limit)
            return 0
        embedded = self._embed(rowplan.texts_to_embed(pending, given), TEXT)
        self._commit(pending, rowplan.with_given(pending, given, embedded), replace=True, delete=tree)
        return len(pending.messages)

    def set_expiry(self, expiries: Mapping[str, float]) -> int:
        """Move the expiry (``expires_at``, unix seconds) of the messages with these ids, changing nothing else:
        no history event, no re-embedding, content, vectors and :meth:`list` order stay. One transaction; how
        many of the ids were stored. For a time-to-live refreshed on every read, which must not rewrite what
        it reads."""
        checked: dict[str, float] = {}
        for message_id, when in expiries.items():
            if isinstance(when, bool) or not isinstance(when, int | float) or not math.isfinite(when):
                raise InvalidInput(f"set_expiry takes unix seconds (a finite number), got {when!r} for {message_id!r}")
            checked[check_id(message_id)] = float(when)
        if not checked:
            return 0
        with self._lock:
            return self._engine().lifespan.set_expiry(checked)

    def history(self, message_id: str) -> builtins.list[HistoryEvent]:
        """The message's ADD / UPDATE / DELETE events, oldest first, each with old and new values and its time
        (at most ``settings.history_limit`` events are kept per namespace, the oldest dropped first)."""
        with self._lock:
            return self._engine().history.events(str(message_id))

    def index_metadata(self, key: str) -> None:
        """Index metadata ``key`` (``a.b`` for a nested one), so that ``metadata.KEY`` filters on it become
        index lookups instead of reading every row's JSON. Kept in the SQLite file (idempotent); costs a
        little on every add, like any index."""
        metadata_path(f"metadata.{key}")  # InvalidInput for a bad key, on every engine
        with self._lock:
            self._engine().upkeep.index_metadata(key)

    # -- deleting by filter -------------------------------------------------------------------------------
    def delete_where(self, filters: Mapping[str, Any]) -> int:
        """Delete every message matching ``filters`` (the store's filter language) in one transaction;
        how many went. Each gets a DELETE in its history. An empty filter is refused: use :meth:`delete_all`."""
        tree = checked_filters(filters)
        if tree is None:
            raise InvalidInput("delete_where needs a non-empty filter; to delete every message use delete_all()")
        with self._lock:
            return self._engine().remove(tree, self.settings.history_limit)

    def delete_all(self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None) -> int:
        """Delete every message of a scope (all given scopes must match), or of the whole namespace when no
        scope is given; how many went. The namespace itself (directory, history) stays: see ``clean``."""
        scope = {k: v for k, v in zip(SCOPES, (user_id, agent_id, run_id), strict=True) if v is not None}
        tree = checked_filters(scope)
        with self._lock:
            return self._engine().remove(tree, self.settings.history_limit)

    def purge_expired(self) -> int:
        """Delete messages whose ``expires_at`` has passed (each with a DELETE in its history); how many.

        Reads call this first (one index probe when nothing expired), so search, list, get and find_news never
        see an expired message; compaction is this same call."""
        now = time.time()
        with self._lock:
            engine = self._engine()
            return (
                engine.remove(Compare("expires_at", "lte", now), self.settings.history_limit)
                if engine.lifespan.due(now)
                else 0
            )
