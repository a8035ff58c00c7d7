"""One bad value is refused at the door with a typed error that names the fix,
and the namespace keeps working (reopens, rows equal vectors, a filtered search still answers)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ltm import InvalidInput, Memory, MemoryStorage, Message, Settings


def _healthy(store: MemoryStorage, n: int) -> None:
    store.close()
    store.recover_memory(store.namespace or "")
    stats = store.stats()
    assert stats.messages == stats.vectors == n
    assert store.search("alpha", k=5, filters={"metadata": {"ok": 1}})
    assert len(store.recent(10)) == min(n, 10)
    assert sum(1 for _ in store.export()) == n


@pytest.fixture
def store(settings: Settings) -> MemoryStorage:
    store = MemoryStorage("bad-values", settings=settings)
    store.add_batch([Message(f"alpha record {i}", metadata={"ok": 1, "i": i}) for i in range(3)])
    return store


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["top", "nested"])
def test_non_finite_metadata_is_refused(store: MemoryStorage, bad: float, where: str) -> None:
    metadata: dict[str, Any] = {"ok": 1, "x": bad} if where == "top" else {"ok": 1, "x": {"y": [1, {"z": bad}]}}
    with pytest.raises(InvalidInput, match="finite"):
        store.add(Message("alpha poisoned", metadata=metadata))
    _healthy(store, 3)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_created_at_is_refused(store: MemoryStorage, bad: float) -> None:
    message = Message("alpha timed")
    message.created_at = bad  # assignment bypasses the model's own check: the store checks again
    with pytest.raises(InvalidInput, match="created_at"):
        store.add(message)
    _healthy(store, 3)


def test_message_constructor_refuses_non_finite_created_at() -> None:
    with pytest.raises(ValueError, match="finite"):
        Message("x", created_at=math.nan)
    with pytest.raises(InvalidInput):
        Message.load({"content": "x", "created_at": "inf"})


@pytest.mark.parametrize("field", ["id", "role", "cause_by", "sent_from", "send_to", "meta_key", "meta_value"])
def test_surrogates_in_any_field_are_refused(store: MemoryStorage, field: str) -> None:
    bad = "x\ud800y"
    cases: dict[str, dict[str, Any]] = {
        "id": {"id": bad},
        "role": {"role": bad},
        "cause_by": {"cause_by": bad},
        "sent_from": {"sent_from": bad},
        "send_to": {"send_to": {bad}},
        "meta_key": {"metadata": {bad: 1}},
        "meta_value": {"metadata": {"k": bad}},
    }
    kwargs = cases[field]
    with pytest.raises(InvalidInput, match="surrogate"):
        store.add(Message("alpha surrogate", **kwargs))
    _healthy(store, 3)


def test_deep_metadata_is_refused(store: MemoryStorage) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["d"] = {}
        node = node["d"]
    with pytest.raises(InvalidInput, match="deep"):
        store.add(Message("alpha deep", metadata=deep))
    _healthy(store, 3)


def test_deep_json_on_load_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        Message.load('{"content": "x", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}")


@pytest.mark.parametrize("field", ["id", "role", "cause_by", "sent_from", "send_to", "metadata"])
def test_oversized_fields_are_refused(store: MemoryStorage, field: str) -> None:
    big = "r" * 2_000_000
    kwargs: dict[str, Any] = (
        {"metadata": {"k": big}} if field == "metadata" else {"send_to": {big}} if field == "send_to" else {field: big}
    )
    with pytest.raises(InvalidInput, match="bytes"):
        store.add(Message("alpha big", **kwargs))
    _healthy(store, 3)


@pytest.mark.parametrize("k", [2**63, 2**31, 10**12])
def test_huge_k_is_invalid_input(store: MemoryStorage, k: int) -> None:
    for call in (
        lambda: store.search("alpha", k=k),
        lambda: store.search_similar("alpha", k=k),
        lambda: store.search("alpha", k=k, mode="keyword"),
        lambda: store.recent(k),
    ):
        with pytest.raises(InvalidInput, match="k"):
            call()
    _healthy(store, 3)


@pytest.mark.parametrize("bad", [None, 3, "", b"id"])
def test_delete_of_a_non_id_is_refused(store: MemoryStorage, bad: Any) -> None:
    with pytest.raises(InvalidInput, match="id"):
        store.delete(bad)
    _healthy(store, 3)


@pytest.mark.parametrize("bad", [None, 3, "text", [1, 2]])
def test_find_news_of_a_non_list_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidInput, match="Message"):
        Memory().find_news(bad)
