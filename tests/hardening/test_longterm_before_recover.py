"""A watched message added before ``recover_memory`` is stored or refused, never lost."""

from __future__ import annotations

import pytest

from ltm import InvalidInput, LongTermMemory, MemoryStorage, Message, Settings


def test_a_watched_add_before_recover_is_refused(settings: Settings) -> None:
    watched = Message().cause_by
    memory = LongTermMemory(settings=settings, watch={watched})
    with pytest.raises(InvalidInput, match="recover_memory"):
        memory.add(Message("early"))
    with pytest.raises(InvalidInput, match="recover_memory"):
        memory.add_batch([Message("early too")])
    assert memory.count() == 0  # refused whole: not half in short-term memory
    assert memory.add(Message("not watched", cause_by="some.Other"))  # short-term only, as in MetaGPT


def test_a_watched_add_with_an_open_namespace_survives_a_restart(settings: Settings) -> None:
    watched = Message().cause_by
    memory = LongTermMemory(MemoryStorage("early", settings=settings), settings=settings, watch={watched})
    assert memory.add(Message("early but stored"))
    memory.memory_storage.close()
    again = LongTermMemory(settings=settings, watch={watched})
    assert [m.content for m in again.recover_memory("early")] == ["early but stored"]
