"""Roles and an environment for multi-agent use, routed the way MetaGPT routes messages.

A :class:`Role` watches a set of actions. The :class:`Environment` delivers a published message to every role
it is addressed to (``send_to`` names the role, or is ``<all>``) and the role stores it at once in its
:class:`~ltm.longterm.LongTermMemory` (a durable inbox). When the role has acted on a message and its answer is
published, the message is recorded as *handled* (a second namespace, ``role_id + "#handled"``, see
:class:`HandledLog`). "Seen" is not "handled": a role created again with the same id over the same storage
recovers its memory, queues the stored messages it never finished (the work a crash cut off) and acts on them,
while a handled message sent again (its id, or exactly its content, cause and sender) is old news. Handled is
identity, never similarity: two different documents written from one template look alike to an embedding
model and are still two pieces of work.
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

__all__ = ["HANDLED_SUFFIX", "Action", "Environment", "HandledLog", "ObserveReport", "Role", "identity_key"]

HANDLED_SUFFIX = "#handled"  # a role's handled messages live in the namespace role_id + this


def identity_key(message: Any) -> tuple[str, str, str]:
    """What makes two messages the same request: exactly the same content, cause and sender."""
    return (str(message.content), str(message.cause_by), str(message.sent_from))


class HandledLog:
    """The messages a role finished acting on, kept in ``role_id + "#handled"`` (a store of the role's kind).

    A message is handled when the log holds its id, or a message with exactly its content, ``cause_by`` and
    ``sent_from`` (the same request sent again gets a new id). The lookup is a filtered count in the store, so
    it loads no model and sees what other processes on the same namespace recorded.
    """

    def __init__(self, store: Any, role_id: str) -> None:
        self.store = store
        self.store.recover_memory(role_id + HANDLED_SUFFIX)

    def __contains__(self, message: Any) -> bool:
        if self.store.count() == 0:
            return False
        content, cause_by, sent_from = identity_key(message)
        same = {"OR": [{"id": message.id}, {"content": content, "cause_by": cause_by, "sent_from": sent_from}]}
        return bool(self.store.count(same) > 0)

    def add_batch(self, messages: Sequence[Any]) -> int:
        """Record ``messages`` as handled (durable on return)."""
        return int(self.store.add_batch(messages))

    def count(self) -> int:
        """How many handled messages are recorded."""
        return int(self.store.count())

    def clean(self) -> None:
        """Forget every handled message (deletes the namespace's data)."""
        self.store.clean()

    def close(self) -> None:
        self.store.close()


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
    old_news: list[Message] = field(default_factory=list)  # already handled (or repeated in the same look)


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
        self.memory = (
            memory
            if memory is not None
            else LongTermMemory(
                memory_storage=MemoryStorage(settings=self.settings, embedding=embedding), settings=self.settings
            )
        )
        self.recovered: list[Message] = self.memory.recover_memory(self.role_id, self) or []
        self.handled = HandledLog(MemoryStorage(settings=self.settings, embedding=embedding), self.role_id)
        # Received before a restart but never finished: queued again when the role joins an environment.
        self.interrupted: list[Message] = [m for m in self.recovered if self.is_receiver(m) and not self.is_handled(m)]
        self.resumed: list[Message] = []  # the interrupted messages an environment queued again
        self._pending: list[Message] = []
        self._acting: list[Message] = []
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

    def is_handled(self, message: Message) -> bool:
        """True when this role finished acting on ``message``: the same id, or the same request sent again
        (see :class:`HandledLog`); a message that only resembles a handled one is new work."""
        return message in self.handled

    def receive(self, message: Message) -> None:
        """Store a message delivered to this role now (durable: it survives a crash before the role runs);
        a handled message sent again is old news and is not stored again."""
        if not self.is_handled(message):
            self.memory.add(message)

    def observe(self, messages: Sequence[Message]) -> list[Message]:
        """Keep the messages meant for this role that it has not handled yet, remember them, and return them."""
        received = [m for m in messages if self.is_receiver(m)]
        news: list[Message] = []
        keys: set[tuple[str, str, str]] = set()
        for message in received:
            key = identity_key(message)
            if key in keys or self.is_handled(message):
                continue  # the same request twice in one look, or work already done
            keys.add(key)
            news.append(message)
        fresh_ids = {m.id for m in news}
        self.last_observed = ObserveReport(received, news, [m for m in received if m.id not in fresh_ids])
        self.memory.add_batch(news)
        self._pending.extend(news)
        return news

    def act(self) -> Message | None:
        """Run the role's action on the news not yet acted on; None when there is nothing to do.

        The news become handled only at :meth:`done`, once the answer is published.
        """
        if not self._pending:
            return None
        news, self._pending = self._pending, []
        self._acting.extend(news)
        if self.action is None:
            return None
        text = self.action.run(self, news, self.llm)
        out = Message(text, role=self.profile, cause_by=type(self.action), sent_from=self.name)
        self.memory.add(out)
        return out

    def done(self) -> None:
        """Record the messages acted on as handled (call after publishing the answer)."""
        acting, self._acting = self._acting, []
        if acting:
            self.handled.add_batch(acting)

    def publish(self, message: Message) -> None:
        """Send a message through the environment this role belongs to."""
        if self.env is None:
            raise RuntimeError(f"{self.role_id} is not in an Environment: call env.add_roles([...]) first")
        self.env.publish_message(message)

    def close(self) -> None:
        """Release the memory's stores."""
        if self.memory.memory_storage is not None:
            self.memory.memory_storage.close()
        self.handled.close()


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
            self._inbox.setdefault(role.name, []).extend(role.interrupted)  # resume cut-off work
            role.resumed, role.interrupted = role.interrupted, []

    def publish_message(self, message: Message) -> bool:
        """Deliver ``message`` to every role it is meant for; False when nobody receives it."""
        self.history.append(message)
        receivers = [role for role in self.roles.values() if role.is_receiver(message)]
        for role in receivers:
            role.receive(message)
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
                role.done()  # handled only now: the answer is in the receivers' stores
            if not moved and not any(self._inbox.values()):
                return round_no
        return max_rounds

    def _emit(self, event: str, role: Role, payload: Any) -> None:
        if self.on_event is not None:
            self.on_event(event, role, payload)

    def close(self) -> None:
        for role in self.roles.values():
            role.close()
