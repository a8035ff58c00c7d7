"""Model clients: the :class:`LLM` protocol and its implementations, embeddings, tokens, the offline summarizer.

"Model" here means a machine-learning model; data models live beside the code that owns them
(:mod:`ltm.files.records`, :mod:`ltm.experience.records`).
"""

from __future__ import annotations

from ltm.llm.base import LLM, LlamaIndexLLM, resolve_llm
from ltm.llm.embeddings import HashEmbedding, resolve_embedding

__all__ = ["LLM", "HashEmbedding", "LlamaIndexLLM", "resolve_embedding", "resolve_llm"]
