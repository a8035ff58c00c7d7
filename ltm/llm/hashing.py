"""The ``hash`` embedding's arithmetic, without llama-index: a process that stores with ``embedding="hash"``
never imports llama-index (its import alone takes seconds on a loaded machine).

:func:`hash_vector` is the one definition; :class:`~ltm.llm.embeddings.HashEmbedding` (a llama-index
``BaseEmbedding``, for callers that pass an embedding object) and :class:`PlainHashEmbedding` (what a store
configured with ``embedding="hash"`` loads) both call it, so their vectors are the same.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

__all__ = ["PlainHashEmbedding", "hash_vector"]

_TOKEN = re.compile(r"\w+", re.UNICODE)


def hash_vector(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words vector by signed feature hashing (unigrams and bigrams), L2-normalised."""
    vec = np.zeros(dim, dtype=np.float32)
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    grams = tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]
    for gram in grams:
        digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dim
        vec[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:  # empty text: a fixed unit vector, so it is still a valid embedding
        vec[0], norm = 1.0, 1.0
    result: list[float] = (vec / norm).tolist()
    return result


class PlainHashEmbedding:
    """The hash embedding with the four calls a store's embedder makes (``get_query_embedding``,
    ``get_text_embedding_batch`` and their async twins), and nothing of llama-index."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def get_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query, self.dim)

    def get_text_embedding_batch(self, texts: list[str], **_: object) -> list[list[float]]:
        return [hash_vector(t, self.dim) for t in texts]

    async def aget_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query, self.dim)

    async def aget_text_embedding_batch(self, texts: list[str], **_: object) -> list[list[float]]:
        return [hash_vector(t, self.dim) for t in texts]
