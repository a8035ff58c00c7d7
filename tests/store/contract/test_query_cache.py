"""The query embedding cache: a repeated search skips the model, the cache is bounded by
``Settings.query_cache_size``, keyed by model and text, and kept apart from content vectors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ltm import MemoryStorage, Message, Settings
from ltm.llm.embeddings import resolve_embedding
from ltm.store.embedder import QUERY, TEXT
from tests.support.embeddings import CountingEmbedding

TURNS = [
    "I moved to Bishopston in March, near Gloucester Road.",
    "The staging cluster is kestrel-2; Dmitri owns it.",
    "My knee started aching after the long runs in December.",
]


class CountedModel(BaseEmbedding):
    """The real local model (all-MiniLM-L6-v2), counting the calls that reach it."""

    query_calls: int = 0
    text_calls: int = 0
    _inner: BaseEmbedding = PrivateAttr()

    def __init__(self, inner: BaseEmbedding, name: str, **kwargs: Any) -> None:
        super().__init__(model_name=name, **kwargs)
        self._inner = inner

    @classmethod
    def class_name(cls) -> str:
        return "CountedModel"

    def _get_query_embedding(self, query: str) -> list[float]:
        self.query_calls += 1
        return self._inner.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self.text_calls += 1
        return self._inner.get_text_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.text_calls += 1
        return self._inner.get_text_embedding_batch(texts)


@pytest.fixture(scope="module")
def local() -> BaseEmbedding:
    return resolve_embedding(Settings(embedding="local"))


def _store(tmp_path: Path, model: BaseEmbedding, name: str = "chat", **settings: Any) -> MemoryStorage:
    store = MemoryStorage(name, settings=Settings(storage_dir=tmp_path, **settings), embedding=model)
    store.add_batch([Message(t, role="user") for t in TURNS])
    return store


@pytest.mark.slow
def test_a_repeated_query_never_reaches_the_model(tmp_path: Path, local: BaseEmbedding) -> None:
    model = CountedModel(local, "counted-minilm")
    with _store(tmp_path, model) as store:
        first = store.search("where does Maya live now?", k=2, mode="dense")
        assert model.query_calls == 1
        again = store.search("where does Maya live now?", k=2, mode="dense")
        assert model.query_calls == 1  # served from the cache
        assert [(h.message.id, h.score) for h in again] == [(h.message.id, h.score) for h in first]
        assert first[0].message.content == TURNS[0]  # the real model's meaning, not a hash
        store.search("where does Maya live now?", k=2, mode="hybrid")  # one query vector serves every mode
        asyncio.run(store.asearch("where does Maya live now?", k=2))
        assert model.query_calls == 1
        store.search("who owns the staging cluster?", k=2)
        assert model.query_calls == 2  # another text is another entry


@pytest.mark.slow
def test_the_cache_holds_at_most_query_cache_size_queries(tmp_path: Path, local: BaseEmbedding) -> None:
    model = CountedModel(local, "counted-minilm")
    with _store(tmp_path, model, query_cache_size=2) as store:
        for query in ("knee pain", "staging cluster", "new flat"):
            store.search(query, k=1)
        assert model.query_calls == 3 and store.embedder.cached(QUERY) == 2
        store.search("new flat", k=1)  # the newest two are kept
        assert model.query_calls == 3
        store.search("knee pain", k=1)  # the oldest went out first
        assert model.query_calls == 4 and store.embedder.cached(QUERY) == 2


@pytest.mark.slow
def test_another_model_never_gets_a_cached_vector(tmp_path: Path, local: BaseEmbedding) -> None:
    minilm = CountedModel(local, "counted-minilm")
    hashed = CountedModel(CountingEmbedding(dim=384), "counted-hash")
    with _store(tmp_path, minilm, "one") as one, _store(tmp_path, hashed, "two") as two:
        for store in (one, two, one, two):
            store.search("where does Maya live now?", k=1, mode="dense")
        assert (minilm.query_calls, hashed.query_calls) == (1, 1)  # each model once, then its own cache
        assert one.embedder.keys(["q"], QUERY) != two.embedder.keys(["q"], QUERY)


def test_zero_keeps_no_query(tmp_path: Path) -> None:
    model = CountedModel(CountingEmbedding(dim=64), "counted-hash")
    with _store(tmp_path, model, query_cache_size=0) as store:
        store.search("knee pain", k=1)
        store.search("knee pain", k=1)
        assert model.query_calls == 2 and store.embedder.cached(QUERY) == 0


def test_a_large_batch_of_adds_does_not_push_queries_out(tmp_path: Path) -> None:
    model = CountedModel(CountingEmbedding(dim=64), "counted-hash")
    with _store(tmp_path, model) as store:
        store.search("knee pain", k=1)
        store.add_batch([Message(f"turn number {i} of a long chat", role="user") for i in range(4200)])
        assert store.embedder.cached(TEXT) == 4096  # content vectors: their own bound
        store.search("knee pain", k=1)
        assert model.query_calls == 1
