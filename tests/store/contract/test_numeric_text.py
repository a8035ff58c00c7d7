"""``gt`` / ``gte`` / ``lt`` / ``lte`` with a number compare a number stored as text (``"7"``) by its value, as
LangGraph's InMemoryStore, SqliteStore and PostgresStore all match it; on both engines, through MemoryStorage and
the LangGraph-style ``$gt`` a framework adapter passes on. Text that is not a plain decimal number never matches a
number; text compared with text stays byte order."""

from __future__ import annotations

from typing import Any

import pytest

from ltm import MemoryStorage, Message, Settings

_VALUES: dict[str, Any] = {
    "int7": 7,
    "float2": 2.5,
    "text7": "7",
    "text12": "12",
    "text3.5": "3.5",
    "text-2": "-2",
    "text+8": "+8",
    "text.5": ".5",
    "text1e1": "1e1",
    "text1E-1": "1E-1",
    "word": "abc",
    "empty": "",
    "spaced": " 7",
    "hex": "0x10",
    "inf": "inf",
    "nan": "NaN",
    "prefix": "7 apples",
    "true": True,
    "null": None,
    "list": ["7"],
}


@pytest.fixture
def store(settings: Settings) -> MemoryStorage:
    store = MemoryStorage("numbers", settings=settings)
    store.add_batch([Message(f"value {name}", id=name, metadata={"n": value}) for name, value in _VALUES.items()])
    return store


@pytest.mark.parametrize(
    ("condition", "ids"),
    [
        ({"gt": 5}, {"int7", "text7", "text12", "text+8", "text1e1"}),
        ({"gte": 7}, {"int7", "text7", "text12", "text+8", "text1e1"}),
        ({"gt": 7}, {"text12", "text+8", "text1e1"}),
        ({"lt": 3}, {"float2", "text-2", "text.5", "text1E-1"}),
        ({"lte": 3.5}, {"float2", "text3.5", "text-2", "text.5", "text1E-1"}),
        ({"lt": 0}, {"text-2"}),
        ({"gt": 0.4, "lt": 0.6}, {"text.5"}),
        # text with text: byte order, as it was
        ({"gt": "5"}, {"text7", "word", "prefix", "inf", "nan"}),
        ({"lte": "12"}, {"text12", "text-2", "text+8", "text.5", "empty", "spaced", "hex"}),
    ],
)
def test_a_number_stored_as_text_compares_by_value(
    store: MemoryStorage, condition: dict[str, Any], ids: set[str]
) -> None:
    filters = {"metadata.n": condition}
    assert {m.id for m in store.list(filters, limit=100).messages} == ids
    assert store.count(filters) == len(ids)
    assert {h.message.id for h in store.search("value", k=50, filters=filters)} == ids
    assert {m.id for m in store.list({"NOT": filters}, limit=100).messages} == set(_VALUES) - ids
