"""A disk cache of embedding vectors (bench/data/cache/, git-ignored), so repeated quality runs embed each
text once. The store still goes through its ordinary path (add_batch embeds through this model); only quality
is measured with it: ingest and search times come from ``python -m bench.retrieval.latency``."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr


class CachedEmbedding(BaseEmbedding):
    """Wraps a llama-index embedding; vectors are kept in a SQLite file keyed by (model, kind, text)."""

    _inner: Any = PrivateAttr()
    _db: Any = PrivateAttr()

    def __init__(self, inner: BaseEmbedding, path: Path, **kwargs: Any) -> None:
        super().__init__(model_name=inner.model_name, embed_batch_size=inner.embed_batch_size, **kwargs)
        self._inner = inner
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS v(key BLOB PRIMARY KEY, vec BLOB)")

    def _key(self, kind: str, text: str) -> bytes:
        return hashlib.sha256(f"{self.model_name}\x00{kind}\x00{text}".encode("utf-8", "surrogatepass")).digest()

    def _kinds(self, kind: str, texts: list[str]) -> list[str]:
        """``kind`` per text, but ``text-windows`` for a text ltm's local model embeds window by window (longer
        than its window): a vector cached before it did so holds the first window only, and is not reused."""
        model: Any = getattr(self._inner, "model", None)
        if kind != "text" or not hasattr(model, "windows"):
            return [kind] * len(texts)
        encodings = model._tokenizer.encode_batch(texts)
        return [f"{kind}-windows" if e.overflowing else kind for e in encodings]

    def _many(self, kind: str, texts: list[str]) -> list[list[float]]:
        keys = [self._key(k, t) for k, t in zip(self._kinds(kind, texts), texts, strict=True)]
        found: dict[bytes, list[float]] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self._db.execute(f"SELECT key, vec FROM v WHERE key IN ({','.join('?' * len(part))})", part)
            found.update({bytes(k): np.frombuffer(b, dtype=np.float32).tolist() for k, b in rows})
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            if kind == "query":
                vecs = [self._inner.get_query_embedding(texts[i]) for i in todo]
            else:
                vecs = self._inner.get_text_embedding_batch([texts[i] for i in todo])
            with self._db:
                for i, vec in zip(todo, vecs, strict=True):
                    found[keys[i]] = list(vec)
                    self._db.execute(
                        "INSERT OR REPLACE INTO v VALUES (?, ?)", (keys[i], np.asarray(vec, dtype=np.float32).tobytes())
                    )
        return [found[k] for k in keys]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._many("query", [query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._many("text", [text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._many("text", texts)


def local_model() -> CachedEmbedding:
    """ltm's local model (all-MiniLM-L6-v2) behind the shared cache ``bench/data/cache/vectors.sqlite``: what the
    retrieval scripts and the index probes embed the public sets with."""
    from bench import ROOT
    from ltm.config import Settings
    from ltm.llm.embeddings import resolve_embedding

    cache = ROOT / "bench" / "data" / "cache" / "vectors.sqlite"  # bench.retrieval.run's DATA_DIR
    return CachedEmbedding(resolve_embedding(Settings(embedding="local")), cache)
