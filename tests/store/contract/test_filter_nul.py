"""A NUL in a filter value or a scope: the store refuses NUL in everything it writes (ltm.store.validation), so
no stored text holds one, and a filter on such a value answers what it means on every engine (nothing for
``eq`` / ``in`` / ``contains``, everything for their complements, the byte order for ``gt``-like operators),
never a driver's error."""

from __future__ import annotations

from typing import Any

import pytest

from ltm import InvalidInput, MemoryStorage, Message, Settings

_NUL = "u\x00"


@pytest.fixture
def store(settings: Settings) -> MemoryStorage:
    store = MemoryStorage("nul", settings=settings)
    store.add_batch(
        [
            Message("alpha note", id="a", metadata={"user_id": "u", "run_id": "r", "tag": "u"}),
            Message("beta note", id="b", metadata={"user_id": "u1", "agent_id": "x", "tag": "v", "tags": ["u"]}),
            Message("gamma note", id="c", metadata={"tag": "t"}),
        ]
    )
    return store


def test_nul_is_never_stored(store: MemoryStorage) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        store.add(Message("x", metadata={"tag": _NUL}))
    with pytest.raises(InvalidInput, match="NUL"):
        store.add(Message("x", metadata={"user_id": _NUL}))


@pytest.mark.parametrize(
    ("filters", "ids"),
    [
        ({"user_id": _NUL}, set()),
        ({"agent_id": _NUL}, set()),
        ({"run_id": _NUL}, set()),
        ({"user_id": {"ne": _NUL}}, {"a", "b", "c"}),
        ({"user_id": {"in": [_NUL, "u1"]}}, {"b"}),
        ({"user_id": {"in": [_NUL]}}, set()),
        ({"user_id": {"nin": [_NUL, "u1"]}}, {"a", "c"}),
        ({"user_id": {"contains": "\x00"}}, set()),
        ({"role": _NUL}, set()),
        ({"content": {"icontains": "note\x00"}}, set()),
        ({"send_to": _NUL}, set()),
        ({"metadata.tag": _NUL}, set()),
        ({"metadata.tag": {"ne": _NUL}}, {"a", "b", "c"}),
        ({"metadata.tags": {"contains": _NUL}}, set()),
        ({"NOT": {"metadata.tags": {"contains": _NUL}}}, {"a", "b", "c"}),
        # byte order: every stored text above "u" sorts above "u\x00", "u" itself below it
        ({"metadata.tag": {"gt": _NUL}}, {"b"}),
        ({"metadata.tag": {"gte": _NUL}}, {"b"}),
        ({"metadata.tag": {"lt": _NUL}}, {"a", "c"}),
        ({"metadata.tag": {"lte": _NUL}}, {"a", "c"}),
    ],
)
def test_a_filter_on_nul_answers_what_it_means(store: MemoryStorage, filters: dict[str, Any], ids: set[str]) -> None:
    assert {m.id for m in store.list(filters).messages} == ids
    assert store.count(filters) == len(ids)
    assert {h.message.id for h in store.search("note", k=10, filters=filters)} == ids
    assert {h.message.id for h in store.search("note", k=10, mode="keyword", filters=filters)} == ids


def test_deleting_by_a_nul_scope_deletes_nothing(store: MemoryStorage) -> None:
    assert store.delete_where({"user_id": _NUL}) == 0
    assert store.delete_where({"metadata.tag": {"in": [_NUL]}}) == 0
    assert store.delete_all(user_id=_NUL) == 0
    assert store.delete_all(agent_id="x", run_id=_NUL) == 0
    assert store.count() == 3
    assert store.delete_where({"user_id": {"ne": _NUL}, "agent_id": "x"}) == 1
    assert store.count() == 2
