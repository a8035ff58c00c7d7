"""Per-signal scores of the embedded engine's hits, for ``search(explain=True)`` and a keyword ``threshold`` (a
dense or hybrid one compares the hits' ``similarity``): read from the stored vectors and FTS5 (the facade's half:
:mod:`ltm.store.search.explain`)."""

from __future__ import annotations

import numpy as np

from ltm.store.embedded.keywords import BM25_WEIGHTS
from ltm.store.embedded.log import MessageLog, translate
from ltm.store.records import unpack
from ltm.store.search.explain import Signals

__all__ = ["sqlite_signals"]


def sqlite_signals(log: MessageLog, vector: np.ndarray | None, match: str | None) -> Signals:
    """The embedded engine's per-signal scores: dot products with the stored vectors, ``-bm25`` for the hits
    matching the FTS5 query ``match``."""
    query = None if vector is None else np.asarray(vector, dtype=np.float32).reshape(-1)

    def scores(ids: list[str]) -> dict[str, dict[str, float]]:
        with translate(log.path):
            rows = {
                str(r[0]): r[1:]
                for r in log.db.execute(
                    "SELECT id, seq, embedding, context_embedding FROM messages "
                    f"WHERE id IN ({','.join('?' * len(ids))})",
                    ids,
                )
            }
            keyword = _keyword(log, match, [int(r[0]) for r in rows.values()])
        out: dict[str, dict[str, float]] = {}
        for message_id, (seq, content, context) in rows.items():
            found: dict[str, float] = {}
            if query is not None:
                found["dense"] = float(unpack(content) @ query)
                if context is not None:
                    found["context"] = float(unpack(context) @ query)
            if int(seq) in keyword:
                found["keyword"] = keyword[int(seq)]
            out[message_id] = found
        return out

    return scores


def _keyword(log: MessageLog, match: str | None, seqs: list[int]) -> dict[int, float]:
    if match is None or not seqs:
        return {}
    sql = (
        f"SELECT rowid, -bm25(fts, {BM25_WEIGHTS}) FROM fts WHERE fts MATCH ? "
        f"AND rowid IN ({','.join('?' * len(seqs))})"
    )
    return {int(s): float(v) for s, v in log.db.execute(sql, [match, *seqs])}
