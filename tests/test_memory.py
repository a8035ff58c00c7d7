"""Short-term Memory: MetaGPT's memory and serialization tests ported, plus ltm's fixes and properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

from ltm import InvalidInput, Memory, Message, UserRequirement
from ltm.message import any_to_str


class WriteDesign:
    """Stands in for MetaGPT's WriteDesign action."""


# -- MetaGPT: test_memory.py ---------------------------------------------------------------------------
def test_metagpt_memory() -> None:
    memory = Memory()
    message1 = Message(content="test message1", role="user1")
    message2 = Message(content="test message2", role="user2")
    message3 = Message(content="test message3", role="user1")
    memory.add(message1)
    assert memory.count() == 1
    memory.delete_newest()
    assert memory.count() == 0
    memory.add_batch([message1, message2])
    assert memory.count() == 2
    assert len(memory.index[message1.cause_by]) == 2
    messages = memory.get_by_role("user1")
    assert messages[0].content == message1.content
    messages = memory.get_by_content("test message")
    assert len(messages) == 2
    messages = memory.get_by_action(UserRequirement)
    assert len(messages) == 2
    messages = memory.get_by_actions({UserRequirement})
    assert len(messages) == 2
    messages = memory.try_remember("test message")
    assert len(messages) == 2
    messages = memory.get(k=1)
    assert len(messages) == 1
    messages = memory.get(k=5)
    assert len(messages) == 2
    messages = memory.find_news([message3])
    assert len(messages) == 1
    memory.delete(message1)
    assert memory.count() == 1
    messages = memory.get_by_role("user2")
    assert messages[0].content == message2.content
    memory.clear()
    assert memory.count() == 0
    assert len(memory.index) == 0


# -- MetaGPT: test_memory_serdeser.py ------------------------------------------------------------------
def _design_payload() -> BaseModel:
    model = create_model("WriteDesignOutput", field1=(str, ...), field2=(list[str], ...))
    return model(field1="field1 value", field2=["field2 value1", "field2 value2"])


def _two_messages() -> tuple[Message, Message]:
    msg1 = Message(role="Boss", content="write a snake game", cause_by=UserRequirement)
    msg2 = Message(
        role="Architect", instruct_content=_design_payload(), content="system design content", cause_by=WriteDesign
    )
    return msg1, msg2


def test_memory_serdeser() -> None:
    msg1, msg2 = _two_messages()
    memory = Memory()
    memory.add_batch([msg1, msg2])
    ser_data = memory.model_dump()
    new_memory = Memory(**ser_data)
    assert new_memory.count() == 2
    new_msg2 = new_memory.get(2)[0]
    assert isinstance(new_msg2, BaseModel)
    assert isinstance(new_memory.storage[-1], BaseModel)
    assert new_memory.storage[-1].cause_by == any_to_str(WriteDesign)
    assert new_msg2.role == "Boss"

    memory = Memory(storage=[msg1, msg2], index={msg1.cause_by: [msg1], msg2.cause_by: [msg2]})
    assert memory.count() == 2


def test_memory_serdeser_save(tmp_path: Path) -> None:
    msg1, msg2 = _two_messages()
    memory = Memory()
    memory.add_batch([msg1, msg2])
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(memory.model_dump(mode="json")))
    new_memory = Memory(**json.loads(path.read_text()))
    assert new_memory.count() == 2
    new_msg2 = new_memory.get(2)[1]
    assert new_msg2.instruct_content is not None
    assert new_msg2.instruct_content.field2 == ["field2 value1", "field2 value2"]
    assert new_msg2.cause_by == any_to_str(WriteDesign)
    assert len(new_memory.index) == 2


# -- ltm's fixes ---------------------------------------------------------------------------------------
def test_get_by_action_returns_copy_and_inserts_no_key() -> None:
    memory = Memory()
    memory.add(Message("a"))
    got = memory.get_by_action(UserRequirement)
    got.clear()
    assert memory.count() == 1 and len(memory.get_by_action(UserRequirement)) == 1
    assert memory.get_by_action("never.Seen") == []
    assert "never.Seen" not in memory.index


