"""A LangGraph ``IndexConfig``'s ``embed`` (a LangChain ``Embeddings``, a sync or async function, or a provider
string) as the llama-index ``BaseEmbedding`` that :class:`~ltm.store.MemoryStorage` takes as its model.

The store then embeds through it as through its own model: one batched call per write, every vector cached
under its text, queries embedded with ``embed_query``. An async-only function is run to completion on the
calling thread when a sync call needs it (the store's sync work runs off the event loop).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import json
import types
from typing import Any, cast

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import ensure_embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from ltm.errors import ConfigError, InvalidInput

__all__ = ["LangChainEmbedding", "embedding_name"]


def embedding_name(embed: Any) -> str:
    """The name ltm records in the namespace's manifest for ``embed`` (a reopen with another model is refused).

    A provider string is itself; a LangChain ``Embeddings`` object is its class and model (``model``,
    ``model_name``, ...); a function is its module and qualified name, and where that name alone cannot tell two
    models apart (a lambda, a function made inside another, a ``functools.partial``, a bound method) a digest of
    what it is made of: the partial's arguments, the code's constants and names, its defaults and the values it
    captured. Captured objects count by their class and model name only, so two closures over two clients of
    one class and no model name still share a name: give such a function a name of its own per model.
    """
    if isinstance(embed, str):
        return embed
    if isinstance(embed, Embeddings) and (hasattr(embed, "func") or hasattr(embed, "afunc")):
        embed = getattr(embed, "func", None) or getattr(embed, "afunc", embed)  # LangGraph's EmbeddingsLambda
    return "langgraph:" + _identity(embed)


def _identity(target: Any) -> str:
    if isinstance(target, functools.partial):
        return f"{_identity(target.func)}:{_digest([target.args, target.keywords])}"
    if inspect.ismethod(target):
        return f"{_identity(target.__func__)}:{_digest(target.__self__)}"
    if isinstance(target, Embeddings) or not callable(target):
        kind = type(target)
        model = _model_name(target)
        return f"{kind.__module__}.{kind.__qualname__}" + (f":{model}" if model else "")
    name = f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', type(target).__name__)}"
    code = getattr(target, "__code__", None)
    if code is not None and ("<lambda>" in name or "<locals>" in name):
        closure = [cell.cell_contents for cell in getattr(target, "__closure__", None) or ()]
        made = [_code_parts(code), getattr(target, "__defaults__", None), getattr(target, "__kwdefaults__", None)]
        name += f":{_digest([*made, closure])}"
    model = _model_name(target)
    return name + (f":{model}" if model else "")


def _model_name(target: Any) -> str | None:
    for attribute in ("model", "model_name", "model_id", "deployment_name", "repo_id"):
        value = getattr(target, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def _code_parts(code: types.CodeType) -> list[Any]:
    """What a function's code is made of, stable across Python versions (its bytecode is not)."""
    consts = [_code_parts(c) if isinstance(c, types.CodeType) else c for c in code.co_consts]
    return [consts, code.co_names, code.co_varnames, code.co_freevars]


def _stable(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data that is the same in every process (no addresses)."""
    if depth > 8:
        return "..."
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_stable(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return sorted(([str(k), _stable(v, depth + 1)] for k, v in value.items()), key=lambda kv: kv[0])
    if callable(value) or isinstance(value, Embeddings):
        return _identity(value)
    kind = type(value)
    return [f"{kind.__module__}.{kind.__qualname__}", _model_name(value)]


def _digest(value: Any) -> str:
    text = json.dumps(_stable(value), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


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
        try:  # one conversion in C into the rows the store normalises, not a Python float per number
            rows = np.asarray(vectors, dtype=np.float32).reshape(count, self._dims)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"the index's embed returned vectors that are not lists of numbers: {exc}") from exc
        return cast(list[list[float]], list(rows))

    def _async_only(self) -> bool:
        """An async embedding function and no sync one (LangGraph's EmbeddingsLambda over a coroutine)."""
        return hasattr(self._embeddings, "afunc") and not hasattr(self._embeddings, "func")

    def _documents(self, texts: list[str]) -> list[list[float]]:
        if self._async_only():
            return asyncio.run(self._embeddings.aembed_documents(texts))
        return self._embeddings.embed_documents(texts)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._checked(self._documents(list(texts)), len(texts))

    def get_text_embedding_batch(
        self, texts: list[str], show_progress: bool = False, **kwargs: Any
    ) -> list[list[float]]:
        """Every text in one ``embed_documents`` call, as LangGraph's own stores make it (a LangChain
        ``Embeddings`` chunks for its service itself): llama-index's loop would call it per 10 texts, with events
        per text that cost more than a lookup model does."""
        return self._get_text_embeddings(list(texts)) if texts else []

    async def aget_text_embedding_batch(
        self, texts: list[str], show_progress: bool = False, **kwargs: Any
    ) -> list[list[float]]:
        """Async twin of :meth:`get_text_embedding_batch`."""
        return await self._aget_text_embeddings(list(texts)) if texts else []

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
