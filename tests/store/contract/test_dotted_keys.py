"""Metadata keys holding ``.`` (AutoGen / CrewAI metadata, LangGraph values) are stored as given on every engine, and
a filter reaches them with the documented escape: ``\\.`` in a ``metadata.`` path is a dot inside one key
(``metadata.a\\.b`` is key ``a.b``; ``metadata.a.b`` is key ``b`` inside key ``a``)."""

from __future__ import annotations

from typing import Any

import pytest

from ltm import InvalidInput, MemoryStorage, Message, Settings
from ltm.store.search.filters import metadata_field


@pytest.fixture
def store(settings: Settings) -> MemoryStorage:
    store = MemoryStorage("dotted", settings=settings)
    store.add_batch(
        [
            Message("flat dotted key", id="flat", metadata={"a.b": 1, "file.name": "notes.md", "v1.2": ["x", "y"]}),
            Message("nested key", id="nested", metadata={"a": {"b": 2}, "file": {"name": "other.md"}}),
            Message("both", id="both", metadata={"x.y": {"z.w": "deep", "n": 5}, "a.b": 3}),
        ]
    )
    return store


def test_dotted_keys_are_stored_as_given(store: MemoryStorage) -> None:
    assert store.get("flat").metadata == {"a.b": 1, "file.name": "notes.md", "v1.2": ["x", "y"]}
    assert store.get("both").metadata == {"x.y": {"z.w": "deep", "n": 5}, "a.b": 3}
    assert store.add(Message("deeper", metadata={"outer": {"in.ner": {"k.e.y": True}}}))


@pytest.mark.parametrize(
    ("filters", "ids"),
    [
        ({r"metadata.a\.b": 1}, {"flat"}),
        ({"metadata.a.b": 2}, {"nested"}),
        ({r"metadata.a\.b": {"gte": 1}}, {"flat", "both"}),
        ({r"metadata.file\.name": "notes.md"}, {"flat"}),
        ({"metadata.file.name": "other.md"}, {"nested"}),
        ({r"metadata.file\.name": {"contains": ".md"}}, {"flat"}),
        ({r"metadata.v1\.2": {"contains": "y"}}, {"flat"}),
        ({r"metadata.x\.y.z\.w": "deep"}, {"both"}),
        ({r"metadata.x\.y.n": {"gt": 4}}, {"both"}),
        ({r"metadata.a\.b": {"ne": 1}}, {"nested", "both"}),
        ({"metadata": {r"a\.b": 3}}, {"both"}),  # the older metadata={...} form takes the same paths
        ({metadata_field("x.y", "z.w"): "deep"}, {"both"}),
        ({metadata_field("a.b"): {"in": [1, 3]}}, {"flat", "both"}),
    ],
)
def test_a_filter_reaches_a_dotted_key_with_the_escape(
    store: MemoryStorage, filters: dict[str, Any], ids: set[str]
) -> None:
    assert {m.id for m in store.list(filters).messages} == ids
    assert store.count(filters) == len(ids)
    assert {h.message.id for h in store.search("key", k=10, filters=filters)} == ids


def test_an_index_on_a_dotted_key_serves_its_filter(store: MemoryStorage) -> None:
    store.index_metadata(r"a\.b")
    store.index_metadata(r"a\.b")  # idempotent
    store.index_metadata("a.b")  # the nested key: another index
    assert {m.id for m in store.list({r"metadata.a\.b": 3}).messages} == {"both"}
    assert {m.id for m in store.list({"metadata.a.b": 2}).messages} == {"nested"}


@pytest.mark.parametrize("field", [r"metadata.a\b", "metadata.a\\", "metadata.a..b", r"metadata.a\'b", "metadata.a b"])
def test_a_bad_escape_is_refused_with_the_fix(store: MemoryStorage, field: str) -> None:
    with pytest.raises(InvalidInput, match=r"\\\."):
        store.list({field: 1})


def test_deleting_by_a_dotted_key(store: MemoryStorage) -> None:
    assert store.delete_where({r"metadata.a\.b": {"in": [1, 3]}}) == 2
    assert [m.id for m in store.list().messages] == ["nested"]
