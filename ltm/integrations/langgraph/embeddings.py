"""A LangGraph ``IndexConfig``'s ``embed`` (a LangChain ``Embeddings``, a sync or async function, or a provider
string) as the llama-index ``BaseEmbedding`` that :class:`~ltm.store.MemoryStorage` takes as its model.

The store then embeds through it as through its own model: one batched call per write, every vector cached
under its text, queries embedded with ``embed_query``. An async-only function is run to completion on the
calling thread when a sync call needs it (the store's sync work runs off the event loop).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import ensure_embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from ltm.errors import ConfigError, InvalidInput

__all__ = ["LangChainEmbedding", "embedding_name"]


def embedding_name(embed: Any) -> str:
    """The name ltm records in the namespace's manifest for ``embed`` (a reopen with another model is refused)."""
    if isinstance(embed, str):
        return embed
    target = embed.func if hasattr(embed, "func") else getattr(embed, "afunc", embed)
    model = getattr(embed, "model", None) or getattr(embed, "model_name", None)
    kind = target if callable(target) and not isinstance(target, Embeddings) else type(target)
    name = f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', type(kind).__name__)}"
    return f"langgraph:{name}" + (f":{model}" if isinstance(model, str) else "")


class LangChainEmbedding(BaseEmbedding):
    """``embed`` seen by ltm: checks that every vector has ``dims`` numbers."""

    _embeddings: Embeddings = PrivateAttr()
    _dims: int = PrivateAttr()

    def __init__(self, embed: Any, dims: int, **kwargs: Any) -> None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            raise ConfigError(f"IndexConfig dims must be a positive int, got {dims!r}")
        if embed is None:
            raise ConfigError(
                "IndexConfig needs embed (a LangChain Embeddings, a function or a provider string) "
                "next to dims; leave index unset to embed with ltm's configured model"
            )
        super().__init__(model_name=embedding_name(embed), **kwargs)
        self._embeddings = ensure_embeddings(embed)
        self._dims = dims

    @property
    def embeddings(self) -> Embeddings:
        """The LangChain ``Embeddings`` the index config's ``embed`` became."""
        return self._embeddings

    @classmethod
    def class_name(cls) -> str:
        return "LangChainEmbedding"

    def _checked(self, vectors: list[list[float]], count: int) -> list[list[float]]:
        if len(vectors) != count:
            raise InvalidInput(f"the index's embed returned {len(vectors)} vectors for {count} texts")
        for vector in vectors:
            if len(vector) != self._dims:
                raise InvalidInput(
                    f"the index's embed returned a vector of {len(vector)} numbers but IndexConfig "
                    f"dims is {self._dims}; set dims to the model's dimension"
                )
        return [[float(x) for x in v] for v in vectors]

    def _async_only(self) -> bool:
        """An async embedding function and no sync one (LangGraph's EmbeddingsLambda over a coroutine)."""
        return hasattr(self._embeddings, "afunc") and not hasattr(self._embeddings, "func")

    def _documents(self, texts: list[str]) -> list[list[float]]:
        if self._async_only():
            return asyncio.run(self._embeddings.aembed_documents(texts))
        return self._embeddings.embed_documents(texts)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._checked(self._documents(list(texts)), len(texts))

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        if self._async_only():
            return self._checked([asyncio.run(self._embeddings.aembed_query(query))], 1)[0]
        return self._checked([self._embeddings.embed_query(query)], 1)[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._checked(await self._embeddings.aembed_documents(list(texts)), len(texts))

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await self._aget_text_embeddings([text]))[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._checked([await self._embeddings.aembed_query(query)], 1)[0]
