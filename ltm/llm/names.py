"""The names stores record for their embedding model, known from the settings alone (no model is loaded).

A store checks its manifest against this name when it opens; loading the model itself waits until something
is embedded, so reads (``recent``, ``get``, ``stats``, ``export``) never pay for it.
"""

from __future__ import annotations

from ltm.config import Settings

__all__ = ["DEFAULT_OPENAI_EMBEDDING_MODEL", "LOCAL_MODEL_NAME", "configured_dim", "configured_model_name"]

LOCAL_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"


def configured_model_name(settings: Settings) -> str:
    """The manifest name of the embedding ``settings.embedding`` selects, equal to what
    :func:`ltm.llm.embeddings.model_name` gives for the loaded embedding."""
    if settings.embedding == "hash":
        return f"hash-{settings.embedding_dim}"
    if settings.embedding == "openai":
        return settings.embedding_model or DEFAULT_OPENAI_EMBEDDING_MODEL
    return LOCAL_MODEL_NAME


_KNOWN_DIMS = {
    LOCAL_MODEL_NAME: 384,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def configured_dim(settings: Settings) -> int | None:
    """The dimension of the embedding ``settings`` selects when it is known without loading or calling it
    (None for an OpenAI-compatible model not listed here)."""
    if settings.embedding == "hash":
        return settings.embedding_dim
    return _KNOWN_DIMS.get(configured_model_name(settings))
