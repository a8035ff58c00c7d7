"""Filters nested or wide enough to overflow a SQL parser are refused by the library's one filter parser
with InvalidInput naming the fix, on every engine (search, list and delete_where alike); filters within the
limits still run. A metadata key holding '.' is refused at write: a filter could never reach it."""

from __future__ import annotations

from typing import Any

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import MemoryStorage
from ltm.store.search.filters import MAX_DEPTH, MAX_TERMS


def _nested(op: str, depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"role": "user"}
    for _ in range(depth):
        spec = {op: spec} if op == "NOT" else {op: [spec, {"role": "pm"}]}
    return spec


@pytest.fixture
def store(settings: Settings) -> Any:
    store = MemoryStorage("limits", settings=settings)
    store.add_batch(
        [
            Message("alpha", role="user"),
            Message("beta", role="pm"),
            Message("gamma", role="user", metadata={"team": {"name": "a"}}),
        ]
    )
    yield store
    store.close()


@pytest.mark.parametrize(("op", "depth"), [("NOT", 18), ("NOT", 200), ("AND", 87), ("OR", 87), ("AND", MAX_DEPTH + 1)])
def test_deep_filters_are_invalid_input_on_every_call(store: MemoryStorage, op: str, depth: int) -> None:
    spec = _nested(op, depth)
    with pytest.raises(InvalidInput, match="levels deep"):
        store.search("alpha", 5, filters=spec)
    with pytest.raises(InvalidInput, match="levels deep"):
        store.list(spec)
    with pytest.raises(InvalidInput, match="levels deep"):
        store.delete_where(spec)
    assert store.count() == 3  # nothing was deleted


@pytest.mark.parametrize("op", ["NOT", "AND", "OR"])
def test_filters_at_the_depth_limit_still_run(store: MemoryStorage, op: str) -> None:
    spec = _nested(op, MAX_DEPTH)
    found = {m.content for m in store.list(spec, limit=10).messages}
    users = {"alpha", "gamma"}
    expected = {
        "NOT": users if MAX_DEPTH % 2 == 0 else {"beta"},  # an even number of NOTs cancel out
        "AND": set(),  # role user and role pm at once: nothing
        "OR": users | {"beta"},
    }[op]
    assert found == expected


def test_too_many_comparisons_are_invalid_input(store: MemoryStorage) -> None:
    wide = {"OR": [{"role": f"r{i}"} for i in range(MAX_TERMS + 1)]}
    with pytest.raises(InvalidInput, match="comparisons"):
        store.search("alpha", 5, filters=wide)
    fits = {"OR": [{"role": f"r{i}"} for i in range(MAX_TERMS - 1)] + [{"role": "pm"}]}
    assert [m.content for m in store.list(fits).messages] == ["beta"]


@pytest.mark.parametrize("metadata", [{"a.b": 1}, {"team": {"full.name": "x"}}, {"list": [{"x.y": 1}]}])
def test_a_dotted_metadata_key_is_stored_as_given(store: MemoryStorage, metadata: dict[str, Any]) -> None:
    added = Message("delta", metadata=metadata)
    assert store.add(added)
    assert store.get(added.id).metadata == metadata
    assert store.count() == 4
    assert [m.content for m in store.list({"metadata.team.name": "a"}).messages] == ["gamma"]
