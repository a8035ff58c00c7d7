"""Search on PostgreSQL as single SQL statements: dense (pgvector), keyword (tsvector) and hybrid fused in SQL.

- dense: cosine similarity ``1 - (embedding <=> q)``. Exact (the namespace's rows through the ``ns`` index)
  below ``Settings.hnsw_threshold`` live vectors or when filtered, as the embedded store's flat index; above
  it, the per-dimension HNSW index (``embedding::vector(d)``), with ``hnsw.ef_search`` from the settings.
  (pgvector 0.6 filters HNSW results after the scan, so a filtered query stays exact to keep its k.)
- keyword: ``to_tsvector('english', ...)`` stems, weighted by field as the embedded BM25 columns (content A
  1.0; who and when B 0.6; conversation context C 0.3), ranked by ``ts_rank_cd``; the query's words are OR-ed.
- hybrid: each signal's top ``max(3k, 50)`` in a CTE, fused by reciprocal rank (``1 / (60 + rank)`` summed)
  in the same statement; ties by insertion order, as :func:`ltm.store.query.fuse`.
"""

from __future__ import annotations

import re
from typing import Any

from ltm.store.query import query_terms

__all__ = ["TSQUERY_WEIGHTS", "dense_expr", "search_sql", "tsquery_text", "vector_text", "words"]

TSQUERY_WEIGHTS = "{0.1, 0.3, 0.6, 1.0}"  # ts_rank_cd's D, C, B, A
RRF_K = 60  # the usual reciprocal-rank-fusion constant: rank r contributes 1 / (60 + r)
_WORD = re.compile(r"\w+", re.UNICODE)


def tsquery_text(query: str) -> str | None:
    """``to_tsquery`` input OR-ing the query's words (letters, digits, _ only: nothing for the parser to
    misread); None when the query has none."""
    terms = [t for t in query_terms(query) if t.replace("_", "").isalnum()]
    return " | ".join(terms) if terms else None


def words(text: str) -> str:
    """``text`` as the words a query is split into (``\\w+``, as :func:`~ltm.store.query.query_terms`), so
    the server's parser sees "2023-06-01" as the words 2023, 06 and 01, not a date and two signed numbers."""
    return " ".join(_WORD.findall(text))


def vector_text(vector: Any) -> str:
    """pgvector's text form of one vector (exact: repr of each float32)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def dense_expr(column: str, dim: int | None, hnsw: bool) -> tuple[str, str]:
    """(expression, extra WHERE) for a distance over ``column``: cast to the indexed dimension for HNSW."""
    if hnsw and dim is not None:
        return f"m.{column}::vector({int(dim)})", f" AND m.dim = {int(dim)}"
    return f"m.{column}", ""


def search_sql(mode: str, where: str, *, dense: bool, context: bool, keyword: bool, dim: int | None,
               hnsw: bool) -> str:
    """The statement for one search; parameters ``ns``, ``q`` (a vector), ``tsq``, ``fetch``, ``k`` and
    the filter's. Returns rows (body, score, signals)."""
    ctes: list[str] = []
    parts: list[str] = []
    if dense:
        expr, extra = dense_expr("embedding", dim, hnsw)
        ctes.append(
            f"dense AS (SELECT seq, row_number() OVER (ORDER BY d, seq) AS r, 1 - d AS s FROM ("
            f"SELECT m.seq, {expr} <=> %(q)s AS d FROM ltm_messages m WHERE m.ns = %(ns)s{extra} AND ({where}) "
            f"ORDER BY d LIMIT %(fetch)s) x)")
        parts.append("SELECT seq, r, s, 'dense' AS sig, 1 AS o FROM dense")
    if context:
        ctes.append(
            "ctx AS (SELECT seq, row_number() OVER (ORDER BY d, seq) AS r, 1 - d AS s FROM ("
            "SELECT m.seq, m.context_embedding <=> %(q)s AS d FROM ltm_messages m WHERE m.ns = %(ns)s "
            f"AND m.context_embedding IS NOT NULL AND ({where}) ORDER BY d LIMIT %(fetch)s) x)")
        parts.append("SELECT seq, r, s, 'context' AS sig, 2 AS o FROM ctx")
    if keyword:
        ctes.append(
            "kw AS (SELECT seq, row_number() OVER (ORDER BY s DESC, seq) AS r, s FROM ("
            f"SELECT m.seq, ts_rank_cd('{TSQUERY_WEIGHTS}', m.fts, t.q)::float8 AS s FROM ltm_messages m, "
            "to_tsquery('english', %(tsq)s) AS t(q) "
            f"WHERE m.ns = %(ns)s AND m.fts @@ t.q AND ({where}) ORDER BY s DESC, m.seq LIMIT %(fetch)s) x)")
        parts.append("SELECT seq, r, s, 'keyword' AS sig, 3 AS o FROM kw")
    if not parts:
        return ""
    union = " UNION ALL ".join(parts)
    # hybrid: reciprocal rank fusion; one signal: its own score (cosine, or ts_rank_cd)
    score = f"sum(1.0::float8 / ({RRF_K} + r))" if mode == "hybrid" else "max(s)"
    return (
        f"WITH {', '.join(ctes)} "
        f"SELECT m.body, f.score, f.signals FROM (SELECT seq, {score} AS score, array_agg(sig ORDER BY o) AS signals "
        f"FROM ({union}) u GROUP BY seq ORDER BY score DESC, seq LIMIT %(k)s) f "
        "JOIN ltm_messages m ON m.seq = f.seq ORDER BY f.score DESC, f.seq"
    )
