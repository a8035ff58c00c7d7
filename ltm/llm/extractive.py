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
from typing import Any

from ltm.llm.summary import Embed, split_units, summarize_units, title_phrase
from ltm.llm.textstats import WORD, content_words, sentences

__all__ = ["ExtractiveLLM", "ExtractiveText", "content_words", "split_sentences"]

_MAX_WORDS_HINT = re.compile(r"(?:less than|at most|fewer than|under|within)\s+(\d+)\s+words", re.IGNORECASE)


class ExtractiveText(str):
    """A ``str`` produced extractively; ``metadata`` says so (``{"extractive": True, "method": ...}``)."""

    metadata: dict[str, Any]

    def __new__(cls, text: str, **metadata: Any) -> ExtractiveText:
        obj = super().__new__(cls, text)
        obj.metadata = {"extractive": True, **metadata}
        return obj


def split_sentences(text: str) -> list[str]:
    """Sentences and lines of ``text``, stripped, empty ones dropped, order kept (numbers, versions,
    abbreviations and URLs do not end a sentence: :func:`ltm.llm.textstats.sentences`)."""
    return [s for line in text.splitlines() for s in sentences(line)]


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
        units = split_units(text)
        summary = summarize_units(units, max(1, int(max_words)), embed=self.embed)
        return ExtractiveText(
            _clip_words(summary.text, max(1, int(max_words))),
            method=summary.method,
            sentences=len(summary.units),
            of=summary.of,
        )

    def title(self, text: str, max_words: int = 5) -> ExtractiveText:
        """One readable keyphrase of up to ``max_words`` words: the run of content words most central to the
        text (:func:`ltm.llm.summary.title_phrase`), not a list of scattered keywords."""
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


def _clip_words(text: str, max_words: int) -> str:
    matches = list(WORD.finditer(text))
    if len(matches) <= max_words:
        return text
    return text[: matches[max_words - 1].end()]
