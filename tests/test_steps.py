from __future__ import annotations

import json

import pytest

from ltm import InvalidInput, MemoryItem, StepMemory


def _item(step: int, **extra: object) -> MemoryItem:
    item = MemoryItem()
    item.set_value("step", step)
    item.add_values_from_dict({"observation": f"obs {step}", **extra})
    return item


def test_memory_item_fields() -> None:
    item = _item(1, cost=0.5)
    assert item.attributes == ["step", "observation", "cost"]
    assert item.get_value("cost") == 0.5
    assert item.get_value("missing") is None
    assert item.get_values(["step", "missing"]) == {"step": 1, "missing": None}
    assert item.filter(["step", "missing"]) == {"step": 1}
    assert item.filter() == {}
    assert item.to_dict() == {"step": 1, "observation": "obs 1", "cost": 0.5}
    assert json.loads(item.to_json()) == item.to_dict()
    other = MemoryItem()
    other.from_dict(item.to_dict())
    assert other == item
    item.set_value("step", 2)
    assert item.attributes == ["step", "observation", "cost"] and item.get_value("step") == 2


def test_memory_item_rejects_names_that_would_shadow_methods() -> None:
    with pytest.raises(InvalidInput):
        MemoryItem().set_value("to_dict", 1)
    with pytest.raises(InvalidInput):
        MemoryItem().set_value("not an identifier", 1)


def test_step_memory_every_method() -> None:
    memory = StepMemory()
    assert memory.is_empty() and memory.length == 0 and memory.get_latest_item() is None
    for step in range(4):
        memory.add_memory_item(_item(step, action=f"a{step}") if step % 2 else _item(step))
    assert memory.length == 4 and not memory.is_empty()
    assert memory.get_latest_item() == memory.content[-1]
    assert memory.filter_memory_from_steps([1, 3]) == [
        {"step": 1, "observation": "obs 1", "action": "a1"},
        {"step": 3, "observation": "obs 3", "action": "a3"},
    ]
    assert memory.filter_memory_from_keys(["step", "action"]) == [
        {"step": 0},
        {"step": 1, "action": "a1"},
        {"step": 2},
        {"step": 3, "action": "a3"},
    ]
    memory.delete_memory_item(2)
    assert [d["step"] for d in memory.list_content] == [0, 1, 3]
    assert json.loads(memory.to_json()) == memory.to_list_of_dicts()

    copy = StepMemory()
    copy.from_list_of_dicts(memory.to_list_of_dicts())
    assert copy.to_list_of_dicts() == memory.to_list_of_dicts()
    assert [i.attributes for i in copy.content] == [i.attributes for i in memory.content]

    loaded = StepMemory()
    loaded.load(memory.content)
    assert loaded.length == 3
    loaded.clear()
    assert loaded.is_empty() and memory.length == 3
    with pytest.raises(InvalidInput):
        memory.add_memory_item({"step": 1})  # type: ignore[arg-type]
