"""The reads of a namespace's stored vectors (:class:`VectorReads`, a base of
:class:`~ltm.store.embedded.log.MessageLog`): what the FAISS mirror replays (rows and tombstones after a point),
the embedder's cache by content key, and the content vectors of given rows, each decoded from SQLite's float16
blobs in one pass to exactly the float32 values the index holds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltm.store.embedded.sqlite_errors import translate
from ltm.store.records import VECTOR_DTYPE, decode, unpack

__all__ = ["CONTENT", "CONTEXT", "VectorReads"]

CONTENT, CONTEXT = "embedding", "context_embedding"  # the two vector columns


class VectorReads:
    """The stored vectors' reads of one namespace's connection (``db``; the store serialises calls)."""

    db: sqlite3.Connection
    path: Path

    if TYPE_CHECKING:  # MessageLog's

        def where_in(self, sql: str, values: Sequence[Any]) -> Iterator[Any]: ...

    def vectors_after(self, seq: int, column: str = CONTENT) -> tuple[np.ndarray, np.ndarray]:
        """(seqs, vectors) of live rows with seq > ``seq`` and a vector in ``column``, in seq order."""
        if column not in (CONTENT, CONTEXT):
            raise ValueError(f"no vector column {column!r}")
        return self._vectors(
            f"SELECT seq, {column} FROM messages WHERE seq > ? AND {column} IS NOT NULL ORDER BY seq", (seq,)
        )

    def tombstones_after(self, tseq: int) -> np.ndarray:
        with translate(self.path):
            rows = self.db.execute("SELECT seq FROM tombstones WHERE tseq > ?", (tseq,)).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def _vectors(self, sql: str, params: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
        with translate(self.path):
            return _stacked(self.db.execute(sql, params).fetchall())

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Stored embeddings by content key (the store's embedding cache)."""
        rows = self.where_in("SELECT text_key, embedding FROM messages WHERE text_key IN ({marks})", keys)
        return {bytes(key): unpack(blob) for key, blob in rows}

    def seqs_by_key(self, keys: Sequence[bytes]) -> dict[bytes, list[int]]:
        """Seqs of the live messages whose content key is in ``keys`` (exact stored content), by key."""
        found: dict[bytes, list[int]] = {}
        sql = "SELECT text_key, seq FROM messages WHERE text_key IN ({marks}) ORDER BY seq DESC"
        for key, seq in self.where_in(sql, keys):
            found.setdefault(bytes(key), []).append(int(seq))
        return found

    def vectors_of(self, seqs: Sequence[int]) -> dict[int, np.ndarray]:
        """Content vectors by seq as an unquantized index holds them (absent seqs were deleted meanwhile)."""
        # decoded together: one pass instead of one numpy round per vector (~10 us each; a dense search at 1M
        # rescores 20, find_news hundreds), the same float32 rows as vectors_after gives the index
        found, matrix = _stacked(
            list(self.where_in("SELECT seq, embedding FROM messages WHERE seq IN ({marks})", [int(s) for s in seqs]))
        )
        return {int(seq): row for seq, row in zip(found, matrix, strict=True)}


def _stacked(rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(seqs, float32 unit vectors) of ``(seq, blob)`` rows, decoded in one pass."""
    seqs = np.array([r[0] for r in rows], dtype=np.int64)
    if not rows:
        return seqs, np.zeros((0, 0), dtype=np.float32)
    blob = b"".join(r[1] for r in rows)
    return seqs, decode(np.frombuffer(blob, dtype=VECTOR_DTYPE).reshape(len(rows), -1))
