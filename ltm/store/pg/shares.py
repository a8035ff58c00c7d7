"""Whether a filtered dense search on PostgreSQL reads the namespace's HNSW graph or ranks the rows that pass exactly.

pgvector 0.6 (pgserver's) has no filtered graph search (0.8's iterative index scans): a filtered search through the
graph takes its ``ef_search`` nearest and tests the filter on those (:func:`ltm.store.pg.search._graph_then_filter`).
That pays when most rows pass (a LangGraph namespace prefix holding every item), and not when few do: at 10,000 rows
the graph's 384 nearest cost about what the exact ranking of half of them does, so a filter that passes a tenth is
ranked exactly, as before, in a third of the graph's time (docs/frameworks/langgraph.md). The share that passes is
estimated from the filter tested on :data:`FILTER_SAMPLE` of the namespace's rows; the graph is read when that share
of the namespace is :data:`GRAPH_FROM_PASSING` rows or more. Each filter's answer (its SQL and its values) is kept
for :data:`ANSWER_USES` searches: it only steers which way the search goes, both ways return what passes the filter.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ANSWER_USES", "FILTER_SAMPLE", "GRAPH_FROM_PASSING", "FilterShares"]

GRAPH_FROM_PASSING = 5_000  # rows passing a filter from which the graph is read
FILTER_SAMPLE = 500  # rows the filter is tested on to estimate its share
ANSWER_USES = 256  # searches a filter's answer serves before it is sampled again
_KEPT = 1024  # filters remembered per handle


class FilterShares:
    """Namespace ``ns``'s filters: whether a filtered dense search of it reads its graph."""

    def __init__(self, ns: int) -> None:
        self.ns = ns
        self._answers: dict[tuple[str, str], tuple[bool, int]] = {}  # (where, values) -> (graph?, uses left)

    def graph(self, conn: Any, where: str, params: dict[str, Any]) -> bool:
        """Whether the rows of ``where`` (with its ``params``) that pass are many enough for the graph, read
        through ``conn``."""
        key = (where, repr(sorted(params.items())))
        known = self._answers.get(key)
        if known is not None and known[1] > 0:
            self._answers[key] = (known[0], known[1] - 1)
            return known[0]
        live, passed, sampled = conn.execute(
            "SELECT (SELECT live FROM ltm_namespaces WHERE id = %(ns)s), count(*) FILTER (WHERE ok), count(*) "
            f"FROM (SELECT coalesce(({where}), false) AS ok FROM ltm_messages m WHERE m.ns = %(ns)s "
            f"LIMIT {FILTER_SAMPLE}) x",
            {**params, "ns": self.ns},
        ).fetchone()
        broad = bool(sampled) and int(passed) * int(live or 0) >= GRAPH_FROM_PASSING * int(sampled)
        if len(self._answers) >= _KEPT:
            self._answers.clear()
        self._answers[key] = (broad, ANSWER_USES)
        return broad
