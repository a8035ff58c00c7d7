"""MetaGPT roles that remember across restarts and never mistake "seen" for "handled".

Use :class:`RememberingRole` as the first base of a role (``class Architect(RememberingRole, Role)``). Its
``rc`` is an :class:`LtmRoleContext`, whose ``memory`` is ltm's :class:`LongTermMemory`, so ``model_dump_json``
and ``Team.serialize``/``Team.deserialize`` give back ltm memory. The role's store is the namespace
``role_id`` (default ``"name(profile)"``) under ltm's settings (``LTM_STORAGE_DIR``).

What it adds to MetaGPT's loop, all durable (each write is committed before the call returns):

- **inbox**: a message put in the role's buffer whose cause is watched is stored at once, so a message another
  role published survives a kill before this role ran;
- **handled**: after ``run`` has acted on its news and published the answer, those news are recorded in a
  second namespace (``role_id + "#handled"``, an :class:`ltm.agents.HandledLog`);
- **after a restart**: the first look at the role restores its memory and queues every stored watched
  message that is not handled (the work a crash cut off), so the role is not idle and acts on them;
- **old news**: a handled message sent again (its id, or exactly its content, cause and sender) is dropped
  when it arrives, so it is neither stored again nor acted on. Handled is identity, not similarity: a new
  message that only looks like a handled one (two PRDs from one template) is new work. MetaGPT's own
  ``find_news`` stays similarity-based.
"""

from __future__ import annotations

from typing import Any

from metagpt.roles.role import RoleContext
from metagpt.schema import Message as MetaGPTMessage
from pydantic import BaseModel, Field, PrivateAttr

from ltm.agents import HandledLog, identity_key
from ltm.integrations.metagpt import LongTermMemory, MemoryStorage

__all__ = ["LtmRoleContext", "RememberingRole"]


class LtmRoleContext(RoleContext):  # type: ignore[misc]
    """MetaGPT's RoleContext with ltm's LongTermMemory as ``memory`` (declared, so it survives serialization)."""

    memory: LongTermMemory = Field(default_factory=LongTermMemory)  # type: ignore[assignment]


class RememberingRole(BaseModel):
    """Mixin for a MetaGPT ``Role``: persistent memory, crash recovery, and no rework of handled messages."""

    rc: LtmRoleContext = Field(default_factory=LtmRoleContext)

    _ltm_ready: bool = PrivateAttr(default=False)
    _ltm_pending: list[MetaGPTMessage] = PrivateAttr(default_factory=list)
    _ltm_handled: HandledLog | None = PrivateAttr(default=None)
    _ltm_acting_on: list[MetaGPTMessage] = PrivateAttr(default_factory=list)

    @property
    def memory_id(self) -> str:
        """The namespace of this role's store."""
        role: Any = self
        return str(role.role_id or f"{role.name}({role.profile})")

    def _ltm_start(self) -> None:
        """Open the stores once (lazily: a role's watch list is set after pydantic validation)."""
        if self._ltm_ready:
            return
        self._ltm_ready = True
        memory = self.rc.memory
        short_term = list(memory.storage)  # from a deserialized role: restored again after recovery
        recovered = memory.recover_memory(self.memory_id, self.rc)
        memory.add_batch(short_term)
        store = memory.memory_storage
        assert isinstance(store, MemoryStorage)
        self._ltm_handled = HandledLog(
            MemoryStorage(embedding=store._embedding, settings=store.settings, similarity_threshold=store.threshold),
            self.memory_id,
        )
        watched = memory.watching()
        self._ltm_pending = [m for m in recovered if m.cause_by in watched and not self.is_handled(m)]

    def is_handled(self, message: MetaGPTMessage) -> bool:
        """True when this role finished acting on ``message``: the same id, or the same request sent again
        (exactly its content, cause and sender); a message that only resembles a handled one is new work."""
        self._ltm_start()
        assert self._ltm_handled is not None
        return message in self._ltm_handled

    # -- MetaGPT's hooks -------------------------------------------------------------------------------------
    def put_message(self, message: Any) -> None:
        self._ltm_start()
        if message and self.is_handled(message):
            return  # old news: MetaGPT's _observe would store it again (a new id) before any filter ran
        super().put_message(message)  # type: ignore[misc]
        memory = self.rc.memory
        if message and message.cause_by in memory.watching() and memory.storage_ready:
            memory.memory_storage.add(message)  # type: ignore[union-attr]  # the durable inbox

    async def _observe(self, ignore_memory: bool = False) -> int:
        self._ltm_start()
        await super()._observe(ignore_memory)  # type: ignore[misc]
        news: list[MetaGPTMessage] = []
        keys: set[tuple[str, str, str]] = set()
        for message in [*self._ltm_pending, *self.rc.news]:
            key = identity_key(message)
            if key in keys or self.is_handled(message):
                continue  # the same request twice in one look, or work already done
            keys.add(key)
            news.append(message)
        self._ltm_pending = []
        self.rc.news = news
        self._ltm_acting_on = list(news)
        self.latest_observed_msg = news[-1] if news else None  # type: ignore[attr-defined]
        return len(news)

    async def run(self, with_message: Any = None) -> MetaGPTMessage | None:
        self._ltm_start()
        self._ltm_acting_on = []
        answer: MetaGPTMessage | None = await super().run(with_message)  # type: ignore[misc]
        if self._ltm_acting_on and self._ltm_handled is not None:
            # Only now: the answer is published (and stored in the receivers' inboxes).
            self._ltm_handled.add_batch(self._ltm_acting_on)
            self._ltm_acting_on = []
        return answer

    @property
    def is_idle(self) -> bool:
        self._ltm_start()
        return bool(super().is_idle) and not self._ltm_pending  # type: ignore[misc]
