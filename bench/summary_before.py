"""ltm's offline summary and title as they were at e6caf84 (ltm 0.1.0), kept as the "before" baseline
of ``python -m bench.summary`` so that every figure comes from one run: TF-IDF degree centrality over distinct
sentences, the text returned verbatim when it fits ``max_words``, and a title of several RAKE keyphrases.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ltm.llm.extractive import ExtractiveText, _clip_words, split_sentences
from ltm.llm.textstats import WORD as _WORD
from ltm.llm.textstats import Phrase as _Phrase
from ltm.llm.textstats import candidate_phrases as _candidate_phrases
from ltm.llm.textstats import dense as _dense
from ltm.llm.textstats import sparse_dot as _dot
from ltm.llm.textstats import tfidf as _tfidf

__all__ = ["summarize_before", "title_before"]

_DENSE_LIMIT = 400  # distinct sentences up to which the full similarity matrix was used


def summarize_before(text: str, max_words: int = 200) -> ExtractiveText:
    """The most central sentences of ``text``, in their original order, within ``max_words`` words."""
    max_words = max(1, int(max_words))
    if len(_WORD.findall(text)) <= max_words:
        return ExtractiveText(text.strip(), method="verbatim")
    sentences = split_sentences(text)
    distinct = list(dict.fromkeys(sentences))
    counts = Counter(sentences)
    rows, width = _tfidf(distinct)
    weights = [float(counts[s]) for s in distinct]
    if len(distinct) <= _DENSE_LIMIT and len(distinct) * width <= 4_000_000:
        dense = _dense(rows, width)
        scores = list((dense @ dense.T) @ np.array(weights)) if rows else []
        method = "tfidf-degree-centrality"
    else:  # linear in the text: similarity to the count-weighted centroid
        centroid: dict[int, float] = {}
        for row, weight in zip(rows, weights, strict=True):
            for col, value in row.items():
                centroid[col] = centroid.get(col, 0.0) + weight * value
        scores = [_dot(row, centroid) for row in rows]
        method = "tfidf-centroid"
    chosen: list[int] = []
    used = 0
    for index in sorted(range(len(distinct)), key=lambda i: -scores[i]):
        if used >= max_words:
            break
        # near-duplicate of one of the first chosen (most central) sentences: skip it; checking only the
        # first 32 keeps long selections linear (10k sentences: 30 s quadratic -> under a second)
        if any(_dot(rows[index], rows[c]) > 0.8 for c in chosen[:32]):
            continue
        chosen.append(index)
        used += len(_WORD.findall(distinct[index]))
    parts = [distinct[i] for i in sorted(chosen)]
    summary = _clip_words(" ".join(parts), max_words)
    return ExtractiveText(summary, method=method, sentences=len(chosen), of=len(sentences))

def title_before(text: str, max_words: int = 5) -> ExtractiveText:
    """Up to ``max_words`` words: the text's best keyphrases (RAKE-style), in reading order.

    Candidate phrases are runs of up to three content words between stopwords and punctuation; a word
    scores its co-occurrence degree over its frequency, a phrase the sum of its words times how often it
    recurs, so "snake game" beats two scattered frequent words.
    """
    words = _WORD.findall(text)
    if not words:
        return ExtractiveText("New", method="keyphrase")
    phrases = _candidate_phrases(text)
    if not phrases:
        return ExtractiveText(" ".join(words[:max_words]), method="keyphrase")
    freq: Counter[str] = Counter()
    degree: Counter[str] = Counter()
    for phrase in phrases:
        for key in phrase.keys:
            freq[key] += 1
            degree[key] += len(phrase.keys)
    counts = Counter(p.keys for p in phrases)
    first: dict[tuple[str, ...], _Phrase] = {}
    for phrase in phrases:
        first.setdefault(phrase.keys, phrase)
    ranked = sorted(first.values(), key=lambda p: (
        -counts[p.keys] * sum(degree[k] / freq[k] for k in p.keys), p.position))
    chosen: list[_Phrase] = []
    used: set[str] = set()
    budget = max(1, int(max_words))
    for phrase in ranked:
        if set(phrase.keys) & used or len(phrase.keys) > budget:
            continue
        chosen.append(phrase)
        used.update(phrase.keys)
        budget -= len(phrase.keys)
        if budget == 0:
            break
    title = " ".join(p.surface for p in sorted(chosen, key=lambda p: p.position))
    return ExtractiveText(title[:1].upper() + title[1:], method="keyphrase")
