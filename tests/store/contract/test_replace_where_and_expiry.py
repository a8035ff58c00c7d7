"""``replace_batch(..., delete=...)``: a filter's deletes and a batch of replacements in ONE transaction, all
checks and embedding first; ``set_expiry``: an expiry moved without rewriting the message or its history."""

from __future__ import annotations

import time

import pytest

from ltm.config import Settings
from ltm.errors import InvalidInput
from ltm.message import Message
from ltm.store import MemoryStorage


def _store(settings: Settings) -> MemoryStorage:
    store = MemoryStorage("swap", settings=settings)
    store.add_batch([Message("keep me", id="a", metadata={"group": "old"}), Message("old b", id="b")])
    return store


def test_replace_batch_deletes_and_writes_in_one_step(settings: Settings) -> None:
    with _store(settings) as store:
        written = store.replace_batch([Message("new b", id="b"), Message("new c", id="c")], delete={"id": "a"})
        assert written == 2
        assert sorted(m.content for m, _ in store.export()) == ["new b", "new c"]
        assert [e.event for e in store.history("a")][-1] == "DELETE"
        assert store.replace_batch([], delete={"id": "c"}) == 0  # deletes alone
        assert [m.id for m, _ in store.export()] == ["b"]


def test_replace_batch_refused_message_deletes_nothing(settings: Settings) -> None:
    with _store(settings) as store:
        with pytest.raises(InvalidInput):
            store.replace_batch([Message("fine", id="c"), Message("bad\x00text", id="d")], delete={"id": "a"})
        with pytest.raises(InvalidInput, match="non-empty filter"):
            store.replace_batch([Message("x", id="e")], delete={})
        assert sorted(m.id for m, _ in store.export()) == ["a", "b"]


def test_replace_batch_failed_embedding_deletes_nothing(settings: Settings) -> None:
    with _store(settings) as store:
        wrong = [[1.0, 0.0, 0.0]]  # a vector of the wrong dimension: refused before any write
        with pytest.raises(InvalidInput):
            store.replace_batch([Message("c", id="c")], vectors=wrong, delete={"id": "a"})
        assert sorted(m.id for m, _ in store.export()) == ["a", "b"]


def test_set_expiry_moves_only_the_expiry(settings: Settings) -> None:
    with _store(settings) as store:
        before = [(e.event, e.at) for e in store.history("a")]
        order = [m.id for m, _ in store.export()]
        soon = time.time() + 0.5
        assert store.set_expiry({"a": soon, "missing": soon}) == 1
        assert store.get("a").metadata == {"group": "old", "expires_at": soon}
        assert store.list({"expires_at": {"lte": soon + 1}}).messages[0].id == "a"
        assert [(e.event, e.at) for e in store.history("a")] == before and [m.id for m, _ in store.export()] == order
        with pytest.raises(InvalidInput, match="unix seconds"):
            store.set_expiry({"a": float("nan")})
        time.sleep(0.6)
        assert store.count() == 1  # expired: gone on the next read
