"""The store's closed facade: replace (one transaction, no model call for unchanged content) and list
(paged, filtered, oldest first, a cursor that survives concurrent writes)."""

from __future__ import annotations

import asyncio

import pytest

from ltm import InvalidInput, MemoryStorage, Message, Settings
from ltm.store import MessagePage
from tests.support.embeddings import CountingEmbedding


def test_replace_swaps_a_message_in_place_without_embedding_unchanged_content(settings: Settings) -> None:
    embedding = CountingEmbedding()
    store = MemoryStorage("facade", settings=settings, embedding=embedding)
    old = Message("always run the linter before committing", metadata={"successes": 1})
    store.add_batch([old, Message("an unrelated note about lunch")])
    embedded = embedding.texts_embedded

    new = old.model_copy(update={"metadata": {"successes": 2}})
    assert store.replace(new) is True
    assert embedding.texts_embedded == embedded  # same content: its stored vector was reused
    assert store.get(old.id).metadata == {"successes": 2}
    assert store.count() == 2 == store.stats().vectors

    changed = old.model_copy(update={"content": "always run the formatter, then the linter"})
    assert store.replace(changed) is True and embedding.texts_embedded == embedded + 1
    assert store.search_similar("always run the formatter, then the linter", k=1)[0].id == old.id
    assert [h.message.id for h in store.search("linter", k=5, mode="keyword")] == [old.id]
    assert store.search("committing", k=5, mode="keyword") == []  # the old words left the keyword index
    store.close()

    reopened = MemoryStorage("facade", settings=settings, embedding=embedding)
    assert reopened.get(old.id).content == changed.content
    assert reopened.count() == 2 == reopened.stats().vectors  # FAISS and SQLite agree after a restart
    reopened.close()


def test_replace_of_an_unknown_id_adds_and_bad_input_changes_nothing(settings: Settings) -> None:
    store = MemoryStorage("facade", settings=settings)
    fresh = Message("a brand new record")
    assert store.replace(fresh) is False and store.get(fresh.id).content == fresh.content
    with pytest.raises(InvalidInput):
        store.replace(fresh.model_copy(update={"content": "   "}))
    assert store.get(fresh.id).content == fresh.content and store.count() == 1
    assert asyncio.run(store.areplace(fresh.model_copy(update={"content": "its async rewrite"}))) is True
    assert store.get(fresh.id).content == "its async rewrite" and store.count() == 1 == store.stats().vectors
    store.close()


def _all_pages(store: MemoryStorage, limit: int, **kwargs: object) -> list[MessagePage]:
    pages = [store.list(limit=limit, **kwargs)]  # type: ignore[arg-type]
    while pages[-1].next_cursor is not None:
        pages.append(store.list(limit=limit, cursor=pages[-1].next_cursor, **kwargs))  # type: ignore[arg-type]
    return pages


def test_list_pages_oldest_first_with_filters(settings: Settings) -> None:
    store = MemoryStorage("listing", settings=settings)
    assert store.list() == MessagePage([], None)
    messages = [Message(f"note {i}", role="user" if i % 3 else "assistant", metadata={"i": i}) for i in range(25)]
    store.add_batch(messages)
    store.delete(messages[4])

    pages = _all_pages(store, 10)
    assert [len(p.messages) for p in pages] == [10, 10, 4] and pages[-1].next_cursor is None
    assert [m.id for p in pages for m in p.messages] == [m.id for i, m in enumerate(messages) if i != 4]
    exact = _all_pages(store, 8)  # 24 messages in pages of 8: the last full page says there is no more
    assert [len(p.messages) for p in exact] == [8, 8, 8]

    assistant = store.list({"role": "assistant"}, limit=100)
    assert [m.metadata["i"] for m in assistant.messages] == [0, 3, 6, 9, 12, 15, 18, 21, 24]
    assert [m.id for m in store.list({"metadata": {"i": 7}}).messages] == [messages[7].id]
    for bad in ({"limit": 0}, {"limit": 10_001}, {"limit": True}, {"cursor": "not-a-cursor"}, {"cursor": ""}):
        with pytest.raises(InvalidInput):
            store.list(**bad)
    with pytest.raises(InvalidInput, match="unknown filter"):
        store.list({"colour": "red"})
    store.close()


def test_list_cursor_is_stable_while_another_process_writes(settings: Settings) -> None:
    reader = MemoryStorage("shared", settings=settings)
    writer = MemoryStorage("shared", settings=settings)  # a second handle: its own SQLite connection
    first = [Message(f"first {i}") for i in range(6)]
    writer.add_batch(first)
    page = reader.list(limit=4)
    writer.add_batch([Message(f"later {i}") for i in range(3)])
    writer.delete(first[5])
    rest = _all_pages(reader, 4, cursor=page.next_cursor)
    seen = [m.content for m in page.messages] + [m.content for p in rest for m in p.messages]
    assert seen == [f"first {i}" for i in range(5)] + [f"later {i}" for i in range(3)]  # none twice, none skipped
    reader.close()
    writer.close()
