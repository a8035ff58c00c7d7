"""The store's primitives the framework adapters build on, on every engine: paged iteration (``iter``), the
namespace's vector dimension (``dimension``) and messages stored without a vector."""

from __future__ import annotations

import asyncio

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import NO_VECTOR, MemoryStorage


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


def test_a_message_given_no_vector_is_stored_with_the_stores_placeholder(settings: Settings) -> None:
    store = MemoryStorage("holes", settings=settings)
    notes = [Message("the lighthouse keeper logs the storm", id="kept", role="hidden")]
    assert store.add_batch(notes, vectors=[NO_VECTOR]) == 1  # a new namespace: the model's dimension
    dim = store.dimension()
    assert dim == store.embed_texts(["x"]).shape[1]
    [(message, vector)] = list(store.export(with_vectors=True))
    assert message.id == "kept"
    assert vector is not None and vector[0] == 1.0 and not vector[1:].any()
    assert [h.message.id for h in store.search("lighthouse storm", mode="keyword")] == ["kept"]
    assert store.count({"role": "hidden"}) == 1


def test_a_text_stored_without_a_vector_is_embedded_by_the_model_later(settings: Settings) -> None:
    store = MemoryStorage("cache", settings=settings)
    text = "the lighthouse keeper logs the storm"
    store.add_batch([Message(text, id="hole", role="hidden")], vectors=[NO_VECTOR])
    store.add(Message(text, id="real"))
    [hit] = store.search(text, 1, mode="dense", filters={"id": "real"})
    assert hit.score > 0.99  # the model's vector, not the placeholder the first copy was stored with


def test_messages_without_a_vector_beside_given_ones_and_in_replace_batch(settings: Settings) -> None:
    store = MemoryStorage("mixed", settings=settings)
    vectors = store.embed_texts(["alpha", "gamma"])
    store.add_batch(
        [Message("alpha", id="a"), Message("beta", id="b", role="hidden"), Message("gamma", id="c")],
        vectors=[vectors[0], NO_VECTOR, vectors[1]],
    )
    assert store.replace_batch([Message("beta two", id="b", role="hidden")], vectors=[NO_VECTOR]) == 1
    stored = {m.id: v for m, v in store.export(with_vectors=True)}
    assert stored["b"] is not None and stored["b"][0] == 1.0 and not stored["b"][1:].any()
    assert abs(float(stored["a"] @ vectors[0]) - 1.0) < 1e-2


def test_ordinary_rankings_do_not_change_beside_messages_without_a_vector(settings: Settings) -> None:
    texts = ["storm over the harbour", "a calm sea at dawn", "the keeper trims the lamp", "gulls over the pier"]
    plain = MemoryStorage("plain", settings=settings)
    plain.add_batch([Message(t, id=f"m{i}") for i, t in enumerate(texts)])
    mixed = MemoryStorage("with-holes", settings=settings)
    mixed.add_batch([Message(t, id=f"m{i}") for i, t in enumerate(texts)])
    mixed.add_batch(
        [Message(t, id=f"h{i}", role="hidden") for i, t in enumerate(texts)], vectors=[NO_VECTOR] * len(texts)
    )
    visible = {"role": {"ne": "hidden"}}
    for mode in ("dense", "hybrid", "keyword"):
        want = [(h.message.id, h.score) for h in plain.search("storm at the harbour", 4, mode=mode)]
        got = [(h.message.id, h.score) for h in mixed.search("storm at the harbour", 4, mode=mode, filters=visible)]
        assert [i for i, _ in got] == [i for i, _ in want]
        if mode != "keyword":  # keyword scores depend on the namespace's document counts
            assert [round(s, 5) for _, s in got] == [round(s, 5) for _, s in want]


def test_no_vector_rows_count_as_vectors_one_per_message(settings: Settings) -> None:
    store = MemoryStorage("given", settings=settings)
    with pytest.raises(InvalidInput, match="one vector per message"):
        store.add_batch([Message("a", id="a")], vectors=[NO_VECTOR, NO_VECTOR])


def test_no_vector_may_declare_the_dimension_and_must_agree_with_the_namespace(settings: Settings) -> None:
    store = MemoryStorage("declared", settings=settings)
    dim = store.embed_texts(["x"]).shape[1]
    store.add_batch([Message("first", id="a")], vectors=[NO_VECTOR(dim)])
    assert store.dimension() == dim
    with pytest.raises(InvalidInput, match=r"NO_VECTOR\(dim\) declared \[7\]"):
        store.add_batch([Message("second", id="b")], vectors=[NO_VECTOR(7)])
    with pytest.raises(InvalidInput, match="positive int"):
        NO_VECTOR(0)
    assert store.count() == 1


def test_the_async_add_stores_no_vector_rows_too(settings: Settings) -> None:
    store = MemoryStorage("async-holes", settings=settings)
    text = "the lighthouse keeper logs the storm"
    assert asyncio.run(store.aadd_batch([Message(text, id="hole", role="hidden")], vectors=[NO_VECTOR])) == 1
    store.add(Message(text, id="real"))
    [hit] = store.search(text, 1, mode="dense", filters={"id": "real"})
    assert hit.score > 0.99
