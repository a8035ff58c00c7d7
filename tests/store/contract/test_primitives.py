"""The store's primitives the framework adapters build on, on every engine: paged iteration (``iter``), the
namespace's vector dimension (``dimension``) and messages stored without a vector."""

from __future__ import annotations

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import MemoryStorage


def test_iter_follows_every_page_oldest_first(settings: Settings) -> None:
    store = MemoryStorage("pages", settings=settings)
    store.add_batch([Message(f"note {i}", id=f"n{i}", role="even" if i % 2 == 0 else "odd") for i in range(7)])
    assert [m.id for m in store.iter(page=2)] == [f"n{i}" for i in range(7)]
    assert [m.id for m in store.iter({"role": "odd"}, page=1)] == ["n1", "n3", "n5"]
    assert [m.id for m in store.iter({"role": "none"})] == []


def test_iter_reads_lazily_and_sees_what_changes_between_pages(settings: Settings) -> None:
    store = MemoryStorage("lazy", settings=settings)
    store.add_batch([Message(f"note {i}", id=f"n{i}") for i in range(4)])
    seen = store.iter(page=2)
    assert [next(seen).id, next(seen).id] == ["n0", "n1"]
    store.delete("n2")  # not read yet: its page comes after this delete
    store.add(Message("late", id="n9"))
    assert [m.id for m in seen] == ["n3", "n9"]


@pytest.mark.parametrize("page", [0, 10_001, 2.5, True, "10"])
def test_iter_refuses_a_bad_page_size_at_the_call(settings: Settings, page: object) -> None:
    store = MemoryStorage("bad-page", settings=settings)
    with pytest.raises(InvalidInput, match="page is how many messages"):
        store.iter(page=page)  # type: ignore[arg-type]


def test_iter_refuses_a_bad_filter_at_the_call(settings: Settings) -> None:
    store = MemoryStorage("bad-filter", settings=settings)
    with pytest.raises(InvalidInput, match="unknown filter"):
        store.iter({"rol": "QA"})


def test_dimension_is_none_until_the_first_vector_then_fixed_until_clean(settings: Settings) -> None:
    store = MemoryStorage("dims", settings=settings)
    assert store.dimension() is None  # the model is not asked: a read of what the namespace holds
    store.add(Message("embedded by the model", id="m"))
    dim = store.embed_texts(["x"]).shape[1]
    assert store.dimension() == dim
    assert MemoryStorage("dims", settings=settings).dimension() == dim  # another handle reads the stored one
    store.clean()
    assert store.dimension() is None
