"""Words, stopwords, TF-IDF rows and keyphrase candidates: the text statistics behind the offline summarizer
(:mod:`ltm.llm.summary`) and the offline LLM (:mod:`ltm.llm.extractive`), which both import them from here so
neither imports the other back.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np

__all__ = ["Phrase", "candidate_phrases", "content_words", "dense", "sentences", "sparse_dot", "tfidf"]

WORD = re.compile(r"\w+", re.UNICODE)
STOPWORD_TEXT = """a an and are as at be been but by can could did do does for from had has have he her hers him his
how i if in into is it its just me my no not of on or our ours she so some such than that the their them then
there these they this those to too us was we were what when where which who whom why will with would you your
yours am also any all about above after again against before being below between both during each few more most
other own same should only over under until up very s t don"""
STOPWORDS = frozenset(STOPWORD_TEXT.split())


def sentences(text: str, language: str = "en") -> list[str]:
    """The sentences of one line of text, stripped, empty ones dropped, in order.

    sentencex (Wikimedia's rule-based segmenter) decides where they end: a dot in a number or version ("MySQL
    5.7", "the 1.9 cache", "$3.50"), an abbreviation ("Dr.", "e.g.", "p.m.") or a URL does not end a sentence.
    Languages without a rule set of their own fall back to related ones; "." "!" "?" "。" still end sentences.
    """
    from sentencex import segment  # imported on first use: most programs that import ltm never summarize

    return [s.strip() for s in segment(language, text) if s.strip()]


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stopwords, with a light plural strip (``apples`` -> ``apple``)."""
    words = []
    for word in WORD.findall(text.lower()):
        if word in STOPWORDS or word.isdigit():
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


class Phrase:
    """A run of content words: as written (``surface``), as keys (``content_words``), and its order."""

    __slots__ = ("keys", "position", "surface")

    def __init__(self, surface: str, keys: tuple[str, ...], position: int) -> None:
        self.surface, self.keys, self.position = surface, keys, position


PHRASE_BREAK = re.compile(r"[^\w\s'-]+|\n")


def candidate_phrases(text: str, longest: int = 3) -> list[Phrase]:
    """Runs of content words (up to ``longest``) between stopwords, digits and punctuation, in order."""
    phrases: list[Phrase] = []
    position = 0
    for chunk in PHRASE_BREAK.split(text):
        run: list[str] = []
        for word in [*WORD.findall(chunk), ""]:
            key = (content_words(word) or [""])[0] if word else ""
            if key and len(key) > 2:
                run.append(word)
                continue
            for start in range(0, len(run), longest):
                part = run[start : start + longest]
                phrases.append(Phrase(" ".join(part), tuple(content_words(" ".join(part))), position))
                position += 1
            run = []
    return phrases


def tfidf(sentences: list[str]) -> tuple[list[dict[int, float]], int]:
    """Sparse unit-length TF-IDF rows (log tf, smooth idf) of the sentences, and the vocabulary size."""
    tokens = [content_words(s) or WORD.findall(s.lower()) for s in sentences]
    vocab: dict[str, int] = {}
    df: Counter[int] = Counter()
    counted = []
    for toks in tokens:
        counts = Counter(vocab.setdefault(tok, len(vocab)) for tok in toks)
        df.update(counts.keys())
        counted.append(counts)
    rows = []
    for counts in counted:
        row = {
            col: (1.0 + math.log(n)) * (math.log((1 + len(sentences)) / (1 + df[col])) + 1.0)
            for col, n in counts.items()
        }
        norm = math.sqrt(sum(v * v for v in row.values())) or 1.0
        rows.append({col: v / norm for col, v in row.items()})
    return rows, len(vocab)


def dense(rows: list[dict[int, float]], width: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The sparse rows of :func:`tfidf` as a dense matrix of ``width`` columns."""
    matrix = np.zeros((len(rows), max(1, width)), dtype=np.float64)
    for i, row in enumerate(rows):
        for col, value in row.items():
            matrix[i, col] = value
    return matrix


def sparse_dot(a: dict[int, float], b: dict[int, float]) -> float:
    """The dot product of two sparse rows (the shorter one is iterated)."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())
