"""MetaGPT 0.8.2's memory tests, re-stated in ltm's words (shared/METAGPT_COMPAT.md, "The tests to port") and run
against the real MetaGPT with ltm.integrations.metagpt: MetaGPT's messages, actions, ActionNode models and
RoleContext, ltm's memory classes. scripts/frameworks/metagpt also runs MetaGPT's own files when it can get them
(METAGPT_GIT); their PyPI sdist holds no tests, so this port is what runs everywhere (CI included).

Same fixture as MetaGPT's: seven texts, 0 1 4 5 on one vector and 2 3 6 on another orthogonal one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("metagpt")

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from metagpt.actions import UserRequirement, WritePRD  # noqa: E402
from metagpt.actions.action_node import ActionNode  # noqa: E402
from metagpt.actions.design_api import WriteDesign  # noqa: E402
from metagpt.roles.role import RoleContext  # noqa: E402
from metagpt.schema import AIMessage, Message, UserMessage  # noqa: E402
from metagpt.utils.common import any_to_str  # noqa: E402

from ltm.config import Settings  # noqa: E402
from ltm.integrations.metagpt import BrainMemory, LongTermMemory, Memory, MemoryStorage, to_ltm, to_metagpt  # noqa: E402

TEXTS = [
    "Write a cli snake game",
    "Write a game of cli snake",
    "Write a 2048 web game",
    "Write a Battle City",
    "The user has requested the creation of a command-line interface (CLI) snake game",
    "The request is command-line interface (CLI) snake game",
    "Incorporate basic features of a snake game such as scoring and increasing difficulty",
]
_GROUP = {0: 0, 1: 0, 4: 0, 5: 0, 2: 1, 3: 1, 6: 1}


class SevenTexts(BaseEmbedding):
    """The fixture's embedding: one of two orthogonal vectors per known text."""

    @classmethod
    def class_name(cls) -> str:
        return "SevenTexts"

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * 8
        vector[_GROUP[TEXTS.index(text)]] = 1.0
        return vector

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


@pytest.fixture
def store_settings(tmp_path: Path) -> Settings:
    return Settings(storage_dir=tmp_path / "ltm", embedding="hash")


def _storage(settings: Settings) -> MemoryStorage:
    return MemoryStorage(embedding=SevenTexts(model_name="seven-texts"), settings=settings)


def _model(name: str, mapping: dict[str, Any]) -> Any:
    return ActionNode.create_model_class(name, mapping)


def test_short_term_memory() -> None:
    memory = Memory()
    m1, m2, m3 = (Message(content=f"test message{i}", role=r) for i, r in ((1, "user1"), (2, "user2"), (3, "user1")))
    memory.add(m1)
    assert memory.count() == 1
    memory.delete_newest()
    assert memory.count() == 0
    memory.add_batch([m1, m2])
    assert memory.count() == 2 and len(memory.index[m1.cause_by]) == 2
    assert memory.get_by_role("user1")[0] is m1
    assert len(memory.get_by_content("test message")) == 2
    assert len(memory.get_by_action(UserRequirement)) == 2
    assert len(memory.get_by_actions({UserRequirement})) == 2
    assert len(memory.try_remember("test message")) == 2
    assert len(memory.get(k=1)) == 1 and len(memory.get(k=5)) == 2
    assert memory.find_news([m3]) == [m3]
    memory.delete(m1)
    assert memory.count() == 1 and memory.get_by_role("user2")[0] is m2
    memory.clear()
    assert memory.count() == 0 and len(memory.index) == 0


@pytest.mark.asyncio
async def test_storage_plain_message(store_settings: Settings) -> None:
    storage = _storage(store_settings)
    storage.recover_memory("UTUser1(Product Manager)")
    storage.add(Message(role="User", content=TEXTS[0], cause_by=UserRequirement))
    assert storage.is_initialized is True
    assert len(await storage.search_similar(Message(role="User", content=TEXTS[1], cause_by=UserRequirement))) == 1
    assert len(await storage.search_similar(Message(role="User", content=TEXTS[2], cause_by=UserRequirement))) == 0
    assert len(storage.search_similar(Message(content=TEXTS[1]))) == 1  # also without await (Role code is sync)
    storage.clean()
    assert storage.is_initialized is False


@pytest.mark.asyncio
async def test_storage_structured_message(store_settings: Settings) -> None:
    prd = _model("prd", {"field1": (str, ...), "field2": (list[str], ...)})
    data = {"field1": "field1 value", "field2": ["field2 value1", "field2 value2"]}
    storage = _storage(store_settings)
    storage.recover_memory("UTUser2(Architect)")
    storage.add(Message(content=TEXTS[4], instruct_content=prd(**data), role="user", cause_by=WritePRD))
    assert storage.is_initialized is True
    found = await storage.search_similar(Message(content=TEXTS[5], instruct_content=prd(**data), cause_by=WritePRD))
    assert len(found) == 1
    assert found[0].instruct_content.model_dump() == data  # the structured payload survives the store
    assert found[0].cause_by == any_to_str(WritePRD)
    assert len(await storage.search_similar(Message(content=TEXTS[6], cause_by=WritePRD))) == 0
    storage.clean()
    assert storage.is_initialized is False


