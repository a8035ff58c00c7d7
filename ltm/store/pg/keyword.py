"""Which words a keyword search on PostgreSQL ranks: the embedded engine's plan (rarest terms within a budget).

A keyword search ranks every row holding any of its words (``ts_rank_cd`` per row), so one common word makes it
linear in the namespace: ``aaa | note``, a word in every row, took 412 ms at 100k rows. The embedded
engine bounds this with :func:`~ltm.store.search.query.keyword_terms`; so does this one, with the same function: once
the namespace holds more than :data:`~ltm.store.search.query.KEYWORD_BUDGET` rows, each word's document frequency is
counted up to the budget (a ``LIMIT``ed probe of the GIN index, so a common word costs no more than a rare
one), and only the rarest words whose frequencies add up to the budget are OR-ed (all of them AND-ed when even
the rarest is that common). Counts are cached per handle until the namespace grew by a tenth: they only steer
which words a query keeps, so a slightly stale count is harmless (another process's writes included).
"""

from __future__ import annotations

from typing import Any

from ltm.store.pg.search import tsquery_terms
from ltm.store.search import query
from ltm.store.search.query import keyword_terms

__all__ = ["KeywordPlanner"]

_CACHE_MAX = 4096  # terms remembered per handle


class KeywordPlanner:
    """The ``to_tsquery`` input for a query on namespace ``ns``, bounded as the embedded engine bounds it."""

    def __init__(self, ns: int) -> None:
        self.ns = ns
        self._counts: dict[str, int] = {}
        self._rows = 0

    def tsquery(self, conn: Any, text: str) -> str | None:
        """The query's words joined for ``to_tsquery`` (``|`` or ``&``), read through ``conn``; None when no
        word can match."""
        terms = tsquery_terms(text)
        budget = query.KEYWORD_BUDGET
        if len(terms) < 2:
            return terms[0] if terms else None  # one word is ranked whatever its count: nothing to look up
        rows = int(conn.execute("SELECT live FROM ltm_namespaces WHERE id = %s", (self.ns,)).fetchone()[0])
        if rows <= budget:
            return " | ".join(terms)  # the namespace bounds the cost
        kept, joiner = keyword_terms(terms, self._frequencies(conn, terms, rows, budget + 1), rows, budget)
        return (" | " if joiner == "OR" else " & ").join(kept) or None

    def _frequencies(self, conn: Any, terms: list[str], rows: int, cap: int) -> dict[str, int]:
        """{term: rows of the namespace holding it, counted up to ``cap``}, cached (see the module)."""
        if rows > self._rows * 1.1 or len(self._counts) > _CACHE_MAX:
            self._counts, self._rows = {}, rows
        todo = [t for t in dict.fromkeys(terms) if t not in self._counts]
        if todo:
            counts = ", ".join(
                f"(SELECT count(*) FROM (SELECT 1 FROM ltm_messages m WHERE m.ns = %(ns)s "
                f"AND m.fts @@ to_tsquery('english', %(t{i})s) LIMIT %(cap)s) x)"
                for i in range(len(todo))
            )
            # planned with the words' values each time (unprepared): a generic plan cannot tell a rare word,
            # whose rows the GIN index finds, from a common one
            found = conn.execute(
                f"SELECT {counts}",
                {"ns": self.ns, "cap": cap, **{f"t{i}": t for i, t in enumerate(todo)}},
                prepare=False,
            ).fetchone()
            self._counts.update(zip(todo, (int(c) for c in found), strict=True))
        return {t: self._counts[t] for t in terms}
