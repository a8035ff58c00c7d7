"""Which embedding model a namespace holds is recorded with its first vector, in the transaction that writes it: a
namespace without vectors takes any model (a model that failed before anything was written does not lock it), one
with vectors refuses another model with a message that says which model, how many vectors and the fix."""

from __future__ import annotations

import pytest

from ltm import MemoryStorage, Message, Settings, StoreMismatch
from ltm.errors import BackendUnavailable
from ltm.llm.embeddings import HashEmbedding
from ltm.store import namespace_model


class DownEmbedding(HashEmbedding):
    """A model that cannot be reached (a mistyped name, a service that is down): every call fails."""

    @classmethod
    def class_name(cls) -> str:
        return "DownEmbedding"

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        raise BackendUnavailable("the embedding service is down")

    def _get_text_embedding(self, text: str) -> list[float]:
        raise BackendUnavailable("the embedding service is down")


def test_a_model_that_wrote_nothing_does_not_lock_the_namespace(settings: Settings) -> None:
    wrong = MemoryStorage("pinned", kind="role", settings=settings, embedding=DownEmbedding(dim=64))
    with pytest.raises(BackendUnavailable):
        wrong.add(Message("the first note"))
    assert wrong.count() == 0
    wrong.close()
    right = MemoryStorage("pinned", kind="role", settings=settings)  # hash-384
    assert right.add(Message("the first note"))
    assert [h.message.content for h in right.search("the first note", k=1)] == ["the first note"]
    right.close()
    assert namespace_model(settings, "role", "pinned") == "hash-384"
    assert MemoryStorage("pinned", kind="role", settings=settings).count() == 1


def test_another_model_is_refused_once_vectors_are_held_saying_which_and_how_many(settings: Settings) -> None:
    store = MemoryStorage("held", settings=settings)
    store.add_batch([Message("one note"), Message("two notes")])
    store.close()
    with pytest.raises(StoreMismatch) as info:
        MemoryStorage("held", settings=settings, embedding=HashEmbedding(dim=64))
    said = str(info.value)
    assert "'hash-384'" in said and "2 messages" in said and "'hash-64'" in said and "migrate" in said, said
    assert MemoryStorage("held", settings=settings).count() == 2


def test_a_namespace_emptied_of_its_vectors_takes_another_model(settings: Settings) -> None:
    store = MemoryStorage("emptied", settings=settings)
    store.add(Message("a note to forget"))
    store.delete_all()
    store.close()
    other = MemoryStorage("emptied", settings=settings, embedding=HashEmbedding(dim=64))
    assert other.add(Message("a note of the other model"))
    assert [h.message.content for h in other.search("a note of the other model", k=5)] == ["a note of the other model"]
    other.close()
    assert namespace_model(settings, "role", "emptied") == "hash-64"
    again = MemoryStorage("emptied", settings=settings, embedding=HashEmbedding(dim=64))
    assert [h.message.content for h in again.search("a note of the other model", k=5)] == ["a note of the other model"]
    with pytest.raises(StoreMismatch, match="1 message made by embedding model 'hash-64'"):
        MemoryStorage("emptied", settings=settings)


def test_the_first_vector_decides_between_two_handles_opened_on_an_empty_namespace(settings: Settings) -> None:
    first = MemoryStorage("race", settings=settings)
    second = MemoryStorage("race", settings=settings, embedding=HashEmbedding(dim=64))  # no vectors yet: accepted
    assert first.add(Message("written first"))
    with pytest.raises(StoreMismatch, match="1 message made by embedding model 'hash-384', not 'hash-64'"):
        second.add(Message("written second"))
    assert [m.content for m in first.recent(5)] == ["written first"]
    assert [h.message.content for h in first.search("written first", k=5)] == ["written first"]
    first.close()
    second.close()
    assert namespace_model(settings, "role", "race") == "hash-384"
