"""ltm as a drop-in for MetaGPT's memory: MetaGPT's names and call shapes over ltm's engine.

Import these instead of ``metagpt.memory.*`` (``pip install "/path/to/ltm[metagpt]"``, the checkout, into a
MetaGPT environment)::

    from ltm.integrations.metagpt import BrainMemory, LongTermMemory, Memory, MemoryStorage

They take and return ``metagpt.schema.Message`` objects (``UserMessage``, ``AIMessage``, ...); the conversion
to ltm's messages for the persistent store lives in one place, :mod:`ltm.integrations.metagpt.messages`.
Shapes follow MetaGPT 0.8.2: ``LongTermMemory.find_news`` and ``MemoryStorage.search_similar`` may be awaited
(MetaGPT's tests do) or called plainly (``Role._observe`` does): they return an :class:`AwaitableList`;
``BrainMemory.loads`` is a staticmethod coroutine. Cause strings are MetaGPT's own
(``metagpt.actions.add_requirement.UserRequirement``).

For roles that remember across restarts (and do not redo handled work) see :mod:`ltm.integrations.metagpt.role`
(``from ltm.integrations.metagpt.role import RememberingRole``; the older path ``ltm.integrations.metagpt.role``
still works).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from metagpt.schema import Message as MetaGPTMessage
from pydantic import Field

from ltm.brain import BrainMemory as _CoreBrainMemory
from ltm.config import Settings
from ltm.integrations.metagpt.messages import (
    METAGPT_USER_REQUIREMENT,
    AwaitableList,
    adapt_llm,
    metagpt_embedding,
    to_ltm,
    to_metagpt,
    to_metagpt_list,
)
from ltm.longterm import LongTermMemory as _CoreLongTermMemory
from ltm.memory import Memory as _CoreMemory
from ltm.store import MemoryStorage as _CoreMemoryStorage

__all__ = [
    "METAGPT_USER_REQUIREMENT",
    "AwaitableList",
    "BrainMemory",
    "LongTermMemory",
    "Memory",
    "MemoryStorage",
    "to_ltm",
    "to_metagpt",
]


class Memory(_CoreMemory):
    """MetaGPT's ``Memory`` over ltm's: holds ``metagpt.schema.Message`` objects as they are (no copy), so
    ``Memory(**memory.model_dump())`` and a role's JSON round-trip exactly as MetaGPT's do."""

    message_type = MetaGPTMessage

    storage: list[MetaGPTMessage] = Field(default_factory=list)  # type: ignore[assignment]
    index: dict[str, list[MetaGPTMessage]] = Field(default_factory=dict)  # type: ignore[assignment]


class MemoryStorage(_CoreMemoryStorage):
    """MetaGPT's ``MemoryStorage(mem_ttl, embedding)`` over ltm's store (SQLite + FAISS, durable per add).

    Without ``embedding`` it uses the one MetaGPT's own storage uses (``metagpt.utils.embedding.get_embedding``,
    from MetaGPT's config). ``search_similar`` returns stored messages whose cosine similarity to the message
    reaches ``similarity_threshold`` (ltm's setting): MetaGPT's "already seen"; it can be awaited or not.
    """

    def __init__(
        self,
        mem_ttl: int | None = None,
        embedding: Any = None,
        *,
        settings: Settings | None = None,
        kind: str = "role",
        similarity_threshold: float | None = None,
        namespace: str | None = None,
    ) -> None:
        self.mem_ttl = mem_ttl  # accepted for MetaGPT's signature; MetaGPT does not use it either
        super().__init__(
            namespace,
            kind=kind,
            settings=settings,
            embedding=embedding if embedding is not None else metagpt_embedding(),
            similarity_threshold=similarity_threshold,
        )

    def recover_memory(self, role_id: str) -> list[MetaGPTMessage]:  # type: ignore[override]
        """Open ``role_id``'s store; its recent messages, as MetaGPT messages, oldest first."""
        return to_metagpt_list(super().recover_memory(role_id))

    def add(self, message: Any) -> bool:
        """Store one message durably (committed on return); False when its id is already stored."""
        return super().add(to_ltm(message))

    def add_batch(self, messages: Iterable[Any], *, vectors: Any = None) -> int:
        """Store several messages in one transaction."""
        return super().add_batch([to_ltm(m) for m in _listed(messages)], vectors=vectors)

    async def aadd_batch(self, messages: Iterable[Any], *, vectors: Any = None) -> int:
        """Async twin of :meth:`add_batch`."""
        return await super().aadd_batch([to_ltm(m) for m in _listed(messages)], vectors=vectors)

    def search_similar(self, message: Any, k: int = 4) -> AwaitableList[MetaGPTMessage]:  # type: ignore[override]
        """Stored messages similar enough to count as seen (up to ``k``, best first); awaitable or not."""
        return to_metagpt_list(super().search_similar(_text(message), k))

    async def asearch_similar(self, message: Any, k: int = 4) -> list[MetaGPTMessage]:  # type: ignore[override]
        """Truly async twin of :meth:`search_similar` (the embedding call is awaited)."""
        return to_metagpt_list(await super().asearch_similar(_text(message), k))

    def recent(self, n: int) -> list[MetaGPTMessage]:  # type: ignore[override]
        """The ``n`` newest stored messages, oldest first."""
        return to_metagpt_list(super().recent(n))

    def get(self, message_id: str) -> MetaGPTMessage:  # type: ignore[override]
        """The stored message with this id (``NotFound`` otherwise)."""
        return to_metagpt(super().get(message_id))

    def delete(self, message_or_id: Any) -> bool:
        """Delete a message (or its id); False when it was not stored."""
        return super().delete(message_or_id if isinstance(message_or_id, str) else message_or_id.id)


class LongTermMemory(_CoreLongTermMemory):
    """MetaGPT's ``LongTermMemory``: a :class:`Memory` whose watched messages also go to a :class:`MemoryStorage`.

    ``recover_memory(role_id, rc)`` restores the role's recent messages; ``find_news`` is short-term news not
    similar to anything stored (awaitable or not; ``afind_news`` is the truly async twin).
    """

    message_type = MetaGPTMessage

    storage: list[MetaGPTMessage] = Field(default_factory=list)  # type: ignore[assignment]
    index: dict[str, list[MetaGPTMessage]] = Field(default_factory=dict)  # type: ignore[assignment]

    def _store(self) -> _CoreMemoryStorage:
        if self.memory_storage is None:
            self.memory_storage = MemoryStorage(settings=self.settings)
        return cast(_CoreMemoryStorage, self.memory_storage)  # the core field is Any (any StoreLike)

    def find_news(self, observed: list[Any], k: int = 0) -> AwaitableList[MetaGPTMessage]:  # type: ignore[override]
        """Observed messages new to short-term memory and not similar to a stored one; awaitable or not."""
        return AwaitableList(super().find_news(observed, k))


class BrainMemory(_CoreBrainMemory):
    """MetaGPT's ``BrainMemory``: ``loads`` is a staticmethod coroutine; talks may be MetaGPT messages."""

    def add_talk(self, msg: Any) -> None:
        """Add a user message."""
        super().add_talk(msg if isinstance(msg, str) else to_ltm(msg))

    def add_answer(self, msg: Any) -> None:
        """Add an assistant message."""
        super().add_answer(msg if isinstance(msg, str) else to_ltm(msg))

    def add_history(self, msg: Any) -> None:
        """Append a message unless it repeats the last one."""
        super().add_history(to_ltm(msg))

    def _llm(self, llm: Any) -> Any:
        return super()._llm(adapt_llm(llm))

    @staticmethod
    async def is_related(text1: str, text2: str, llm: Any = None) -> bool:
        """Whether ``text1`` is related to ``text2`` (``llm``: a MetaGPT LLM, an ltm one, or None: offline)."""
        return await _CoreBrainMemory.is_related(text1, text2, adapt_llm(llm))

    @staticmethod
    async def rewrite(sentence: str, context: str, llm: Any = None) -> str:
        """``sentence`` augmented with information from ``context``."""
        return await _CoreBrainMemory.rewrite(sentence, context, adapt_llm(llm))

    @staticmethod
    async def loads(redis_key: str, settings: Settings | None = None) -> BrainMemory:  # type: ignore[override]
        """The memory stored at ``redis_key`` (a fresh one bound to it when there is none)."""
        loaded = await _CoreBrainMemory.loads(BrainMemory(settings=settings), redis_key)  # type: ignore[call-arg]
        assert isinstance(loaded, BrainMemory)
        return loaded


def _listed(messages: Iterable[Any]) -> list[Any]:
    return [messages] if isinstance(messages, MetaGPTMessage) else list(messages)


def _text(message: Any) -> str:
    return message if isinstance(message, str) else str(to_ltm(message).content)
