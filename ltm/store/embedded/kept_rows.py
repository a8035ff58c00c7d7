"""What a hybrid search reads of each candidate, kept in RAM beside the vector index: :class:`KeptRows`.

A search's ~100 candidates each need their time, names, content and content vector (the fusion, the prior, the
near-exact test and the hits' cosines: :class:`~ltm.store.embedded.log.CandidateRow`); reading them from SQLite
after the model was the largest part of the hybrid search's own work (docs/SEARCH_SPEED.md). None of those fields
changes while the row lives (an update closes a version's metadata and validity only, an expiry sets its own
column, a replaced message gets a new seq), so each row is kept as written: :class:`~ltm.store.embedded.mirror.
IndexMirror` puts every row this process commits (with the very float32 vector FAISS is given, which is what a read
of the stored float16 copy decodes to) and the rows a search had to read, and drops each row the moment the indexes
drop it (this process's deletes, and other processes' tombstones at the next sync). A search reads only the rows
it does not find here. At most :data:`ROWS_KEPT` rows, the oldest put first out.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence

import numpy as np

from ltm.store.embedded.log import CandidateRow, names_of
from ltm.store.records import Row

__all__ = ["ROWS_KEPT", "KeptRows"]

# rows kept per namespace, ~2 KB each with its float32 vector: 40 MB when full, every row of a flat index (the
# default hnsw_threshold), so a process holding many namespaces keeps its memory bounded per namespace
ROWS_KEPT = 20_000


class KeptRows:
    """The candidate rows of one namespace's live messages, by seq (bodies are not kept: only the hits need them)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = ROWS_KEPT if limit is None else limit
        self._rows: dict[int, CandidateRow] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def found(self, seqs: Iterable[int]) -> dict[int, CandidateRow]:
        """The kept rows of ``seqs``."""
        rows = self._rows
        return {s: row for s in seqs if (row := rows.get(s)) is not None}

    def put(self, rows: Iterable[CandidateRow]) -> None:
        """Keep ``rows`` (a body is left out), dropping the oldest kept past the limit."""
        kept = self._rows
        for row in rows:
            kept[row.seq] = row if row.body is None else row._replace(body=None)
        excess = len(kept) - self.limit
        if excess > 0:  # the oldest first: a dict iterates in insertion order (only the excess is walked)
            for seq in list(itertools.islice(kept, excess)):
                del kept[seq]

    def written(self, inserted: Sequence[tuple[int, Row]], vectors: np.ndarray) -> None:
        """Keep the rows a write committed: (seq, row) with the content vectors FAISS was given, in that order.
        The content is the keyword index's (the body's, :func:`~ltm.store.search.query.keyword_columns`); a row
        whose speaker SQLite's ``json_extract`` might not give back as JSON parsing does (anything but a string),
        or whose text holds a NUL, is left for a search to read."""
        out = []
        for (seq, row), vector in zip(inserted, vectors, strict=True):
            speaker = _speaker(row.metadata)
            content = row.fts[0]
            if speaker is not False and "\x00" not in content:
                names = names_of(speaker, row.sent_from, row.role)
                out.append(CandidateRow(seq, row.created_at, names, content, vector, None))
        self.put(out)

    def drop(self, seqs: Iterable[int]) -> None:
        """Forget the rows of ``seqs`` (deleted)."""
        kept = self._rows
        for seq in seqs:
            kept.pop(int(seq), None)

    def clear(self) -> None:
        self._rows.clear()


def _speaker(metadata: str) -> str | None | bool:
    """A written row's ``metadata.speaker`` as ``MessageLog.candidates`` reads it (None when absent), or False
    when unsure (not a string, or a NUL in it)."""
    if '"speaker"' not in metadata:
        return None
    try:
        speaker = json.loads(metadata).get("speaker")
    except (ValueError, AttributeError):
        return False
    if speaker is None or (isinstance(speaker, str) and "\x00" not in speaker):
        return speaker
    return False
