"""Roles and an environment for multi-agent use, routed the way MetaGPT routes messages.

A :class:`Role` watches a set of actions. The :class:`Environment` delivers a published message to every role
it is addressed to (``send_to`` names the role, or is ``<all>``); the role keeps what it watches or what names
it directly, asks its :class:`~ltm.longterm.LongTermMemory` which of those are news (not already seen, by
similarity to its long-term store), remembers them, and acts on the news. A role created again with the same
id over the same storage recovers its memory, so a requirement it already handled is old news.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ltm.config import Settings
from ltm.llm.base import LLM
from ltm.longterm import LongTermMemory
from ltm.message import MESSAGE_ROUTE_TO_ALL, Message, any_to_str, any_to_str_set
from ltm.store import MemoryStorage

__all__ = ["Action", "Environment", "ObserveReport", "Role"]


class Action:
    """One step of work: turns the news a role received into the text of its output message.

    Subclass it and override :meth:`template` (deterministic) and, optionally, :meth:`prompt` (used when the
    role has an LLM). The class itself is the ``cause_by`` of the message it produces.
    """

    def prompt(self, role: Role, news: Sequence[Message]) -> str:
        joined = "\n".join(f"- {m.content}" for m in news)
        return f"You are {role.name}, the {role.profile}. Act on these messages:\n{joined}"

    def template(self, role: Role, news: Sequence[Message]) -> str:
        return f"{role.profile} {role.name} handled: " + "; ".join(m.content for m in news)

    def run(self, role: Role, news: Sequence[Message], llm: LLM | None = None) -> str:
        """The output text: the LLM's answer when there is one, else the template."""
        return llm.ask(self.prompt(role, news)) if llm is not None else self.template(role, news)


@dataclass
class ObserveReport:
    """What one ``observe`` call did, for display and tests."""

    received: list[Message] = field(default_factory=list)
    news: list[Message] = field(default_factory=list)
    old_news: list[Message] = field(default_factory=list)


class Role:
    """An agent with a name, a profile, the actions it watches, one action it performs, and a long-term memory.

    ``role_id`` (default ``"name(profile)"``, MetaGPT's form) names its memory namespace; a new ``Role`` with
    the same id over the same ``settings.storage_dir`` recovers what the old one remembered.
    """

    def __init__(
        self,
        name: str,
        profile: str,
        *,
        watch: Iterable[Any],
        action: Action | None = None,
        settings: Settings | None = None,
        memory: LongTermMemory | None = None,
        llm: LLM | None = None,
        role_id: str | None = None,
        embedding: Any = None,
    ) -> None:
        self.name = name
        self.profile = profile
        self.role_id = role_id or f"{name}({profile})"
        self.watch: set[str] = any_to_str_set(list(watch))
        self.action = action
        self.llm = llm
        self.env: Environment | None = None
        self.settings = settings or Settings.load()
        # "is None", not "or": an empty memory is falsy (it has a length) and a caller's memory must be kept
        self.memory = memory if memory is not None else LongTermMemory(
            memory_storage=MemoryStorage(settings=self.settings, embedding=embedding), settings=self.settings
        )
        self.recovered: list[Message] = self.memory.recover_memory(self.role_id, self) or []
        self._pending: list[Message] = []
        self.last_observed = ObserveReport()

    def __repr__(self) -> str:
        return f"Role({self.role_id!r}, watch={sorted(self.watch)})"

    @property
    def addresses(self) -> set[str]:
        """The names a message's ``send_to`` may use to reach this role."""
        return {self.name, self.role_id, any_to_str(self)}

    def is_receiver(self, message: Message) -> bool:
        """Addressed to this role (by name or to all) and either watched or naming this role directly."""
        named = bool(message.send_to & self.addresses)
        addressed = named or MESSAGE_ROUTE_TO_ALL in message.send_to
        return addressed and message.sent_from != self.name and (named or message.cause_by in self.watch)

    def observe(self, messages: Sequence[Message]) -> list[Message]:
        """Keep the messages meant for this role that are news, remember them, and return them."""
        received = [m for m in messages if self.is_receiver(m)]
        news = self.memory.find_news(received) if received else []
        fresh_ids = {m.id for m in news}
        self.last_observed = ObserveReport(received, news, [m for m in received if m.id not in fresh_ids])
        for message in news:
            self.memory.add(message)
        self._pending.extend(news)
        return news

    def act(self) -> Message | None:
        """Run the role's action on the news not yet acted on; None when there is nothing to do."""
        if self.action is None or not self._pending:
            return None
        news, self._pending = self._pending, []
        text = self.action.run(self, news, self.llm)
        out = Message(text, role=self.profile, cause_by=type(self.action), sent_from=self.name)
        self.memory.add(out)
        return out

    def publish(self, message: Message) -> None:
        """Send a message through the environment this role belongs to."""
        if self.env is None:
            raise RuntimeError(f"{self.role_id} is not in an Environment: call env.add_roles([...]) first")
        self.env.publish_message(message)

    def close(self) -> None:
        """Release the memory's store."""
        if self.memory.memory_storage is not None:
            self.memory.memory_storage.close()


class Environment:
    """Routes messages between roles and runs them until the team goes quiet."""

    def __init__(self, roles: Iterable[Role] = (), *, on_event: Callable[[str, Role, Any], None] | None = None):
        self.roles: dict[str, Role] = {}
        self.history: list[Message] = []
        self._inbox: dict[str, list[Message]] = {}
        self.on_event = on_event
        self.add_roles(roles)

    def add_roles(self, roles: Iterable[Role]) -> None:
        for role in roles:
            role.env = self
            self.roles[role.name] = role
            self._inbox.setdefault(role.name, [])

    def publish_message(self, message: Message) -> bool:
        """Deliver ``message`` to every role it is meant for; False when nobody receives it."""
        self.history.append(message)
        receivers = [role for role in self.roles.values() if role.is_receiver(message)]
        for role in receivers:
            self._inbox[role.name].append(message)
        return bool(receivers)

    def run(self, max_rounds: int = 10) -> int:
        """Let each role observe its inbox and act, round after round, until nothing moves; rounds run."""
        for round_no in range(1, max_rounds + 1):
            moved = False
            for role in list(self.roles.values()):
                inbox, self._inbox[role.name] = self._inbox[role.name], []
                if not inbox:
                    continue
                role.observe(inbox)
                self._emit("observed", role, role.last_observed)
                out = role.act()
                if out is not None:
                    self._emit("acted", role, out)
                    self.publish_message(out)
                    moved = True
            if not moved and not any(self._inbox.values()):
                return round_no
        return max_rounds

    def _emit(self, event: str, role: Role, payload: Any) -> None:
        if self.on_event is not None:
            self.on_event(event, role, payload)

    def close(self) -> None:
        for role in self.roles.values():
            role.close()
