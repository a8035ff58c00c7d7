"""Short-term memory: the in-RAM list of messages a role has seen, indexed by ``cause_by``.

MetaGPT's API and meanings, with its faults fixed: the duplicate check is O(1) (a set of keys, not a list
scan), caller-owned messages are never mutated, ``get_by_action`` returns a copy and never inserts keys,
deleting an absent message returns False, a negative ``k`` is an error, and an optional ``capacity`` evicts
the oldest messages through an ``on_evict`` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ltm.errors import InvalidInput
from ltm.message import Message, any_to_str, any_to_str_set

__all__ = ["Memory"]

EvictCallback = Callable[[list[Message]], None]


class Memory(BaseModel):
    """The most basic memory: an ordered list of messages and an index by the action that caused them."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # What this memory holds. An adapter (ltm.integrations.metagpt) narrows it to its framework's message class
    # and redeclares ``storage``/``index`` with that type: the logic only reads id, role, cause_by and content.
    message_type: ClassVar[type[BaseModel]] = Message

    storage: list[Message] = Field(default_factory=list)
    index: dict[str, list[Message]] = Field(default_factory=dict)
    ignore_id: bool = False
    capacity: int | None = Field(default=None, ge=1, description="Keep at most this many; evict oldest.")
    on_evict: EvictCallback | None = Field(default=None, exclude=True, repr=False)

    _keys: set[Hashable] = PrivateAttr(default_factory=set)

    def model_post_init(self, context: Any, /) -> None:
        # The index is derived state: rebuild it from storage so both always hold the same objects.
        messages, self.storage = self.storage, []
        self.index = {}
        self._keys = set()
        self.add_batch(messages)

    # -- keys -------------------------------------------------------------------------------------------
    def _key(self, message: Message) -> Hashable:
        if self.ignore_id:
            return (message.role, message.cause_by, message.content)
        return message.id

    # -- writing ----------------------------------------------------------------------------------------
    def add(self, message: Message) -> bool:
        """Add a message unless it is already stored; True when it was added."""
        added = self._append(message)
        if added:
            self._evict()
        return added

    def add_batch(self, messages: Iterable[Message]) -> int:
        """Add several messages; returns how many were new."""
        added = sum(1 for m in messages if self._append(m))
        if added:
            self._evict()
        return added

    def _append(self, message: Message) -> bool:
        if not isinstance(message, self.message_type):
            kind = self.message_type
            raise InvalidInput(
                f"{type(self).__name__} holds {kind.__module__}.{kind.__name__} objects, got "
                f"{type(message).__module__}.{type(message).__name__}; wrap it: {kind.__name__}(...)"
            )
        key = self._key(message)
        if key in self._keys:
            return False
        self._keys.add(key)
        self.storage.append(message)
        self.index.setdefault(message.cause_by, []).append(message)
        return True

    def _evict(self) -> None:
        if self.capacity is None or len(self.storage) <= self.capacity:
            return
        excess = len(self.storage) - self.capacity
        evicted, self.storage = self.storage[:excess], self.storage[excess:]
        for message in evicted:
            self._unindex(message)
        if self.on_evict is not None:
            self.on_evict(evicted)

    def _unindex(self, message: Message) -> None:
        key = self._key(message)
        self._keys.discard(key)
        bucket = self.index.get(message.cause_by)
        if bucket is None:
            return
        for i in range(len(bucket) - 1, -1, -1):
            if self._key(bucket[i]) == key:
                del bucket[i]
                break
        if not bucket:
            del self.index[message.cause_by]

    def delete_newest(self) -> Message | None:
        """Remove and return the newest message, or None when empty."""
        if not self.storage:
            return None
        newest = self.storage.pop()
        self._unindex(newest)
        return newest

    def delete(self, message: Message) -> bool:
        """Remove a message (matched by id, or by role + cause_by + content under ``ignore_id``).

        Returns False when it is not stored, instead of raising.
        """
        key = self._key(message)
        if key not in self._keys:
            return False
        for i in range(len(self.storage) - 1, -1, -1):
            if self._key(self.storage[i]) == key:
                stored = self.storage.pop(i)
                self._unindex(stored)
                return True
        return False  # pragma: no cover - _keys and storage agree by construction

    def clear(self) -> None:
        """Forget everything."""
        self.storage = []
        self.index = {}
        self._keys = set()

    # -- reading ----------------------------------------------------------------------------------------
    def count(self) -> int:
        """How many messages are stored."""
        return len(self.storage)

    def __len__(self) -> int:
        return len(self.storage)

    def __contains__(self, message: object) -> bool:
        return isinstance(message, self.message_type) and self._key(cast(Message, message)) in self._keys

    def get_by_role(self, role: str) -> list[Message]:
        """Messages of a role, oldest first."""
        return [m for m in self.storage if m.role == role]

    def get_by_content(self, content: str) -> list[Message]:
        """Messages whose content contains ``content``."""
        return [m for m in self.storage if content in m.content]

    def try_remember(self, keyword: str) -> list[Message]:
        """Messages whose content contains ``keyword`` (MetaGPT's name for ``get_by_content``)."""
        return self.get_by_content(keyword)

    def get(self, k: int = 0) -> list[Message]:
        """The newest ``k`` messages (all of them when ``k`` is 0), oldest first."""
        _check_k(k)
        return list(self.storage[-k:]) if k else list(self.storage)

    def find_news(self, observed: list[Message], k: int = 0) -> list[Message]:
        """Observed messages not among the newest ``k`` stored (all stored when 0), in their order.

        Nothing is added.
        """
        if isinstance(observed, str | bytes | self.message_type) or not isinstance(observed, Iterable):
            raise InvalidInput(f"find_news takes a list of Message objects, got {type(observed).__name__}")
        observed = list(observed)
        if not all(isinstance(m, self.message_type) for m in observed):
            raise InvalidInput("find_news takes a list of Message objects; wrap text in Message(...)")
        seen = {self._key(m) for m in self.get(k)} if k else self._keys
        return [m for m in observed if self._key(m) not in seen]

    def get_by_action(self, action: Any) -> list[Message]:
        """Messages caused by ``action`` (a class, an instance or its string); a copy, never a key insert."""
        return list(self.index.get(any_to_str(action), ()))

    def get_by_actions(self, actions: Iterable[Any]) -> list[Message]:
        """Messages caused by any of ``actions``, oldest first."""
        wanted = any_to_str_set(actions)
        if len(wanted) == 1:
            return self.get_by_action(next(iter(wanted)))
        return [m for m in self.storage if m.cause_by in wanted]

    def get_by_position(self, position: int) -> Message | None:
        """The message at ``position`` (negative counts from the end), or None when out of range."""
        try:
            return self.storage[position]
        except IndexError:
            return None


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise InvalidInput(f"k must be an int >= 0 (0 means all), got {k!r}")
