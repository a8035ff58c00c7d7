"""MemoryStorage's versions: ``supersede`` (a newer version in place of an older one, the older kept), ``versions``
(a chain, oldest first) and keyed memories (``put`` / ``current``: a new write under a stored key supersedes it).

:class:`Versions` is a base class of :class:`~ltm.store.storage.MemoryStorage`; what the reads see of the
versions (now, ``as_of``, ``known_at``) is :mod:`ltm.store.validity`. A supersession is ONE write transaction
of the engine (:meth:`~ltm.store.backend.DocumentBackend.supersede`): the old version's metadata and validity
columns change in place (its content, vectors and keyword index stay), the new version is inserted, and the
history records both (UPDATE of the old one, whose new value carries ``superseded_by``, ``superseded_at`` and
the reason; ADD of the new one), so a crash leaves both versions as they were or both as they are after.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ltm.errors import InvalidInput, NotFound
from ltm.message import Message
from ltm.store import rows as rowplan
from ltm.store.documents import DocumentStore
from ltm.store.embedder import TEXT
from ltm.store.scopes import SCOPES
from ltm.store.search.query import checked_filters
from ltm.store.validation import check_id
from ltm.store.validity import (
    KEY,
    REASON,
    SUPERSEDED_AT,
    SUPERSEDED_BY,
    SUPERSEDES,
    VALID_FROM,
    VALID_TO,
    instant,
)

__all__ = ["Versions"]

_PUT_TRIES = 8  # a put that loses the race for a key to another writer supersedes the winner's version instead


def _ids(old_id: str | Sequence[str]) -> list[str]:
    """The old version's ids, checked (one id, or a version's several)."""
    olds = [old_id] if isinstance(old_id, str) else list(old_id)
    if not olds:
        raise InvalidInput("supersede needs the id of the version to replace")
    for one in olds:
        check_id(one)
    return olds


def _check_name(value: object, what: str, limit: int = 256) -> str:
    if not isinstance(value, str) or not value or len(value) > limit or "\x00" in value:
        raise InvalidInput(
            f"{what} must be non-empty text of at most {limit} characters, without NUL; got {value!r:.80}"
        )
    return value


def _closed(old: Message, new_id: str, closure: float, now: float, reason: str | None) -> Message:
    """``old`` as a version that ``new_id`` superseded at ``now``, valid up to ``closure``."""
    meta = dict(old.metadata)
    start = instant(meta[VALID_FROM], "valid_from") if meta.get(VALID_FROM) is not None else old.created_at
    if closure < start:
        raise InvalidInput(
            f"the new version's valid_from ({closure}) is before {old.id!r}'s ({start}); a version "
            "replaces one that began before it"
        )
    declared = meta.get(VALID_TO)
    end = closure if declared is None else min(instant(declared, "valid_to"), closure)
    meta.update({VALID_TO: end, SUPERSEDED_BY: new_id, SUPERSEDED_AT: now})
    if reason is not None:
        meta[REASON] = reason
    return Message.load({**old.to_dict(), "metadata": meta})


class Versions(DocumentStore):
    """supersede / asupersede, versions, put / aput / current over the handle's engine."""

    def supersede(
        self, old_id: str | Sequence[str], new: Message | str | Sequence[Message], *, reason: str | None = None
    ) -> str:
        """Store ``new`` as the next version of the stored message ``old_id``; returns ``new``'s id.

        ``old_id`` stops being valid at ``new``'s ``metadata["valid_from"]`` (unix seconds, datetime or ISO 8601),
        or now when it has none (``new`` then gets that ``valid_from``); the two are linked (``superseded_by``,
        ``superseded_at`` and ``supersede_reason`` in the old one's metadata, ``supersedes`` in the new one's),
        and the history records the change with its ``reason``, all in one transaction. The old version stays
        stored: :meth:`get` and :meth:`versions` return it, a search ``as_of`` a time it was valid finds it, a
        default search does not. ``new`` inherits the old version's ``metadata["key"]`` and scopes (``user_id``,
        ``agent_id``, ``run_id``) where it sets none.

        A version held in several messages (an adapter's item stored as a head and its indexed parts): pass the
        old version's ids and the new version's messages as lists; every old one is closed, every new one stored,
        in the same one transaction; the first of each is the version's head (the links name it, the id returned
        is the new head's).

        NotFound when ``old_id`` is not stored; InvalidInput naming the current version when ``old_id`` is
        superseded already, and when ``new``'s ``valid_from`` is before the old version's."""
        olds = _ids(old_id)
        messages, closure = self._next_version(olds, new, reason)
        pending = self._prepare(messages, fresh_only=False)
        self._write_version(olds, pending, self._embed(pending.texts, TEXT), closure, reason)
        return messages[0].id

    async def asupersede(
        self, old_id: str | Sequence[str], new: Message | str | Sequence[Message], *, reason: str | None = None
    ) -> str:
        """Async twin of :meth:`supersede`."""
        olds = _ids(old_id)
        messages, closure = await self._off(self._next_version, olds, new, reason)
        pending = await self._off(self._prepare, messages, fresh_only=False)
        vectors = await self._aembed(pending.texts, TEXT)
        await self._off(self._write_version, olds, pending, vectors, closure, reason)
        return messages[0].id

    def supersede_batch(
        self,
        versions: Sequence[tuple[Sequence[str], Sequence[Message]]],
        *,
        vectors: Any = None,
        delete: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> builtins.list[str]:
        """Several supersessions, and first versions, in ONE transaction: each ``(old_ids, new_messages)`` pair is
        what :meth:`supersede` takes as lists (a pair whose ``old_ids`` is empty stores a first version); returns
        each pair's new head id. ``vectors``: one per new message, all pairs in order, as :meth:`replace_batch`
        takes them (``NO_VECTOR`` included); None embeds with the model. ``delete`` (a filter): the messages
        matching it are deleted first, in the same transaction. Everything is checked and embedded before
        anything is written, and a crash leaves all of it or none: for an adapter whose batch of keyed writes
        must land whole. NotFound / InvalidInput as :meth:`supersede`, for any pair (then nothing is written)."""
        tree = None
        if delete is not None:
            tree = checked_filters(delete)
            if tree is None:
                raise InvalidInput(
                    "supersede_batch's delete needs a non-empty filter; to delete every message use delete_all()"
                )
        closes: dict[str, tuple[str, float]] = {}  # old id -> (its new head's id, when it stops being valid)
        messages: builtins.list[Message] = []
        heads: builtins.list[str] = []
        for old_ids, new in versions:
            if not old_ids:
                given = [Message(m) if isinstance(m, str) else m for m in new]
                if not given:
                    raise InvalidInput("supersede_batch needs a new version to store in every pair")
                messages.extend(given)
                heads.append(given[0].id)
                continue
            olds = _ids(old_ids)
            linked, closure = self._next_version(olds, new, reason)
            closes.update((old, (linked[0].id, closure)) for old in olds)
            messages.extend(linked)
            heads.append(linked[0].id)
        listed, given_vectors = rowplan.given_vectors(messages, vectors, self._given_dim, self._model_dim)
        pending = self._prepare(listed, fresh_only=False)
        embedded = self._embed(rowplan.texts_to_embed(pending, given_vectors), TEXT)
        full = rowplan.with_given(pending, given_vectors, embedded)
        now = time.time()

        def close(old: Message) -> Message:
            new_id, closure = closes[old.id]
            return _closed(old, new_id, closure, now, reason)

        if not pending.messages:
            raise InvalidInput("supersede_batch needs a new version to store")
        with self._lock:
            backend = self._engine()
            backend.ensure_dim(full.shape[1])
            rows = rowplan.build_rows(pending, self.embedder.keys(pending.contents), full)
            backend.lifespan.supersede(list(closes), close, rows, self.settings.history_limit, delete=tree)
        return heads

    def versions(self, message_id: str) -> builtins.list[Message]:
        """Every stored version of the chain ``message_id`` belongs to, oldest first (one message when it was
        never superseded); NotFound when it is not stored. A version deleted since ends the chain there."""
        check_id(message_id)
        first = self._version(message_id)
        if first is None:
            raise NotFound(f"no message {message_id!r} in namespace {self.namespace!r}")
        chain, seen = [first], {first.id}
        while (back := chain[0].metadata.get(SUPERSEDES)) is not None and str(back) not in seen:
            older = self._version(str(back))
            if older is None:
                break
            chain.insert(0, older)
            seen.add(older.id)
        while (ahead := chain[-1].metadata.get(SUPERSEDED_BY)) is not None and str(ahead) not in seen:
            newer = self._version(str(ahead))
            if newer is None:
                break
            chain.append(newer)
            seen.add(newer.id)
        return chain

    def put(self, key: str, message: Message | str, *, reason: str | None = None) -> str:
        """Store ``message`` under ``key`` (kept as ``metadata["key"]``); returns its id. When a current version
        is stored under ``key``, the new one supersedes it (:meth:`supersede`): the old value stays, for
        ``as_of`` / ``known_at`` reads and :meth:`versions`, instead of being overwritten. Writers racing on a key
        each supersede the version before theirs."""
        _check_name(key, "key")
        given = Message(content=message) if isinstance(message, str) else message
        keyed = given.model_copy(update={"metadata": {**given.metadata, KEY: key}})
        for _ in range(_PUT_TRIES):
            current = self.current(key)
            if current is None:
                self.add_batch([keyed])
                return keyed.id
            try:
                return self.supersede(current.id, keyed, reason=reason)
            except InvalidInput as exc:
                if "superseded already" not in str(exc):
                    raise
        raise InvalidInput(f"key {key!r} changed {_PUT_TRIES} times while this put ran; put again")

    async def aput(self, key: str, message: Message | str, *, reason: str | None = None) -> str:
        """Async twin of :meth:`put`."""
        return await self._off(self.put, key, message, reason=reason)

    def current(self, key: str, *, as_of: Any = None, known_at: Any = None) -> Message | None:
        """The version stored under ``key`` that a read sees (now by default; ``as_of`` / ``known_at`` as in
        :meth:`search`), or None. Several visible (writes of a new key racing): the newest written."""
        _check_name(key, "key")
        page = self.list({f"metadata.{KEY}": key}, limit=10_000, as_of=as_of, known_at=known_at)
        found = page.messages
        while page.next_cursor is not None:
            page = self.list(
                {f"metadata.{KEY}": key}, limit=10_000, cursor=page.next_cursor, as_of=as_of, known_at=known_at
            )
            found.extend(page.messages)
        return found[-1] if found else None

    # -- helpers -------------------------------------------------------------------------------------------
    def _version(self, message_id: str) -> Message | None:
        with self._lock:
            body = self._engine().reads.body_of(message_id)
        return None if body is None else Message.load(body)

    def _next_version(
        self, olds: builtins.list[str], new: Message | str | Sequence[Message], reason: str | None
    ) -> tuple[builtins.list[Message], float]:
        """``new`` as the next version of ``olds`` (linked, with its valid_from) and the time the old one ends."""
        if reason is not None:
            _check_name(reason, "reason", 4096)
        given = [new] if isinstance(new, Message | str) else list(new)
        if not given:
            raise InvalidInput("supersede needs a new version to store")
        messages = [Message(m) if isinstance(m, str) else m for m in given]
        for message in messages:
            if not isinstance(message, Message):
                raise InvalidInput(f"supersede takes the new version as Messages or str, got {type(message).__name__}")
            if message.id in olds:
                raise InvalidInput(f"the new version needs ids of its own, not {message.id!r} (Message() makes one)")
        start = messages[0].metadata.get(VALID_FROM)
        closure = time.time() if start is None else instant(start, f"message {messages[0].id} metadata['valid_from']")
        head = self._version(olds[0])
        out = []
        for message in messages:
            meta = dict(message.metadata)
            meta.setdefault(VALID_FROM, closure)
            meta[SUPERSEDES] = olds[0]
            for inherited in (*SCOPES, KEY):  # a version of a user's memory is that user's, under the same key
                if head is not None and head.metadata.get(inherited) is not None and inherited not in meta:
                    meta[inherited] = head.metadata[inherited]
            out.append(message.model_copy(update={"metadata": meta}))
        return out, closure

    def _write_version(
        self, olds: builtins.list[str], pending: rowplan.Pending, vectors: Any, closure: float, reason: str | None
    ) -> None:
        if not pending.messages:
            raise InvalidInput("supersede needs a new version to store")
        new_id = pending.messages[0].id
        now = time.time()

        def close(old: Message) -> Message:
            return _closed(old, new_id, closure, now, reason)

        with self._lock:
            backend = self._engine()
            backend.ensure_dim(vectors.shape[1])
            rows = rowplan.build_rows(pending, self.embedder.keys(pending.contents), vectors)
            backend.lifespan.supersede(olds, close, rows, self.settings.history_limit)