def test_duplicates_skipped_by_id_and_by_content_under_ignore_id() -> None:
    memory = Memory()
    m = Message("same")
    assert memory.add(m) is True
    assert memory.add(m) is False
    assert memory.add(Message("same")) is True  # another id
    ignoring = Memory(ignore_id=True)
    assert ignoring.add_batch([Message("same"), Message("same"), Message("same", role="other")]) == 2


def test_ignore_id_never_mutates_caller_message() -> None:
    m = Message("x")
    before = m.model_dump()
    memory = Memory(ignore_id=True)
    memory.add(m)
    memory.delete(m)
    assert m.model_dump() == before


def test_delete_absent_is_false_and_negative_k_raises() -> None:
    memory = Memory()
    assert memory.delete(Message("ghost")) is False
    with pytest.raises(InvalidInput):
        memory.get(-1)
    with pytest.raises(InvalidInput):
        memory.find_news([], k=-2)
    assert memory.delete_newest() is None
    assert memory.get_by_position(3) is None


def test_find_news_against_last_k() -> None:
    memory = Memory()
    old, recent = Message("old"), Message("recent")
    memory.add_batch([old, recent])
    new = Message("new")
    assert memory.find_news([old, recent, new], k=1) == [old, new]
    news = memory.find_news([old, recent], k=1)
    assert news == [old]
    assert memory.find_news([old, recent]) == []


def test_capacity_evicts_oldest_and_calls_back() -> None:
    evicted: list[Message] = []
    memory = Memory(capacity=3, on_evict=evicted.extend)
    msgs = [Message(f"m{i}") for i in range(5)]
    memory.add_batch(msgs[:2])
    memory.add_batch(msgs[2:])
    assert memory.get() == msgs[2:]
    assert evicted == msgs[:2]
    assert msgs[0] not in memory and memory.add(msgs[0]) is True  # forgotten, so it can come back
    assert sum(len(v) for v in memory.index.values()) == memory.count() == 3
    assert "on_evict" not in memory.model_dump()
    assert Memory(**memory.model_dump()).capacity == 3


def test_linear_add_10k() -> None:
    memory = Memory()
    memory.add_batch(Message(f"message {i}") for i in range(10_000))
    assert memory.count() == 10_000
    assert len(memory.find_news([Message("message 5")])) == 1


# -- properties ----------------------------------------------------------------------------------------
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 9), st.sampled_from(["A", "B", "C"])),
        st.tuples(st.just("add_batch"), st.lists(st.integers(0, 9), max_size=4), st.sampled_from(["A", "B"])),
        st.tuples(st.just("delete"), st.integers(0, 9), st.just("")),
        st.tuples(st.just("delete_newest"), st.just(0), st.just("")),
        st.tuples(st.just("clear"), st.just(0), st.just("")),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops, st.booleans(), st.one_of(st.none(), st.integers(1, 6)))
def test_index_always_agrees_with_storage(
    sequence: list[tuple[str, object, str]], ignore_id: bool, capacity: int | None
) -> None:
    pool = [Message(f"c{i % 4}", id=f"id{i}", role=f"r{i % 2}") for i in range(10)]
    memory = Memory(ignore_id=ignore_id, capacity=capacity)
    for op, arg, cause in sequence:
        if op == "add":
            assert isinstance(arg, int)
            memory.add(pool[arg].model_copy(update={"cause_by": cause}))
        elif op == "add_batch":
            assert isinstance(arg, list)
            memory.add_batch(pool[i].model_copy(update={"cause_by": cause}) for i in arg)
        elif op == "delete":
            assert isinstance(arg, int)
            memory.delete(pool[arg])
        elif op == "delete_newest":
            memory.delete_newest()
        else:
            memory.clear()
        flattened = sorted(id(m) for bucket in memory.index.values() for m in bucket)
        assert flattened == sorted(id(m) for m in memory.storage)
        assert all(bucket for bucket in memory.index.values())
        assert all(m.cause_by == key for key, bucket in memory.index.items() for m in bucket)
        assert memory.count() == len(memory.storage)
        keys = [memory._key(m) for m in memory.storage]
        assert len(keys) == len(set(keys)) == len(memory._keys)
        if capacity is not None:
            assert memory.count() <= capacity
