"""Bad input to the store: each case gets a clear InvalidInput / StoreMismatch and nothing stored is lost."""

from __future__ import annotations

import pytest

from ltm import InvalidInput, LTMError, MemoryStorage, Message, Settings, StoreMismatch
from ltm.llm.embeddings import HashEmbedding
from tests.support.embeddings import BrokenEmbedding


@pytest.fixture
def filled(settings: Settings) -> tuple[MemoryStorage, list[Message]]:
    store = MemoryStorage("inputs", settings=settings, embedding=BrokenEmbedding(fault="nan"))
    messages = [Message(f"safe record {i} alpha") for i in range(5)]
    store.add_batch(messages)
    return store, messages


def _intact(store: MemoryStorage, messages: list[Message]) -> None:
    assert store.count() == len(messages) == store.stats().vectors
    for message in messages:
        assert store.search(message.content, k=1, mode="dense")[0].message.id == message.id


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", "empty"),
        ("  \n\t ", "empty"),
        ("x" * 1_000_001, "max_content_bytes"),
        ("é" * 600_000, "max_content_bytes"),  # 1.2 MB of UTF-8 in 600k characters
        ("bad \ud800 surrogate", "surrogate"),
        ("nul \x00 inside", "NUL"),
    ],
)
def test_bad_content_is_refused_and_the_batch_is_atomic(
    filled: tuple[MemoryStorage, list[Message]], content: str, match: str
) -> None:
    store, messages = filled
    with pytest.raises(InvalidInput, match=match):
        store.add(Message(content))
    with pytest.raises(InvalidInput, match=match):
        store.add_batch([Message("a fine message"), Message(content)])  # the fine one is not stored either
    _intact(store, messages)


def test_other_control_characters_are_stored_verbatim(filled: tuple[MemoryStorage, list[Message]]) -> None:
    store, _ = filled
    coloured = Message("\x1b[31mred tool output\x1b[0m\tdone\r\n")
    assert store.add(coloured)
    assert store.get(coloured.id).content == coloured.content


@pytest.mark.parametrize("fault", ["nan", "zero", "dim"])
def test_broken_vectors_are_refused(settings: Settings, fault: str) -> None:
    store = MemoryStorage("vectors", settings=settings, embedding=BrokenEmbedding(fault=fault))
    messages = [Message(f"good record {i}") for i in range(3)]
    store.add_batch(messages)
    expected = {"nan": "NaN", "zero": "all-zero", "dim": "dimension|shape"}[fault]
    with pytest.raises(InvalidInput, match=expected):
        store.add_batch([Message("fine"), Message("poison pill")])
    with pytest.raises(InvalidInput, match=expected):
        store.search("poison query", mode="dense")
    _intact(store, messages)
    store.close()
    _intact(MemoryStorage("vectors", settings=settings), messages)


def test_wrong_dimension_on_an_empty_namespace_is_a_clear_error(settings: Settings) -> None:
    store = MemoryStorage("dims", settings=settings, embedding=BrokenEmbedding(fault="dim"))
    with pytest.raises(InvalidInput):
        store.add_batch([Message("ok first"), Message("poison second")])  # rows of unequal length
    assert store.count() == 0


def test_reopening_with_another_model_is_refused(settings: Settings) -> None:
    store = MemoryStorage("models", settings=settings)
    messages = [Message("kept through the refusal")]
    store.add_batch(messages)
    store.close()
    with pytest.raises(StoreMismatch, match="migrate"):
        MemoryStorage("models", settings=settings, embedding=HashEmbedding(dim=64))
    _intact(MemoryStorage("models", settings=settings), messages)


def test_other_bad_arguments(filled: tuple[MemoryStorage, list[Message]], settings: Settings) -> None:
    store, messages = filled
    with pytest.raises(InvalidInput):
        store.add("not a message")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.search("alpha", k=-1)
    with pytest.raises(InvalidInput):
        store.recent(-2)
    with pytest.raises(InvalidInput):
        MemoryStorage("x", settings=settings, similarity_threshold=1.5)
    with pytest.raises(LTMError):
        store.search_similar(42)  # type: ignore[arg-type]
    assert store.search_similar("") == []
    _intact(store, messages)


@pytest.mark.parametrize("vectors", [[None, None], [[0.5] * 384, None], [[0.5] * 384, 0.5], [[0.5] * 384, "abc"]])
def test_given_vectors_that_are_not_vectors_are_named_by_row(settings: Settings, vectors: list[object]) -> None:
    store = MemoryStorage("given", settings=settings)
    messages = [Message("first note"), Message("second note")]
    row = 0 if vectors[0] is None else 1
    with pytest.raises(InvalidInput, match=rf"vectors\[{row}\] \(message {messages[row].id}\)"):
        store.add_batch(messages, vectors=vectors)
    assert store.count() == 0
    store.close()
