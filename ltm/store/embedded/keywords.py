"""The keyword index's reads over a namespace's ``memory.sqlite`` (:class:`KeywordReads`, a base of
:class:`~ltm.store.embedded.log.MessageLog`): BM25 candidates, the capped term counts that choose a query's terms,
and the speaker names a question can name, with the two answers kept in this process between writes.

The index is an FTS5 table over each message's content, who said it, when, and its neighbouring turns, stemmed
(porter over unicode61: "hobbies" finds "hobby", "moved" finds "moving"); schema <= 2 stores had unicode61 alone
and get their index rebuilt from the log on open (:func:`ltm.store.embedded.migrations.rebuild_keywords`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ltm.store.embedded.sqlite_errors import translate
from ltm.store.search.speakers import NAME_ROWS

__all__ = ["BM25_WEIGHTS", "FTS_SPEC", "KeywordReads"]

FTS_SPEC = "fts5(content, who, at, context, tokenize='porter unicode61 remove_diacritics 2')"
# BM25 column weights: the turn's own words count most, who said it and when next, neighbouring turns least.
BM25_WEIGHTS = "1.0, 0.6, 0.6, 0.3"
_NAMES_KEPT = 4096  # words whose speaker_names answer is kept between writes
_DF_CACHE_MAX = 50_000  # terms whose (capped) document frequency is remembered between keyword searches


class KeywordReads:
    """The keyword index's reads of one namespace's connection (``db``; the store serialises calls)."""

    db: sqlite3.Connection
    path: Path

    def _start_keyword_reads(self) -> None:
        """What the reads keep in this process, empty."""
        self._df: dict[str, int] = {}  # term -> rows holding it (capped), measured when the table had _df_rows
        self._df_rows = 0
        # speaker_names' answers, valid while nothing was written (by this connection or another)
        self._names: dict[str, set[str]] = {}
        self._names_state: tuple[int, int] = (-1, -1)

    def forget_doc_freqs(self) -> None:
        """Drop the remembered term counts (the keyword index was rebuilt)."""
        self._df, self._df_rows = {}, 0

    def doc_freqs(self, terms: Sequence[str], cap: int, rows: int) -> dict[str, int]:
        """{term: rows holding it, counted up to ``cap``} in a table of about ``rows`` rows.

        Counting stops at ``cap`` so a common term costs no more than a rare one (fts5vocab would walk its
        whole doclist). Counts are cached in this process until the table has grown by a tenth: they only
        steer which terms a query keeps, so a slightly stale count is harmless.
        """
        if rows > self._df_rows * 1.1 or len(self._df) > _DF_CACHE_MAX:
            self._df, self._df_rows = {}, rows
        todo = [t for t in dict.fromkeys(terms) if t not in self._df]
        with translate(self.path):
            for start in range(0, len(todo), 32):  # one statement per 32 terms
                part = todo[start : start + 32]
                counts = ",".join(
                    f"(SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ?{i + 1} LIMIT {int(cap)}))"
                    for i in range(len(part))
                )
                found = self.db.execute(f"SELECT {counts}", ['"' + t.replace('"', '""') + '"' for t in part])
                self._df.update(zip(part, (int(c) for c in found.fetchone()), strict=True))
        return {t: self._df[t] for t in terms}

    def speaker_names(self, words: Sequence[str]) -> dict[str, set[str]]:
        """{word: the speaker, ``sent_from`` and role names of up to ``NAME_ROWS`` live messages whose keyword
        index's *who* column holds it} for each of ``words`` (lower case) some message's names hold (one indexed
        lookup each; :mod:`ltm.store.search.speakers`)."""
        sql = (
            f"SELECT json_extract(m.metadata, '$.speaker'), m.sent_from, m.role FROM (SELECT rowid FROM fts "
            f"WHERE fts MATCH ? LIMIT {NAME_ROWS}) f JOIN messages m ON m.seq = f.rowid"
        )
        with translate(self.path):
            # answers are kept until a write: one by this connection moves total_changes, another's data_version
            state = (int(self.db.execute("PRAGMA data_version").fetchone()[0]), self.db.total_changes)
            if state != self._names_state or len(self._names) > _NAMES_KEPT:
                self._names, self._names_state = {}, state
            for word in dict.fromkeys(words):
                if word not in self._names:
                    rows = self.db.execute(sql, ['who : "' + word.replace('"', '""') + '"']).fetchall()
                    self._names[word] = {str(v) for row in rows for v in row if v}
        return {word: self._names[word] for word in words if self._names[word]}

    def keyword(self, match: str, limit: int, where: str, params: Sequence[Any]) -> list[tuple[int, float]]:
        """(seq, score) by BM25, best first; score = -bm25 so higher is better (>= 0).

        Unfiltered (``where`` is "1"), the keyword index alone answers: its rows are written and deleted with
        the messages' in one transaction, so joining the table back, which cost a lookup per matching row
        before ``LIMIT`` applies, only slowed the query (3-7 ms -> 0.9 ms at 5,000 chat turns)."""
        if where == "1" and not params:
            sql = f"SELECT rowid, -bm25(fts, {BM25_WEIGHTS}) FROM fts WHERE fts MATCH ? ORDER BY 2 DESC LIMIT ?"
        else:
            sql = (
                f"SELECT m.seq, -bm25(fts, {BM25_WEIGHTS}) FROM fts JOIN messages m ON m.seq = fts.rowid "
                f"WHERE fts MATCH ? AND ({where}) ORDER BY 2 DESC LIMIT ?"
            )
        with translate(self.path):
            rows = self.db.execute(sql, [match, *params, limit]).fetchall()
        return [(int(s), float(v)) for s, v in rows]

    def term_stats(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The keyword index's rows and, per term, how many hold it (uncapped): a term's BM25 inverse document
        frequency in this namespace (what a search across namespaces sums over them)."""
        with translate(self.path):
            rows = int(self.db.execute("SELECT count(*) FROM fts").fetchone()[0])
            df = {
                t: int(self.db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", [_phrase(t)]).fetchone()[0])
                for t in terms
            }
        return rows, df

    def term_scores(self, term: str, ids: Sequence[str]) -> list[tuple[str, float]]:
        """(id, ``-bm25`` for ``term`` alone) of the messages ``ids`` that hold it."""
        sql = (
            f"SELECT m.id, -bm25(fts, {BM25_WEIGHTS}) FROM fts JOIN messages m ON m.seq = fts.rowid "
            f"WHERE fts MATCH ? AND m.id IN ({','.join('?' * len(ids))})"
        )
        with translate(self.path):
            return [(str(i), float(v)) for i, v in self.db.execute(sql, [_phrase(term), *ids])]


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
