"""Search on PostgreSQL as single SQL statements: dense (pgvector), keyword (tsvector) and hybrid fused in SQL.

- dense: cosine similarity ``1 - (embedding <=> q)``. Exact (the namespace's rows through the ``ns`` index)
  for a small namespace (no HNSW index yet, see :mod:`ltm.store.pg.backend`); else the namespace's own HNSW
  index (``embedding::vector(d)`` with ``ns = <id>`` written into the statement, so the planner can prove the
  partial index applies), with ``hnsw.ef_search`` from the settings. pgvector 0.6 (pgserver's) has no filtered
  graph search (0.8's iterative scans): a filter that many rows pass (:mod:`ltm.store.pg.shares`) takes the
  graph's ``ef_search`` nearest, tests the filter on those, and keeps its best ``fetch`` that pass; should fewer
  pass, the same statement ranks the rows that pass exactly instead (:func:`_graph_then_filter`). Such a search
  is as approximate as an unfiltered one (recall against exact: docs/frameworks/langgraph.md); a selective filter
  is ranked exactly.
- keyword: ``to_tsvector('english', ...)`` stems, weighted by field as the embedded BM25 columns (content A
  1.0; who and when B 0.6; conversation context C 0.3), ranked by ``ts_rank_cd``; the query's words are OR-ed.
- a long multi-line query (hybrid only): the dense candidates are scored exactly by
  :func:`ltm.store.search.fusion.line_scores` (each line's cosine from ``unnest`` of the line vectors), as the embedded
  engine scores them.
- hybrid: each signal's top ``max(3k, 50)`` candidates with their scores, all in ONE statement (a CTE per
  signal), fused by the embedded engine's calibrated fusion (:func:`ltm.store.search.fusion.fuse`), so both engines
  rank alike; the query verbatim first.

Every statement, down to the join that fetches the candidates' bodies, says ``m.ns = ...``: on a database
partitioned by namespace (``Settings.store_partitions``) the planner then reads one partition, not all of them
(``seq`` is unique only within a namespace's partition there: the primary key is ``(ns, seq)``).
"""

from __future__ import annotations

import re
from typing import Any

from ltm.store.search.fusion import LINE_WHOLE
from ltm.store.search.query import query_terms

__all__ = [
    "TSQUERY_WEIGHTS",
    "candidates_sql",
    "dense_expr",
    "search_sql",
    "tsquery_terms",
    "tsquery_text",
    "vector_text",
    "words",
]

TSQUERY_WEIGHTS = "{0.1, 0.3, 0.6, 1.0}"  # ts_rank_cd's D, C, B, A
_WORD = re.compile(r"\w+", re.UNICODE)


def tsquery_text(query: str) -> str | None:
    """``to_tsquery`` input OR-ing the query's words; None when the query has none."""
    terms = tsquery_terms(query)
    return " | ".join(terms) if terms else None


def tsquery_terms(query: str) -> list[str]:
    """The query's words (:func:`~ltm.store.search.query.query_terms`) that are letters, digits and _ only: nothing
    for ``to_tsquery``'s parser to misread."""
    return [t for t in query_terms(query) if t.replace("_", "").isalnum()]


def words(text: str) -> str:
    """``text`` as the words a query is split into (``\\w+``, as :func:`~ltm.store.search.query.query_terms`), so
    the server's parser sees "2023-06-01" as the words 2023, 06 and 01, not a date and two signed numbers."""
    return " ".join(_WORD.findall(text))