@pytest.mark.asyncio
async def test_long_term_memory(store_settings: Settings) -> None:
    rc = RoleContext(watch={"metagpt.actions.add_requirement.UserRequirement"})
    ltm = LongTermMemory(memory_storage=_storage(store_settings))
    ltm.recover_memory("UTUserLtm(Product Manager)", rc)
    first, similar, new = (Message(role="User", content=TEXTS[i], cause_by=UserRequirement) for i in (0, 1, 2))
    assert len(await ltm.find_news([first])) == 1
    ltm.add(first)
    assert len(await ltm.find_news([similar])) == 0
    assert ltm.find_news([similar]) == []  # the sync call MetaGPT's Role._observe makes
    ltm.add(similar)
    assert len(await ltm.find_news([new])) == 1
    ltm.add(new)
    ltm.clear()
    assert ltm.count() == 0


@pytest.mark.asyncio
async def test_brain_memory(store_settings: Settings) -> None:
    memory = BrainMemory(settings=store_settings)  # type: ignore[call-arg]
    memory.add_talk(Message(content="talk"))
    assert memory.history[0].role == "user"
    memory.add_answer(Message(content="answer"))
    assert memory.history[1].role == "assistant"
    key = BrainMemory.to_redis_key("none", "user_id", "chat_id")
    await memory.dumps(redis_key=key)
    assert memory.exists("talk") and memory.to_int("1", 0) == 1
    memory.last_talk = "AAA"
    assert memory.pop_last_talk() == "AAA" and memory.last_talk is None
    assert memory.is_history_available and memory.history_text
    loaded = await BrainMemory.loads(redis_key=key, settings=store_settings)  # on the class, as MetaGPT calls it
    assert isinstance(loaded, BrainMemory) and [m.content for m in loaded.history] == ["talk", "answer"]


@pytest.mark.parametrize(
    ("text", "tag", "value"),
    [
        ("[TALK]:Hello", "TALK", "Hello"),
        ("Hello", None, "Hello"),
        ("[TALK]Hello", None, "[TALK]Hello"),
    ],
)
def test_extract_info(text: str, tag: str | None, value: str) -> None:
    assert BrainMemory.extract_info(text) == (tag, value)


def _two_messages() -> tuple[Message, Message]:
    design = _model("system_design", {"field2": (list[str], ...)})
    msg1 = Message(role="Boss", content="write a snake game", cause_by=UserRequirement)
    msg2 = Message(
        role="Architect",
        instruct_content=design(field2=["field2 value1", "field2 value2"]),
        content="system design content",
        cause_by=WriteDesign,
    )
    return msg1, msg2


def test_memory_serialization() -> None:
    msg1, msg2 = _two_messages()
    memory = Memory()
    memory.add_batch([msg1, msg2])
    again = Memory(**memory.model_dump())
    assert again.count() == 2 and again.get(2)[0].role == "Boss"
    assert again.storage[-1].cause_by == any_to_str(WriteDesign)
    assert Memory(storage=[msg1, msg2], index={msg1.cause_by: [msg1], msg2.cause_by: [msg2]}).count() == 2


def test_memory_serialization_through_a_json_file(tmp_path: Path) -> None:
    msg1, msg2 = _two_messages()
    memory = Memory()
    memory.add_batch([msg1, msg2])
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(memory.model_dump()), encoding="utf-8")
    again = Memory(**json.loads(path.read_text(encoding="utf-8")))
    assert again.count() == 2 and len(again.index) == 2
    assert again.get(1)[0].instruct_content.field2 == ["field2 value1", "field2 value2"]
    assert again.get(1)[0].cause_by == any_to_str(WriteDesign)


# -- beyond MetaGPT's tests: what the drop-in promises ---------------------------------------------------------
def _dump(message: Message) -> dict[str, Any]:
    """MetaGPT's model_dump, with ``send_to`` (a set, dumped as a list in the set's iteration order, which
    depends on insertion order and the hash seed) compared as a set."""
    dumped: dict[str, Any] = message.model_dump()
    dumped["send_to"] = set(dumped["send_to"])
    return dumped


def test_round_trip_is_lossless_for_every_field_and_class(store_settings: Settings) -> None:
    design = _model("system_design", {"field2": (list[str], ...)})
    original = Message(
        role="Architect",
        content=TEXTS[3],
        instruct_content=design(field2=["a", "b"]),
        cause_by=WriteDesign,
        sent_from="Bob",
        send_to={"Alice", "Charlie"},
    )
    for message in (original, UserMessage("hi"), AIMessage("hello")):
        back = to_metagpt(to_ltm(message))
        assert type(back) is type(message)
        assert _dump(back) == _dump(message)  # MetaGPT's own serialized form, field by field
    storage = _storage(store_settings)  # and through the persistent store, read by a second object
    storage.recover_memory("round-trip")
    storage.add(original)
    reread = _storage(store_settings).recover_memory("round-trip")
    assert [_dump(m) for m in reread] == [_dump(original)]


def test_recover_after_restart_restores_short_term_memory(store_settings: Settings) -> None:
    rc = RoleContext(watch={any_to_str(UserRequirement)})
    ltm = LongTermMemory(memory_storage=_storage(store_settings))
    ltm.recover_memory("restart", rc)
    ltm.add(Message(content=TEXTS[0], cause_by=UserRequirement))
    ltm.add(Message(content="not watched", cause_by=WriteDesign))
    again = LongTermMemory(memory_storage=_storage(store_settings))  # a new process would build exactly this
    again.recover_memory("restart", rc)
    assert [m.content for m in again.get()] == [TEXTS[0]]
    assert again.find_news([Message(content=TEXTS[1], cause_by=UserRequirement)]) == []
