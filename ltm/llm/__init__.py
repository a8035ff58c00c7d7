"""Model clients: the :class:`LLM` protocol and its implementations, embeddings, tokens, the offline summarizer.

"Model" here means a machine-learning model; data models live beside the code that owns them
(:mod:`ltm.files.records`, :mod:`ltm.experience.records`). Names load lazily: importing a light module of this
package (``ltm.llm.names``) does not import llama-index or torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["LLM", "HashEmbedding", "LLMLike", "LlamaIndexLLM", "Summarizer", "resolve_embedding", "resolve_llm"]

_EXPORTS = {
    "LLM": "ltm.llm.base",
    "LLMLike": "ltm.llm.base",
    "LlamaIndexLLM": "ltm.llm.base",
    "Summarizer": "ltm.llm.base",
    "resolve_llm": "ltm.llm.base",
    "HashEmbedding": "ltm.llm.embeddings",
    "resolve_embedding": "ltm.llm.embeddings",
}

if TYPE_CHECKING:
    from ltm.llm.base import LLM, LlamaIndexLLM, LLMLike, Summarizer, resolve_llm
    from ltm.llm.embeddings import HashEmbedding, resolve_embedding


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ltm.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