def vector_text(vector: Any) -> str:
    """pgvector's text form of one vector (exact: repr of each float32)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def dense_expr(column: str, dim: int | None, hnsw: bool, ns: int) -> tuple[str, str]:
    """(expression, extra WHERE) for a distance over ``column``: for HNSW, the index's expression and its
    predicate as literals (a parameter would not prove that the partial index ``WHERE ns = .. AND dim = ..``
    applies once psycopg prepares the statement)."""
    if hnsw and dim is not None:
        return f"m.{column}::vector({int(dim)})", f" AND m.ns = {int(ns)} AND m.dim = {int(dim)}"
    return f"m.{column}", ""


def _signals(
    where: str, *, dense: bool, context: bool, keyword: bool, dim: int | None, hnsw: bool, ns: int, lines: bool = False
) -> tuple[list[str], list[str]]:
    """(CTEs, SELECTs over them) of the signals asked for: rows (seq, rank, score, signal, order)."""
    ctes: list[str] = []
    parts: list[str] = []
    if dense and lines:  # exact: the best line's cosine and the whole query's, as fusion.line_scores
        ctes.append(
            "dense AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r, s FROM ("
            "SELECT m.seq, ((SELECT max(1 - (m.embedding <=> l.v)) FROM unnest(%(lines)s::vector[]) AS l(v)) "
            f"+ {LINE_WHOLE!r} * (1 - (m.embedding <=> %(q)s))) / {1.0 + LINE_WHOLE!r} AS s FROM ltm_messages m "
            f"WHERE m.ns = %(ns)s AND ({where}) ORDER BY s DESC, m.seq LIMIT %(fetch)s) x)"
        )
        parts.append("SELECT seq, r, s, 'dense' AS sig, 1 AS o FROM dense")
    elif dense and hnsw and where != "TRUE":
        ctes.extend(_graph_then_filter(where, dim, ns))
        parts.append("SELECT seq, r, s, 'dense' AS sig, 1 AS o FROM dense")
    elif dense:
        expr, extra = dense_expr("embedding", dim, hnsw, ns)
        ctes.append(
            f"dense AS (SELECT seq, row_number() OVER (ORDER BY d, seq) AS r, 1 - d AS s FROM ("
            f"SELECT m.seq, {expr} <=> %(q)s AS d FROM ltm_messages m WHERE m.ns = %(ns)s{extra} AND ({where}) "
            f"ORDER BY d LIMIT %(fetch)s) x)"
        )
        parts.append("SELECT seq, r, s, 'dense' AS sig, 1 AS o FROM dense")
    if context:
        ctes.append(
            "ctx AS (SELECT seq, row_number() OVER (ORDER BY d, seq) AS r, 1 - d AS s FROM ("
            "SELECT m.seq, m.context_embedding <=> %(q)s AS d FROM ltm_messages m WHERE m.ns = %(ns)s "
            f"AND m.context_embedding IS NOT NULL AND ({where}) ORDER BY d LIMIT %(fetch)s) x)"
        )
        parts.append("SELECT seq, r, s, 'context' AS sig, 2 AS o FROM ctx")
    if keyword:
        ctes.append(
            "kw AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r, s FROM ("
            f"SELECT m.seq, ts_rank_cd('{TSQUERY_WEIGHTS}', m.fts, t.q)::float8 AS s FROM ltm_messages m, "
            "to_tsquery('english', %(tsq)s) AS t(q) "
            f"WHERE m.ns = %(ns)s AND m.fts @@ t.q AND ({where}) ORDER BY s DESC, m.seq LIMIT %(fetch)s) x)"
        )
        parts.append("SELECT seq, r, s, 'keyword' AS sig, 3 AS o FROM kw")
    return ctes, parts


def _graph_then_filter(where: str, dim: int | None, ns: int) -> list[str]:
    """The CTEs of a filtered dense side through the namespace's HNSW index: the graph's ``%(graph)s`` nearest
    (the search's ``hnsw.ef_search``, all pgvector 0.6 hands back) with the filter tested on each, then their best
    ``%(fetch)s`` that pass; when fewer than that pass, the namespace's rows that pass, exactly, instead (a
    selective filter: few rows to scan). Each branch is gated by the count, so only one of them runs."""
    expr, extra = dense_expr("embedding", dim, True, ns)
    passed = "(SELECT count(*) FROM graph WHERE ok)"
    return [
        f"graph AS MATERIALIZED (SELECT m.seq, {expr} <=> %(q)s AS d, coalesce(({where}), false) AS ok "
        f"FROM ltm_messages m WHERE m.ns = %(ns)s{extra} ORDER BY d LIMIT %(graph)s)",
        "dense AS (SELECT seq, row_number() OVER (ORDER BY d, seq) AS r, 1 - d AS s FROM ("
        f"(SELECT seq, d FROM graph WHERE ok AND {passed} >= %(fetch)s ORDER BY d, seq LIMIT %(fetch)s) UNION ALL "
        f"(SELECT m.seq, m.embedding <=> %(q)s AS d FROM ltm_messages m WHERE m.ns = %(ns)s AND ({where}) "
        f"AND {passed} < %(fetch)s ORDER BY d LIMIT %(fetch)s)) x)",
    ]


def search_sql(
    mode: str, where: str, *, dense: bool, context: bool, keyword: bool, dim: int | None, hnsw: bool, ns: int
) -> str:
    """The statement for a one-signal search (dense or keyword mode): rows (body, score, signals), best first.
    Parameters ``ns``, ``q`` (a vector), ``tsq``, ``fetch``, ``k`` and the filter's."""
    ctes, parts = _signals(where, dense=dense, context=context, keyword=keyword, dim=dim, hnsw=hnsw, ns=ns)
    if not parts:
        return ""
    return (
        f"WITH {', '.join(ctes)} SELECT m.body, u.s, ARRAY[u.sig] FROM ({' UNION ALL '.join(parts)}) u "
        "JOIN ltm_messages m ON m.ns = %(ns)s AND m.seq = u.seq ORDER BY u.s DESC, u.seq LIMIT %(k)s"
    )


def candidates_sql(
    where: str, *, dense: bool, context: bool, keyword: bool, dim: int | None, hnsw: bool, ns: int, lines: bool = False
) -> str:
    """ONE statement for a hybrid search: every signal's candidates (dense HNSW or exact, context, tsvector
    keyword) with their scores and bodies, rows (signal, seq, score, body) in each signal's rank order. The
    fusion itself is :func:`ltm.store.search.fusion.fuse`, the embedded engine's, so both rank alike. ``lines``: the
    dense signal by the line vectors (parameter ``lines``, a list of vectors) too."""
    ctes, parts = _signals(where, dense=dense, context=context, keyword=keyword, dim=dim, hnsw=hnsw, ns=ns, lines=lines)
    if not parts:
        return ""
    return (
        f"WITH {', '.join(ctes)} SELECT u.sig, u.seq, u.s, m.body FROM ({' UNION ALL '.join(parts)}) u "
        "JOIN ltm_messages m ON m.ns = %(ns)s AND m.seq = u.seq ORDER BY u.o, u.r"
    )
