"""LongTermMemory: short-term :class:`~ltm.memory.Memory` plus a persistent :class:`~ltm.store.MemoryStorage`.

MetaGPT's meanings, with its faults fixed:

- ``recover_memory(role_id, rc)`` opens the role's namespace and restores its recent messages into
  short-term memory (``settings.recover_recent`` of them), not only the index;
- ``add`` stores a message in the namespace when its ``cause_by`` is watched (``rc.watch`` and/or
  ``watch=``), once: a message already stored (same id) adds no second vector. A watched message added
  before any namespace is open is refused with InvalidInput (it used to return True and be lost at
  the next restart); unwatched messages stay short-term only, as in MetaGPT;
- the store write happens before the short-term add, so a capacity eviction from short-term memory never
  loses a watched message, and bad input (e.g. empty content of a watched message) raises before anything
  changes;
- ``find_news`` is sync (a role's observe step calls it) with the twin ``afind_news``: short-term news,
  then one batched embedding call, dropping messages whose best cosine to the store reaches the threshold
  and near-duplicates of an earlier message in the same batch;
- ``delete`` and ``clear`` reach the store; ``persist`` only snapshots (adds are durable already).

The storage object, the role context and the settings are excluded from ``model_dump()``, so
``Memory(**ltm.model_dump())`` and ``LongTermMemory(**ltm.model_dump())`` round-trip the short-term part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, cast

import numpy as np
from pydantic import Field

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.memory import Memory
from ltm.message import Message, any_to_str_set
from ltm.store import MemoryHit, MemoryStorage, Mode

__all__ = ["LongTermMemory", "StoreLike"]


class StoreLike(Protocol):
    """What LongTermMemory needs of its store: :class:`MemoryStorage`, or ``ltm.client.RemoteStorage`` for a
    store behind ``ltm serve`` (a role switches by changing the line that builds its storage)."""

    namespace: str | None

    @property
    def is_initialized(self) -> bool: ...

    @property
    def threshold(self) -> float: ...

    def recover_memory(self, role_id: str) -> list[Message]: ...

    def add(self, message: Message) -> bool: ...

    def add_batch(self, messages: Iterable[Message]) -> int: ...

    def delete(self, message_or_id: Message | str) -> bool: ...

    def clean(self) -> None: ...

    def persist(self) -> None: ...

    def close(self) -> None: ...

    def count(self) -> int: ...

    def embed_texts(self, texts: list[str]) -> np.ndarray: ...

    async def aembed_texts(self, texts: list[str]) -> np.ndarray: ...

    def best_similarities(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray: ...

    # mode: Any, so a store may narrow it to its Literal of modes
    def search(
        self, query: str, k: int = 10, *, mode: Any = "hybrid", filters: Mapping[str, Any] | None = None
    ) -> list[MemoryHit]: ...

    async def asearch(
        self, query: str, k: int = 10, *, mode: Any = "hybrid", filters: Mapping[str, Any] | None = None
    ) -> list[MemoryHit]: ...


class LongTermMemory(Memory):
    """A role's memory across restarts: watched actions go to a persistent namespace as well as RAM."""

    # Any for pydantic (a Protocol cannot be checked without touching a remote store); typed by _store().
    memory_storage: Any = Field(default=None, exclude=True, repr=False, description="A StoreLike or None.")
    rc: Any = Field(default=None, exclude=True, repr=False)
    watch: set[str] = Field(default_factory=set, description="cause_by strings stored long-term (besides rc.watch).")
    msg_from_recover: bool = Field(default=False, exclude=True)
    settings: Settings | None = Field(default=None, exclude=True, repr=False)

    def __init__(
        self, memory_storage: StoreLike | None = None, *, settings: Settings | None = None, **memory_fields: Any
    ) -> None:
        if settings is not None and settings.short_term_capacity and "capacity" not in memory_fields:
            memory_fields["capacity"] = settings.short_term_capacity
        memory_fields.update(memory_storage=memory_storage, settings=settings)
        super().__init__(**memory_fields)

    # -- the store ---------------------------------------------------------------------------------------
    @property
    def storage_ready(self) -> bool:
        """True once a namespace is open (after ``recover_memory``)."""
        return self.memory_storage is not None and self.memory_storage.is_initialized

    def _store(self) -> StoreLike:
        if self.memory_storage is None:
            self.memory_storage = MemoryStorage(settings=self.settings or Settings.load())
        return cast(StoreLike, self.memory_storage)

    def watching(self) -> set[str]:
        """The cause_by strings stored long-term: ``watch`` plus the role context's ``watch`` (read live)."""
        watched = set(self.watch)
        if self.rc is not None:
            watched |= any_to_str_set(getattr(self.rc, "watch", None) or ())
        return watched

    def recover_memory(self, role_id: str, rc: Any = None, *, watch: Iterable[Any] | None = None) -> list[Message]:
        """Open ``role_id``'s namespace and put its recent messages back into short-term memory.

        ``rc`` is any object with a ``watch`` set of actions (classes or strings), as MetaGPT's RoleContext;
        ``watch`` adds more. Returns the restored messages, oldest first.
        """
        if rc is not None:
            self.rc = rc
        if watch is not None:
            self.watch |= any_to_str_set(list(watch))
        messages = self._store().recover_memory(role_id)
        self.msg_from_recover = True
        try:
            Memory.add_batch(self, messages)  # already stored: short-term only
        finally:
            self.msg_from_recover = False
        return messages

    # -- writing -----------------------------------------------------------------------------------------
    def add(self, message: Message) -> bool:
        """Add to short-term memory and, when its cause_by is watched, to the store (once)."""
        if self._to_store([message]):
            self._store().add(message)
        return super().add(message)

    def add_batch(self, messages: Iterable[Message]) -> int:
        """Add several; the watched ones are stored in one transaction first."""
        batch = list(messages)
        watched = self._to_store(batch)
        if watched:
            self._store().add_batch(watched)
        return super().add_batch(batch)

    def _to_store(self, messages: list[Message]) -> list[Message]:
        """The watched messages among ``messages``; InvalidInput (nothing added) when there are some but no
        namespace is open."""
        if self.msg_from_recover:
            return []
        watching = self.watching()
        watched = [m for m in messages if isinstance(m, self.message_type) and m.cause_by in watching]
        if watched and not self.storage_ready:
            raise InvalidInput(
                f"message {watched[0].id} is caused by a watched action but no namespace is open, so it would "
                "be lost at the next restart: call recover_memory(role_id) first, or pass "
                "LongTermMemory(MemoryStorage(namespace))"
            )
        return watched

    def delete(self, message: Message) -> bool:
        """Remove from short-term memory and from the store; True when either held it."""
        short = super().delete(message)
        stored = self._store().delete(message) if self.storage_ready else False
        return short or stored

    def clear(self) -> None:
        """Forget everything: short-term memory and the namespace's data on disk. A recovered memory keeps
        its (now empty) namespace open, so later watched messages are stored again."""
        super().clear()
        store = self.memory_storage
        if store is not None and store.namespace is not None:
            was_open = store.is_initialized
            store.clean()
            if was_open:
                store.recover_memory(store.namespace)

    def persist(self) -> None:
        """Snapshot the store's index now (every add is durable already)."""
        if self.storage_ready:
            self._store().persist()

    # -- reading -----------------------------------------------------------------------------------------
    def find_news(self, observed: list[Message], k: int = 0) -> list[Message]:
        """Observed messages that are new to short-term memory and not similar to anything stored that is valid
        now: one equal to a superseded version is news again (docs/time.md)."""
        news, texts = self._candidates(observed, k)
        if not texts:
            return news
        return self._drop_seen(news, self._store().embed_texts(texts))

    async def afind_news(self, observed: list[Message], k: int = 0) -> list[Message]:
        """Async twin of :meth:`find_news` (the embedding call is awaited)."""
        news, texts = self._candidates(observed, k)
        if not texts:
            return news
        return self._drop_seen(news, await self._store().aembed_texts(texts))

    def _candidates(self, observed: list[Message], k: int) -> tuple[list[Message], list[str]]:
        news = super().find_news(observed, k)
        if not news or not self.storage_ready:
            return news, []
        return news, [m.content for m in news if m.content.strip()]

    def _drop_seen(self, news: list[Message], vectors: np.ndarray) -> list[Message]:
        threshold = self._store().threshold
        texts = [m.content for m in news if m.content.strip()]  # the rows of ``vectors``, in order
        best = self._store().best_similarities(vectors, texts)
        kept: list[Message] = []
        kept_vectors: list[np.ndarray] = []
        row = 0
        for message in news:
            if not message.content.strip():  # nothing to compare: it is news
                kept.append(message)
                continue
            vector, score = vectors[row], float(best[row])
            row += 1
            if score >= threshold:
                continue
            if kept_vectors and float(np.max(np.stack(kept_vectors) @ vector)) >= threshold:
                continue  # a near-duplicate of an earlier message in this batch
            kept.append(message)
            kept_vectors.append(vector)
        return kept

    def search(self, query: str, k: int = 10, *, mode: Mode = "hybrid", **filters: Any) -> list[MemoryHit]:
        """Search the store (see :meth:`MemoryStorage.search`); filters as keyword arguments."""
        return self._store().search(query, k, mode=mode, filters=filters or None)

    async def asearch(self, query: str, k: int = 10, *, mode: Mode = "hybrid", **filters: Any) -> list[MemoryHit]:
        """Async twin of :meth:`search`."""
        return await self._store().asearch(query, k, mode=mode, filters=filters or None)
