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
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ltm.llm.summary import Embed

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

    def __init__(self, embed: Embed | None = None) -> None:
        # sentence vectors from a model the caller already has loaded; None: TF-IDF (no model at all)
        self.embed = embed

    def summarize(self, text: str, max_words: int = 200) -> ExtractiveText:
        """The most central, non-redundant sentences of ``text`` in their original order (speakers kept), within
        ``max_words`` words and a fifth of the text (:mod:`ltm.llm.summary`)."""
        from ltm.llm.summary import split_units, summarize_units

        units = split_units(text)
        summary = summarize_units(units, max(1, int(max_words)), embed=self.embed)
        return ExtractiveText(_clip_words(summary.text, max(1, int(max_words))), method=summary.method,
                              sentences=len(summary.units), of=summary.of)

    def title(self, text: str, max_words: int = 5) -> ExtractiveText:
        """One readable keyphrase of up to ``max_words`` words: the run of content words most central to the
        text (:func:`ltm.llm.summary.title_phrase`), not a list of scattered keywords."""
        from ltm.llm.summary import title_phrase

        return ExtractiveText(title_phrase(text, max(1, int(max_words))), method="keyphrase")

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
