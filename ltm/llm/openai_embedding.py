"""``OpenAICompatibleEmbedding``: a llama-index ``BaseEmbedding`` on any OpenAI-compatible ``/embeddings``.

Texts are sent in batches of ``embed_batch_size`` (llama-index does the batching; one HTTP request per batch).
The client retries transient failures itself (``max_retries``). Errors (through
:func:`~ltm.llm.openai_llm.translate_openai_error`): a server that cannot be reached, times out or answers 5xx
after the retries raises
:class:`~ltm.errors.BackendUnavailable` (the embedding service is a backend of the store, like Redis);
a request the server refuses (bad key, unknown model) or an answer that is not one vector per text raises
:class:`~ltm.errors.LLMError`. Nothing is stored by the caller when either is raised.
"""

from __future__ import annotations

from typing import Any

import openai
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import Field, PrivateAttr

from ltm.config import Settings
from ltm.errors import LLMError, LTMError
from ltm.llm.names import DEFAULT_OPENAI_EMBEDDING_MODEL
from ltm.llm.openai_llm import is_transient, translate_openai_error

__all__ = ["DEFAULT_EMBEDDING_MODEL", "OpenAICompatibleEmbedding"]

DEFAULT_EMBEDDING_MODEL = DEFAULT_OPENAI_EMBEDDING_MODEL


class OpenAICompatibleEmbedding(BaseEmbedding):
    """Embeddings from ``POST {base_url}/embeddings`` through the ``openai`` client."""

    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint; None: api.openai.com.")
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, description="Retries of the openai client (transient failures).")
    dimensions: int | None = Field(default=None, description="Ask the server for this many dimensions.")
    _api_key: str = PrivateAttr(default="not-needed")
    _client: Any = PrivateAttr(default=None)
    _aclient: Any = PrivateAttr(default=None)

    def __init__(self, *, api_key: str | None = None, **data: Any) -> None:
        data.setdefault("model_name", DEFAULT_EMBEDDING_MODEL)
        super().__init__(**data)
        self._api_key = api_key or "not-needed"  # kept private: never in model_dump() or repr

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleEmbedding:
        """From ``openai_base_url``, ``openai_api_key``, ``embedding_model``, ``embed_batch_size``,
        ``llm_timeout`` and ``llm_max_retries``."""
        return cls(
            model_name=settings.embedding_model or DEFAULT_EMBEDDING_MODEL,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
            embed_batch_size=settings.embed_batch_size,
        )

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatibleEmbedding"

    def _sync(self) -> openai.OpenAI:
        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=self.max_retries
            )
        return self._client  # type: ignore[no-any-return]

    def _request(self, texts: list[str]) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model_name, "input": texts}
        if self.dimensions is not None:
            request["dimensions"] = self.dimensions
        return request

    def _vectors(self, response: Any, count: int) -> list[list[float]]:
        try:
            rows = sorted(response.data, key=lambda item: item.index)
            vectors = [[float(x) for x in row.embedding] for row in rows]
        except (AttributeError, TypeError, ValueError) as exc:
            raise LLMError(f"the embedding server returned a malformed answer ({exc}); check {self.base_url}") from exc
        if len(vectors) != count or any(not v for v in vectors):
            raise LLMError(f"the embedding server returned {len(vectors)} vectors for {count} texts")
        return vectors

    def _failure(self, exc: Exception) -> LTMError:
        tries = self.max_retries + 1 if is_transient(exc) else 1
        return translate_openai_error(exc, f"embedding server {self.base_url or 'api.openai.com'}", tries)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        try:
            response = self._sync().embeddings.create(**self._request(texts))
        except Exception as exc:  # the client's errors, and whatever its parsing of a broken answer raises
            raise self._failure(exc) from exc
        return self._vectors(response, len(texts))

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        # a fresh async client per call: async clients are bound to one event loop
        client = openai.AsyncOpenAI(
            base_url=self.base_url, api_key=self._api_key, timeout=self.timeout, max_retries=self.max_retries
        )
        try:
            response = await client.embeddings.create(**self._request(texts))
        except Exception as exc:
            raise self._failure(exc) from exc
        finally:
            await client.close()
        return self._vectors(response, len(texts))

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embeddings([query])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await self._aget_text_embeddings([query]))[0]
