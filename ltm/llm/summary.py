"""Extractive summaries and titles of conversations: central, non-redundant sentences in their original order.

A chat is split into units (one sentence of one speaker's turn, the speaker kept in front); each unit gets a
vector (TF-IDF by default, or a sentence embedding when the caller has a model loaded); a unit's centrality is
its mean similarity to the others; units are then picked by maximal marginal relevance (central, and unlike
what was already picked) until a word budget is spent, skipping fillers ("Yes, sir.", "Hi."), and printed in
the order they were said, each chosen answer with the question it replies to. The budget is a share of the
text (a summary is shorter than what it summarizes) capped by the caller's ``max_words``.

A title is one readable phrase: the keyphrase (a run of up to four content words) whose words are most central
to the conversation, in its original surface form, not a list of scattered keywords.

The parameters below were chosen on DialogSum's dev split and are reported on its test split in
BENCHMARKS.md (``python -m bench.summary``): ROUGE against human reference summaries and topics, beside
lead-k and random-k baselines at the same word budget.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltm.llm.textstats import Phrase, candidate_phrases, content_words, sentences, sparse_dot, tfidf
from ltm.llm.textstats import dense as dense_matrix

__all__ = ["Embed", "Summary", "Unit", "split_units", "summarize_units", "title_phrase"]

# (texts) -> (n, d) array of sentence vectors (any scale: rows are normalised here)
Embed = Callable[[Sequence[str]], Any]

SHARE = 0.2  # of the text's words a summary may use (DialogSum dev, ROUGE-L: 0.15 24.2, 0.2 24.8, 0.25 24.1, 0.3 23.4)
MIN_WORDS = 25  # below this a summary is a fragment (one sentence of a short chat)
MMR_LAMBDA = 0.6  # weight of centrality against redundancy
POSITION_WEIGHT = 0.5  # share of a unit's relevance that comes from being said early (chats open with their topic)
MIN_CONTENT_WORDS = 3  # shorter units are fillers ("Yes, sir.", "OK, thanks.")
NEAR_DUPLICATE = 0.8  # similarity above which a sentence repeats one already chosen
DENSE_LIMIT = 4_000_000  # sentences x vocabulary up to which TF-IDF vectors are a dense matrix
_SPEAKER = re.compile(r"^\s*(#?[\w .'()-]{1,40}?#?)\s*:\s+(.*)$")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Unit:
    """One sentence of one turn: who said it (may be empty), the sentence, and its position in the chat."""

    speaker: str
    text: str
    position: int

    @property
    def display(self) -> str:
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True)
class Summary:
    """The chosen units in chat order, how they were scored, and the budget that bounded them."""

    units: list[Unit]
    method: str
    budget: int
    of: int

    @property
    def text(self) -> str:
        return "\n".join(u.display for u in self.units)


def split_units(text: str) -> list[Unit]:
    """Sentences of ``text``, each with the speaker of its line ("Alice: ..." or "#Person1#: ...")."""
    units: list[Unit] = []
    for line in text.splitlines():
        match = _SPEAKER.match(line)
        speaker, body = (match.group(1).strip(), match.group(2)) if match else ("", line)
        for sentence in sentences(body):
            units.append(Unit(speaker, sentence, len(units)))
    return units


def _words(text: str) -> int:
    return len(_WORD.findall(text))


class _Vectors:
    """Unit-length sentence vectors: dense (embeddings, small TF-IDF) or sparse TF-IDF rows for long texts, so a
    10,000-sentence history never builds an n x n or n x vocabulary matrix (everything here is linear in n)."""

    def __init__(self, units: Sequence[Unit], embed: Embed | None) -> None:
        self.sparse: list[dict[int, float]] | None = None
        if embed is not None:
            dense = np.asarray(embed([u.text for u in units]), dtype=np.float64)
            self.method = "embedding"
        else:
            rows, width = tfidf([u.text for u in units])
            self.method = "tfidf"
            if len(rows) * width > DENSE_LIMIT:
                self.sparse, dense = rows, np.zeros((0, 0))
            else:
                dense = dense_matrix(rows, width)
        if self.sparse is None:
            norms = np.linalg.norm(dense, axis=1, keepdims=True)
            self.dense = dense / np.where(norms == 0, 1.0, norms)

    def centrality(self) -> np.ndarray[Any, Any]:
        """Mean similarity of each unit to all the others (via the sum vector: linear, not n x n)."""
        if self.sparse is None:
            n = len(self.dense)
            return np.asarray((self.dense @ self.dense.sum(axis=0) - 1.0) / max(1, n - 1), dtype=np.float64)
        total: dict[int, float] = {}
        for row in self.sparse:
            for col, value in row.items():
                total[col] = total.get(col, 0.0) + value
        n = len(self.sparse)
        return np.array([(sparse_dot(row, total) - 1.0) / max(1, n - 1) for row in self.sparse])

    def similarity_to(self, j: int) -> np.ndarray[Any, Any]:
        if self.sparse is None:
            return np.asarray(self.dense @ self.dense[j], dtype=np.float64)
        return np.array([sparse_dot(row, self.sparse[j]) for row in self.sparse])


def summarize_units(units: Sequence[Unit], max_words: int, embed: Embed | None = None) -> Summary:
    """The most central, non-redundant units within ``min(max_words, SHARE of the words)``, in chat order."""
    sizes = np.array([_words(u.text) for u in units])
    budget = max(1, min(int(max_words), max(MIN_WORDS, round(SHARE * int(sizes.sum())))))
    n = len(units)
    if not n:
        return Summary([], "empty", budget, 0)
    vectors = _Vectors(units, embed)
    centrality = vectors.centrality()
    top = float(centrality.max()) or 1.0
    relevance = (1 - POSITION_WEIGHT) * centrality / top + POSITION_WEIGHT * (1.0 - np.arange(n) / n)
    open_ = np.array([len(content_words(u.text)) >= MIN_CONTENT_WORDS for u in units])
    if not open_.any():  # a chat of fillers: its longest units compete
        open_[np.argsort(-sizes)[:3]] = True
    redundancy = np.zeros(n)
    chosen: list[int] = []
    used = 0
    while open_.any() and used < budget:
        gain = np.where(open_, MMR_LAMBDA * relevance - (1 - MMR_LAMBDA) * redundancy, -np.inf)
        best = int(np.argmax(gain))  # ties: the earliest unit
        open_[best] = False
        # an answer comes with the question it replies to, and both count against the budget
        question = _question_of(units, best)
        picked = [best] if question is None or question in chosen else [question, best]
        cost = int(sum(sizes[i] for i in picked))
        if chosen and used + cost > budget * 1.25:  # would overshoot: a shorter one may fit
            continue
        for i in picked:
            chosen.append(i)
            open_[i] = False
            similarity = vectors.similarity_to(i)
            open_ &= similarity <= NEAR_DUPLICATE  # a repeat of a chosen sentence never competes again
            redundancy = np.maximum(redundancy, similarity)
        used += cost
    return Summary([units[i] for i in sorted(chosen)], f"{vectors.method}-centrality-mmr", budget, n)


def _question_of(units: Sequence[Unit], i: int) -> int | None:
    """The question unit ``i`` answers, if it opens a turn that replies to one: a turn that opens with an answer
    ("On Friday, after the review.") means little without its question ("When do we ship?"), and a short question
    is easily dropped as a filler. The question is the last sentence of the turn before, by another speaker,
    ending with "?"."""
    if i == 0:
        return None
    before, answer = units[i - 1], units[i]
    if before.speaker and answer.speaker and before.speaker != answer.speaker and before.text.rstrip().endswith("?"):
        return i - 1
    return None


# Words that make poor titles on their own: common verbs and conversational fillers (DialogSum dev, title
# ROUGE-1 vs the reference topics: 16.4 with them, 18.9 without).
_TITLE_SKIP_TEXT = """
want eat like know think go get see come make take say tell need let look give find use work feel try ask seem
leave call keep put mean become begin help talk turn start show hear play run move live believe bring happen
write sit stand lose pay meet include continue set learn change lead understand watch follow stop create speak
read allow add spend grow open walk win offer remember love consider appear buy wait serve die send expect build
stay fall cut reach kill remain suggest raise pass sell require report decide pull sure yes okay ok well oh
really thank thanks hello hi sorry please great good right
"""
_TITLE_SKIP = frozenset(_TITLE_SKIP_TEXT.split())
# A phrase with a name in it (a word never written in lower case: Lily, Redis) ranks higher: people title chats
# by who and what they are about. DialogSum dev title ROUGE-1: 18.9 without, 18.5 at 1.5, 17.9 at 2.0; we keep
# 2.0 because the chats ltm titles name their people and tools far more often than DialogSum's "#Person1#".
NAME_BOOST = 2.0


def _topical(phrase: Phrase) -> Phrase:
    """``phrase`` without the verbs and fillers at its ends: a title names what the chat is about, never a claim
    about it. "can't keep MySQL" yields the phrase "keep MySQL", which as a title says the opposite of the chat;
    its topic is "MySQL". Words and keys correspond one to one (a phrase is a run of content words)."""
    words = phrase.surface.split()
    if len(words) != len(phrase.keys):
        return phrase
    start, end = 0, len(words)
    while start < end and phrase.keys[start] in _TITLE_SKIP:
        start += 1
    while end > start and phrase.keys[end - 1] in _TITLE_SKIP:
        end -= 1
    if (start, end) == (0, len(words)):
        return phrase
    return Phrase(" ".join(words[start:end]), phrase.keys[start:end], phrase.position)


def title_phrase(text: str, max_words: int = 5) -> str:
    """One readable keyphrase of ``text`` (up to ``min(4, max_words)`` words), capitalised."""
    units = split_units(text)
    body = "\n".join(u.text for u in units) or text
    phrases = [p for p in map(_topical, candidate_phrases(body, longest=min(4, max(1, max_words)))) if p.keys]
    if not phrases:
        words = _WORD.findall(text)
        return " ".join(words[:max_words]).capitalize() if words else "New conversation"
    words = _WORD.findall(body)
    lower = Counter(w for w in words if w[:1].islower())
    upper = Counter(w for w in words if w[:1].isupper())
    names = {w.lower() for w, n in upper.items() if n >= 1 and not lower[w.lower()]}
    frequency: Counter[str] = Counter(k for p in phrases for k in p.keys)
    seen_in: Counter[tuple[str, ...]] = Counter(p.keys for p in phrases)

    def score(p: Any) -> tuple[float, int]:
        # words that recur across the chat, in a phrase that itself recurs; two- and three-word phrases read best
        recurring = sum(frequency[k] for k in p.keys) / len(p.keys)
        shape = 1.0 if len(p.keys) in (2, 3) else 0.7
        named = NAME_BOOST if any(w.lower() in names for w in p.surface.split()) else 1.0
        return recurring * shape * named * (1 + 0.5 * (seen_in[p.keys] - 1)), -p.position

    best = max(phrases, key=score)
    surface = " ".join(best.surface.split()[:max_words])
    return surface[:1].upper() + surface[1:]
