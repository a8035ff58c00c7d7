"""OpenAICompatibleEmbedding against the local server with the real openai client."""

from __future__ import annotations

import asyncio

import pytest

from ltm.config import Settings
from ltm.errors import BackendUnavailable, LLMError
from ltm.llm.embeddings import resolve_embedding
from ltm.llm.openai_embedding import OpenAICompatibleEmbedding
from tests.support.openai_server import OpenAIServer


def test_batches_and_vectors(openai_server: OpenAIServer) -> None:
    settings = Settings(
        embedding="openai", openai_base_url=openai_server.base_url, embed_batch_size=4, embedding_model="emb"
    )
    embedding = resolve_embedding(settings)
    assert isinstance(embedding, OpenAICompatibleEmbedding) and embedding.model_name == "emb"
    vectors = embedding.get_text_embedding_batch([f"text {i}" for i in range(10)])
    assert len(vectors) == 10 and all(len(v) == 32 for v in vectors)
    assert openai_server.embedding_calls == 3  # 4 + 4 + 2
    assert embedding.get_query_embedding("text 3") == vectors[3]
    assert asyncio.run(embedding.aget_query_embedding("text 3")) == vectors[3]
    assert "api_key" not in embedding.model_dump()


def test_outage_is_backend_unavailable(openai_server: OpenAIServer) -> None:
    embedding = OpenAICompatibleEmbedding(base_url=openai_server.base_url, max_retries=1)
    openai_server.fail(2)
    with pytest.raises(BackendUnavailable, match="2 attempt"):
        embedding.get_text_embedding("x")
    assert openai_server.embedding_calls == 2  # one try + the client's one retry


def test_malformed_is_llm_error(openai_server: OpenAIServer) -> None:
    embedding = OpenAICompatibleEmbedding(base_url=openai_server.base_url, max_retries=0)
    openai_server.malformed(1, kind="shape")
    with pytest.raises(LLMError):
        embedding.get_text_embedding("x")
