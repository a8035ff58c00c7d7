"""ltm's local model as a llama-index ``BaseEmbedding``: :class:`OnnxEmbedding`, over :class:`~.onnx_model.OnnxModel`.

The model itself (the exported graph, its session and tokenizer) lives in :mod:`ltm.llm.onnx_model`, which imports
no llama-index: ltm's store runs it directly, and builds this wrapper only when something asks for the llama-index
embedding (``MemoryStorage.embedder.embedding``, ``resolve_embedding``) or once llama-index is imported, so that
its instrumentation sees the calls as before. One model, one wrapper (:meth:`OnnxEmbedding.of`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.embeddings import base as llama_embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ltm.llm.onnx_model import (
    _SORT_WINDOW,
    OnnxModel,
    export_onnx,
    onnx_available,
    onnx_model_path,
    quantize_int8,
)

__all__ = ["OnnxEmbedding", "export_onnx", "onnx_available", "onnx_model_path", "quantize_int8"]

_wrapping = threading.Lock()  # one wrapper per model, whichever thread asks first


class OnnxEmbedding(BaseEmbedding):
    """A llama-index ``BaseEmbedding`` running an exported sentence-transformers model on ONNX Runtime."""

    _model: OnnxModel = PrivateAttr()

    def __init__(
        self,
        model_dir: str,
        cache_dir: str,
        threads: int = 1,
        embed_batch_size: int = 32,
        int8: bool = False,
        *,
        model: OnnxModel | None = None,
        **kwargs: Any,
    ) -> None:
        # llama-index hands _get_text_embeddings at most embed_batch_size texts: a wider window lets more of a
        # big add_batch be sorted by length together; embed_batch_size still caps one model run
        super().__init__(model_name=model_dir, embed_batch_size=max(embed_batch_size, _SORT_WINDOW), **kwargs)
        self._model = (
            model
            if model is not None
            else OnnxModel(model_dir, cache_dir, threads=threads, embed_batch_size=embed_batch_size, int8=int8)
        )

    @classmethod
    def of(cls, model: OnnxModel) -> OnnxEmbedding:
        """The llama-index embedding over ``model``: made once, then the same object."""
        with _wrapping:
            if model.wrapper is None:
                model.wrapper = cls(model.model_dir, "", embed_batch_size=model.run_max, model=model)
        wrapper: OnnxEmbedding = model.wrapper
        return wrapper

    @property
    def model(self) -> OnnxModel:
        """The runtime this embedding calls."""
        return self._model

    @classmethod
    def class_name(cls) -> str:
        return "OnnxEmbedding"

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` in their order, as an (n, dim) float32 array: the model run without
        llama-index's dispatch around it (span ids, events, callbacks, batching: ~0.5 ms a call on this
        machine, as much as tokenising), sorted by length in windows of ``embed_batch_size`` texts, the ones
        llama-index's batching hands over (see :meth:`OnnxModel.vectors`). ltm's store calls it when nothing
        listens to those (:meth:`unobserved`); llama-index's query entry points (``get_query_embedding`` ...) give
        the same vectors as lists, its text ones (``get_text_embedding_batch`` ...) :meth:`text_vectors`'."""
        return self._model.vectors(texts, self.embed_batch_size)

    def text_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`vectors` for texts to store: a text longer than the model's window gets the mean of its windows'
        vectors (:meth:`OnnxModel.text_vectors`)."""
        return self._model.text_vectors(texts, self.embed_batch_size)

    def _embed_sorted(self, texts: Sequence[str]) -> np.ndarray:
        return self._model.embed_sorted(texts)

    def unobserved(self) -> bool:
        """True when a llama-index call on this embedding would report to nobody: no callback handler, only
        llama-index's null instrumentation handlers on the dispatchers its events go to, no rate limiter and no
        embeddings cache. Then :meth:`vectors` is the same call without the dispatch; once anyone attaches a
        handler (checked on every call), ltm's store goes through the public entry points again."""
        if (
            self.callback_manager.handlers
            or getattr(self, "rate_limiter", None) is not None
            or getattr(self, "embeddings_cache", None) is not None
        ):
            return False
        return _unobserved_dispatch()

    def _get_text_embedding(self, text: str) -> list[float]:
        vector: list[float] = self.text_vectors([text])[0].tolist()
        return vector

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.text_vectors(texts).tolist()
        return vectors

    def _get_query_embedding(self, query: str) -> list[float]:
        vector: list[float] = self.vectors([query])[0].tolist()
        return vector

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


_NULL_HANDLERS: list[type] = []  # llama-index's do-nothing event and span handlers, imported on first use


def _unobserved_dispatch() -> bool:
    """True when the llama-index dispatchers that BaseEmbedding's spans and events go to (its module's, then
    each parent while it propagates) hold only the null handlers llama-index installs by default."""
    dispatcher: Any = getattr(llama_embeddings, "dispatcher", None)
    if dispatcher is None:  # llama-index-core before 0.10.20 (MetaGPT's pin): callbacks were all there was
        return True
    if not _NULL_HANDLERS:
        from llama_index.core.instrumentation.event_handlers import NullEventHandler
        from llama_index.core.instrumentation.span_handlers import NullSpanHandler

        _NULL_HANDLERS.extend((NullEventHandler, NullSpanHandler))
    while True:
        for handler in (*dispatcher.event_handlers, *dispatcher.span_handlers):
            if type(handler) not in _NULL_HANDLERS:
                return False
        if not dispatcher.propagate or not dispatcher.parent_name:
            return True
        dispatcher = dispatcher.parent
