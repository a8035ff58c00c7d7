"""Ranking metrics over turn ids: recall@k, MRR (first relevant within the depth) and binary nDCG@k."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

KS = (1, 5, 10)
METRICS = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")


def recall(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """Share of the evidence among the first ``k`` ranked ids."""
    wanted = set(evidence)
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def mrr(ranked: Sequence[str], evidence: Iterable[str], depth: int = 10) -> float:
    """1 / rank of the first evidence id within ``depth``, else 0."""
    wanted = set(evidence)
    return next((1.0 / rank for rank, tid in enumerate(ranked[:depth], 1) if tid in wanted), 0.0)


def ndcg(ranked: Sequence[str], evidence: Iterable[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k: each evidence id found counts 1 / log2(rank + 1), over the ideal order."""
    wanted = set(evidence)
    gain = sum(1.0 / math.log2(rank + 1) for rank, tid in enumerate(ranked[:k], 1) if tid in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return gain / ideal if ideal else 0.0


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """Every metric of one ranked list."""
    out = {f"recall@{k}": recall(ranked, evidence, k) for k in KS}
    out["mrr"] = mrr(ranked, evidence)
    out["ndcg@10"] = ndcg(ranked, evidence)
    return out


def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    """Metric-wise mean of per-question scores (zeros when there are none)."""
    return {m: (sum(r[m] for r in rows) / len(rows) if rows else 0.0) for m in METRICS}
