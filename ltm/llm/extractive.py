"""The offline "LLM": an extractive summarizer, a keyphrase titler and lexical relatedness, no model needed.

Used when no LLM is configured, so every feature that asks an LLM keeps working offline. It never invents
text: a summary is a selection of the input's own sentences, chosen by centrality over TF-IDF sentence
vectors (degree centrality, LexRank-style, up to 400 distinct sentences; similarity to the weighted centroid
above that, which is linear in the text). Each result is an :class:`ExtractiveText` whose ``metadata`` says
``{"extractive": True, "method": ...}``, so callers and users can tell it from an abstractive summary.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np

__all__ = ["ExtractiveLLM", "ExtractiveText", "content_words", "split_sentences"]

_SENTENCE = re.compile(r"[^\n.!?。！？]+(?:[.!?。！？]+|$)", re.MULTILINE)
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_WORDS_HINT = re.compile(r"(?:less than|at most|fewer than|under|within)\s+(\d+)\s+words", re.IGNORECASE)
_STOPWORD_TEXT = """a an and are as at be been but by can could did do does for from had has have he her hers him his
how i if in into is it its just me my no not of on or our ours she so some such than that the their them then
there these they this those to too us was we were what when where which who whom why will with would you your
yours am also any all about above after again against before being below between both during each few more most
other own same should only over under until up very s t don"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_DENSE_LIMIT = 400  # distinct sentences up to which the full similarity matrix is used


class ExtractiveText(str):
    """A ``str`` produced extractively; ``metadata`` says so (``{"extractive": True, "method": ...}``)."""

    metadata: dict[str, Any]

    def __new__(cls, text: str, **metadata: Any) -> ExtractiveText:
        obj = super().__new__(cls, text)
        obj.metadata = {"extractive": True, **metadata}
        return obj


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text``, stripped, empty ones dropped, order kept."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stopwords, with a light plural strip (``apples`` -> ``apple``)."""
    words = []
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or word.isdigit():
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


class ExtractiveLLM:
    """Offline stand-in for an LLM, for summaries, titles, relatedness and rewrites. Deterministic.

    It also satisfies the :class:`~ltm.llm.base.LLM` protocol: ``ask(prompt, system)`` answers with an
    extractive summary of ``prompt`` (at most the "less than N words" the system prompt asks for, else 200),
    so code written against the protocol runs offline too. It is a :class:`~ltm.llm.base.Summarizer`, which is
    how the LLM tasks know to call its methods directly and features that need a real model know to refuse it.
    """

    def summarize(self, text: str, max_words: int = 200) -> ExtractiveText:
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

    def title(self, text: str, max_words: int = 5) -> ExtractiveText:
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

    def is_related(self, text1: str, text2: str) -> bool:
        """True when the two texts share enough content words (overlap >= half of the smaller set)."""
        a, b = set(content_words(text1)), set(content_words(text2))
        if not a or not b:
            return False
        return len(a & b) / min(len(a), len(b)) >= 0.5

    def rewrite(self, sentence: str, context: str) -> ExtractiveText:
        """``sentence`` followed by the context sentence most related to it (in parentheses), if any."""
        best, best_score = "", 0.0
        words = set(content_words(sentence))
        for candidate in split_sentences(context):
            other = set(content_words(candidate))
            score = len(words & other) / math.sqrt(len(other) or 1)
            if score > best_score and candidate not in sentence:
                best, best_score = candidate, score
        text = f"{sentence} ({best})" if best else sentence
        return ExtractiveText(text, method="context-sentence")

    def ask(self, prompt: str, system: str | None = None) -> str:
        hint = _MAX_WORDS_HINT.search(system or "")
        return self.summarize(prompt, int(hint.group(1)) if hint else 200)

    async def aask(self, prompt: str, system: str | None = None) -> str:
        return self.ask(prompt, system)


class _Phrase:
    __slots__ = ("keys", "position", "surface")

    def __init__(self, surface: str, keys: tuple[str, ...], position: int) -> None:
        self.surface, self.keys, self.position = surface, keys, position


_PHRASE_BREAK = re.compile(r"[^\w\s'-]+|\n")


def _candidate_phrases(text: str, longest: int = 3) -> list[_Phrase]:
    """Runs of content words (up to ``longest``) between stopwords, digits and punctuation, in order."""
    phrases: list[_Phrase] = []
    position = 0
    for chunk in _PHRASE_BREAK.split(text):
        run: list[str] = []
        for word in [*_WORD.findall(chunk), ""]:
            key = (content_words(word) or [""])[0] if word else ""
            if key and len(key) > 2:
                run.append(word)
                continue
            for start in range(0, len(run), longest):
                part = run[start:start + longest]
                phrases.append(_Phrase(" ".join(part), tuple(content_words(" ".join(part))), position))
                position += 1
            run = []
    return phrases


def _tfidf(sentences: list[str]) -> tuple[list[dict[int, float]], int]:
    """Sparse unit-length TF-IDF rows (log tf, smooth idf) of the sentences, and the vocabulary size."""
    tokens = [content_words(s) or _WORD.findall(s.lower()) for s in sentences]
    vocab: dict[str, int] = {}
    df: Counter[int] = Counter()
    counted = []
    for toks in tokens:
        counts = Counter(vocab.setdefault(tok, len(vocab)) for tok in toks)
        df.update(counts.keys())
        counted.append(counts)
    rows = []
    for counts in counted:
        row = {col: (1.0 + math.log(n)) * (math.log((1 + len(sentences)) / (1 + df[col])) + 1.0)
               for col, n in counts.items()}
        norm = math.sqrt(sum(v * v for v in row.values())) or 1.0
        rows.append({col: v / norm for col, v in row.items()})
    return rows, len(vocab)


def _dense(rows: list[dict[int, float]], width: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    matrix = np.zeros((len(rows), max(1, width)), dtype=np.float64)
    for i, row in enumerate(rows):
        for col, value in row.items():
            matrix[i, col] = value
    return matrix


def _dot(a: dict[int, float], b: dict[int, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


def _clip_words(text: str, max_words: int) -> str:
    matches = list(_WORD.finditer(text))
    if len(matches) <= max_words:
        return text
    return text[: matches[max_words - 1].end()]
