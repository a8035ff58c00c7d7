"""Plain baselines computed beside the store in the same run: Okapi BM25 with Porter stemming, and exact
cosine search over the same embedding model, each over "speaker: text" (and dense also over bare text)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from nltk.stem.porter import PorterStemmer

_WORD = re.compile(r"\w+", re.UNICODE)
_STEMMER = PorterStemmer()
_STEMS: dict[str, str] = {}


def tokens(text: str) -> list[str]:
    """Lower-cased Porter stems of the words of ``text``."""
    out = []
    for word in _WORD.findall(text.lower()):
        stem = _STEMS.get(word)
        if stem is None:
            stem = _STEMS[word] = _STEMMER.stem(word)
        out.append(stem)
    return out


class BM25:
    """Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) over in-RAM documents."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = [Counter(tokens(d)) for d in documents]
        self.lengths = np.array([sum(d.values()) for d in self.docs], dtype=np.float64)
        self.avg = float(self.lengths.mean()) if len(self.docs) else 0.0
        self.k1, self.b = k1, b
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.postings: dict[str, list[int]] = {}
        for i, doc in enumerate(self.docs):
            for term in doc:
                self.postings.setdefault(term, []).append(i)

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.docs))
        for term in set(tokens(query)):
            for i in self.postings.get(term, ()):
                tf = self.docs[i][term]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                out[i] += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: str, k: int) -> list[int]:
        s = self.scores(query)
        order = np.argsort(-s, kind="stable")[:k]
        return [int(i) for i in order if s[i] > 0]


def dense_top(doc_vectors: np.ndarray, query_vector: np.ndarray, k: int) -> list[int]:
    """Indexes of the ``k`` documents of highest cosine (rows are unit vectors)."""
    sims = doc_vectors @ query_vector
    return [int(i) for i in np.argsort(-sims, kind="stable")[:k]]


def rrf(rankings: Sequence[Sequence[int]], k: int, constant: int = 60) -> list[int]:
    """Plain reciprocal-rank fusion of several rankings (the issue's reference fusion)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (constant + rank)
    return sorted(scores, key=lambda d: (-scores[d], d))[:k]
