"""Hybrid ranking: calibrated score fusion of the dense and keyword candidates.

Each signal's candidates (best first, with their raw scores: cosine, ``-bm25``) are put on one scale:
``(score - floor) / (top - floor)``, 1 for the signal's best candidate and 0 at its floor, the score a
message outside the candidate list could at most have (the last dense candidate's cosine; 0 for keyword
search when fewer than ``depth`` messages matched, since a message without the words scores 0). The fused score
is the weighted sum. A *flat* signal (its best and its floor are equal: every candidate looks the same to it,
e.g. a query whose only matching word is in every message) says nothing about the order and gets no weight,
so the other signal decides alone; a signal with no candidates likewise. Why not reciprocal rank fusion: RRF
gives the 50th candidate of a weak signal almost as much as the 1st of a strong one and ignores how far apart the
scores are, and on real conversations it ranks below the better of its two inputs (docs/search.md).

On top of the fusion (docs/search.md#hybrid-step-by-step has each step's reason and
docs/search.md#the-constants what chose each constant):

- a query of several lines (a pasted conversation: :func:`ltm.store.search.query.query_lines`) is also embedded
  line by line, and its dense score for a message is :func:`line_scores`, so one line that names what a memory
  is about reaches it;
- a question that names a person who spoke (:mod:`ltm.store.search.speakers`) adds ``WEIGHTS["speaker"]`` to
  that person's candidates, and is embedded with those names in the first person;
- a candidate gets :data:`NEIGHBOUR_SHARE` of its better neighbour's score and :data:`SITTING_SHARE` of the best
  score among the other candidates of its sitting (within :data:`NEIGHBOUR_GAP` and :data:`SITTING_SPAN`);
- a one-line question's :data:`PRIOR_DEPTH` best candidates get a *prior* (:func:`prior`) from what the fusion
  does not see (:func:`ltm.store.search.query.question_stems` says which queries are questions);
- any other one-vector query gets pseudo-relevance feedback (Rocchio, :func:`feedback_vector`): the dense side
  is searched again with the query vector moved towards its first fusion's :data:`FEEDBACK_SEEDS` best, and
  fused again.

Order: messages whose content is the query itself (exact, then equal once case, spacing and punctuation are
ignored) first; then the fused score; ties by the dense cosine, then the keyword score, then the newer message.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "DEPTH",
    "FEEDBACK_SEEDS",
    "FEEDBACK_WEIGHT",
    "LINE_WHOLE",
    "LONG_QUERY_TERMS",
    "LONG_QUERY_WEIGHTS",
    "NEIGHBOUR_GAP",
    "NEIGHBOUR_SHARE",
    "PRIOR",
    "PRIOR_DEPTH",
    "SITTING_SHARE",
    "SITTING_SPAN",
    "STEM",
    "WEIGHTS",
    "Candidates",
    "feedback_vector",
    "fuse",
    "line_scores",
    "near_exact",
    "normalised_text",
    "prior",
    "prior_features",
    "prior_source",
    "priors",
    "stems",
]

# Why each value, and the figures that chose it: docs/search.md#the-constants.
DEPTH = 50  # candidates taken from each signal for a hybrid search of k <= 16 (3k beyond)
# Weights of the scaled signals. A question weighs words (names, places, dates; the keyword index knows who spoke and
# when) and meaning alike; "context" is a conversation's context vectors; "time" (dense candidates inside a date the
# query names) is off, since the keyword index already holds each message's day; "speaker" is added to candidates
# spoken by someone the question names, kept small so that a question naming the wrong person still finds the answer.
WEIGHTS: Mapping[str, float] = {"dense": 0.5, "keyword": 0.5, "context": 0.35, "time": 0.0, "speaker": 0.3}
# A long query (a pasted conversation, past LONG_QUERY_TERMS distinct words) leans on meaning: BM25 then sums many
# weak, topical word matches. Its lines start with speaker names, so it gets no speaker bonus.
LONG_QUERY_TERMS = 24
LONG_QUERY_WEIGHTS: Mapping[str, float] = {**WEIGHTS, "dense": 0.7, "keyword": 0.3, "speaker": 0.0}
# A share of the better neighbouring message's score (seq +- 1: the turn before and after, in a conversation added in
# order): "I did, last week" gets some of the topic of the question it answers. Only from a neighbour written within
# NEIGHBOUR_GAP seconds (the same sitting): separate notes added one after the other lend nothing.
NEIGHBOUR_SHARE = 0.3
NEIGHBOUR_GAP = 6 * 3600.0
# A share of the best score among the other candidates of the same sitting: a turn of the sitting where the question's
# topic came up is likelier to be part of the answer than an equally scored turn of a sitting where nothing else did.
SITTING_SHARE = 0.2
# "The same sitting" as far as the candidates tell: written within NEIGHBOUR_GAP of each other AND at most this many
# messages apart, since time alone joins notes of one day that were added far apart. On PostgreSQL seqs come from one
# sequence for every namespace, so writers to other namespaces at the same time widen a conversation's gaps: fewer
# pairs qualify, never two namespaces.
SITTING_SPAN = 32
# A multi-line long query's dense score: (best line's cosine + LINE_WHOLE x the whole query's) / (1 + LINE_WHOLE),
# so it stays on the cosine scale.
LINE_WHOLE = 1.0
# Rocchio feedback for a one-vector query that gets no prior: the query vector plus FEEDBACK_WEIGHT x the mean vector
# of the first fusion's FEEDBACK_SEEDS best. Not after a multi-line query, whose lines already widen it.
FEEDBACK_WEIGHT = 0.3
FEEDBACK_SEEDS = 5
# The prior of a one-line question's candidate (:func:`prior`): a logistic regression of "is evidence" on the fused
# score and these four features over REALTALK's dev half, divided by the fused score's coefficient and rounded to
# 0.05 (``python -m bench.tuning.prior_fit fit``). A model of chat turns: it costs meetings whose long questions are
# themselves evidence a few points.
PRIOR: Mapping[str, float] = {"cosine": 0.5, "length": 0.15, "question": -0.2, "coverage": 0.2}
# The prior is computed for the PRIOR_DEPTH best candidates of the fusion only (a candidate below them keeps its fused
# score): it reorders the head of the list, and costs ~5-8 us a candidate.
PRIOR_DEPTH = 50
# Words are compared by their first STEM letters: "recipe" and "recipes", "travel", "travelled" and "traveling" alike.
STEM = 5
# A namespace smaller than the candidate depth returns every message; cosines a few hundredths apart then
# must not become 0 and 1, so the dense floor is at least this far below the best.
MIN_COSINE_SPREAD = 0.1
Candidates = Sequence[tuple[int, float]]  # (seq, raw score), best first
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_STEMS = re.compile(rf"(\w{{1,{STEM}}})\w*", re.UNICODE)  # each word (a run of \w) as its first STEM letters


def normalised_text(text: str) -> str:
    """Text compared for a near-exact match: case-folded, punctuation and runs of spaces dropped."""
    return " ".join(_PUNCT.sub(" ", text.casefold()).split())


def near_exact(query: str, contents: Mapping[int, str]) -> list[int]:
    """The seqs (in ``contents``' order) whose content equals ``query`` once case, spacing and punctuation are ignored
    (:func:`normalised_text`). Only a content holding the query's longest word (a run of word characters of the
    case-folded text, so of its normalised form too) is normalised."""
    target = normalised_text(query)
    word = max(target.split(), key=len, default="")
    return [s for s, text in contents.items() if word in text.casefold() and normalised_text(text) == target]


def stems(words: Iterable[str]) -> frozenset[str]:
    """The words' stems as :func:`prior` compares them: lower-cased, their first :data:`STEM` letters."""
    return frozenset(w.lower()[:STEM] for w in words)


def prior(cosine: float, content: str, terms: Collection[str]) -> float:
    """What a candidate earns beside its fused score (:data:`PRIOR`): ``cosine`` (the query's cosine to its content
    vector), log(1 + its words), -1 when it ends with a question mark, and the share of ``terms`` (the question's
    :func:`stems`) among its words' stems."""
    return priors({0: cosine}, {0: content}, terms)[0]


def priors(cosines: Mapping[int, float], contents: Mapping[int, str], terms: Collection[str]) -> dict[int, float]:
    """:func:`prior` of every candidate with both a cosine and a content (others were deleted meanwhile)."""
    wanted = frozenset(terms)
    share = PRIOR["coverage"] / len(wanted) if wanted else 0.0
    w_cosine, w_length, w_question = PRIOR["cosine"], PRIOR["length"], PRIOR["question"]
    out = {}
    for seq, cosine in cosines.items():
        content = contents.get(seq)
        if content is None:
            continue
        length, asks, held = prior_features(content)
        out[seq] = w_cosine * cosine + w_length * length + w_question * asks + share * len(wanted & held)
    return out


def prior_features(content: str) -> tuple[float, bool, frozenset[str]]:
    """What :func:`prior` reads of a content whatever the question: log(1 + its words), whether it ends with a
    question mark, and its words' :func:`stems`. A pure function of the text, so the most recent
    :data:`FEATURES_KEPT` short contents keep theirs: a search's candidates recur in the next searches, and a
    search works them out for the keyword side's candidates while the model embeds the query."""
    if len(content) > FEATURES_MAX_CHARS:  # a long text is not kept alive by the cache
        return _features(content)
    return _kept_features(content)


def _features(content: str) -> tuple[float, bool, frozenset[str]]:
    stems = _STEMS.findall(content.lower())  # one per word: the regex hands back each word's stem itself
    return math.log1p(len(stems)), content.rstrip().endswith("?"), frozenset(stems)


FEATURES_KEPT = 4096  # contents whose prior_features are kept, each of at most FEATURES_MAX_CHARS (8 MB of text)
FEATURES_MAX_CHARS = 2000
_kept_features = functools.lru_cache(maxsize=FEATURES_KEPT)(_features)


def prior_source(
    cosines: Callable[[list[int]], Mapping[int, float]],
    contents: Callable[[list[int]], Mapping[int, str]],
    terms: Collection[str],
) -> Callable[[Sequence[int]], dict[int, float]]:
    """What :func:`fuse` takes as ``priors``: given candidates, their :func:`priors`, each computed once (a second
    fusion of the same search asks again) from ``cosines(seqs)`` and ``contents(seqs)`` of the new ones."""
    known: dict[int, float] = {}

    def of(seqs: Sequence[int]) -> dict[int, float]:
        new = [s for s in seqs if s not in known]
        if new:
            known.update(priors(cosines(new), contents(new), terms))
        return {s: known[s] for s in seqs if s in known}

    return of


def line_scores(vectors: np.ndarray, whole: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """The multi-line dense score of each row of ``vectors`` (unit vectors): the best cosine to a row of
    ``lines`` and the cosine to ``whole`` (shape (dim,) or (1, dim)), weighed 1 : :data:`LINE_WHOLE`."""
    best = (vectors @ np.asarray(lines, dtype=np.float32).T).max(axis=1)
    return np.asarray(
        (best + LINE_WHOLE * (vectors @ np.asarray(whole, dtype=np.float32).reshape(-1))) / (1.0 + LINE_WHOLE),
        dtype=np.float32,
    )


def feedback_vector(vector: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """The query vector moved towards the mean of the ``seeds``' vectors (rows), as a (1, dim) unit vector."""
    moved = np.asarray(vector, dtype=np.float32).reshape(-1) + FEEDBACK_WEIGHT * np.asarray(seeds).mean(axis=0)
    return np.asarray(moved / max(float(np.linalg.norm(moved)), 1e-12), dtype=np.float32).reshape(1, -1)


def _scale(hits: Candidates, depth: int, zero_floor: bool) -> tuple[float, float] | None:
    """(floor, top - floor) of a signal's candidates: each's scaled score is ``(score - floor) / span``; None when
    the signal is empty or flat (no information about the order)."""
    if not hits:
        return None
    top = hits[0][1]
    floor = 0.0 if zero_floor and len(hits) < depth else hits[-1][1]
    if not zero_floor and len(hits) < depth:
        floor = min(floor, top - MIN_COSINE_SPREAD)  # the whole (small) namespace: its worst is no floor
    if top - floor <= 1e-9 * max(1.0, abs(top)):
        return None
    return floor, top - floor


def _with_sitting(score: dict[int, float], times: Mapping[int, float], share: float) -> dict[int, float]:
    """``score`` plus ``share`` x the best score among the other candidates of the same sitting: written within
    NEIGHBOUR_GAP of it and at most SITTING_SPAN messages away (a candidate whose time is unknown lends and gets
    nothing). Seqs are distinct, so in seq order a candidate's sitting is a band of at most SITTING_SPAN candidates
    on either side, and the scan of a band stops at its first seq too far: O(n log n) for the order, then about one
    step per candidate, since most candidates of a search have no other in their band (a plain loop over ~100
    candidates costs less than building the arrays that would vectorise it)."""
    seqs = sorted(score)
    when = [times.get(s) for s in seqs]
    values = [score[s] for s in seqs]
    span, gap, last = SITTING_SPAN, NEIGHBOUR_GAP, len(seqs) - 1
    out = {}
    for i, seq in enumerate(seqs):
        at, best = when[i], -math.inf
        if at is not None:
            j = i - 1
            while j >= 0 and seq - seqs[j] <= span:
                other = when[j]
                if other is not None and abs(other - at) <= gap and values[j] > best:
                    best = values[j]
                j -= 1
            j = i + 1
            while j <= last and seqs[j] - seq <= span:
                other = when[j]
                if other is not None and abs(other - at) <= gap and values[j] > best:
                    best = values[j]
                j += 1
        out[seq] = values[i] + share * best if best > -math.inf else values[i] + 0.0
    return out


_SCORE_THEN_SEQ = operator.itemgetter(1, 0)


def fuse(
    signals: Mapping[str, Candidates],
    k: int,
    *,
    depth: int = DEPTH,
    weights: Mapping[str, float] = WEIGHTS,
    neighbours: float = NEIGHBOUR_SHARE,
    exact: Sequence[int] = (),
    near_exact: Collection[int] = (),
    times: Mapping[int, float] | None = None,
    named: Collection[int] = (),
    sitting: float = SITTING_SHARE,
    priors: Callable[[Sequence[int]], Mapping[int, float]] | None = None,
) -> list[tuple[int, float, tuple[str, ...]]]:
    """The ``k`` best (seq, fused score, signals that found it).

    ``signals`` maps "dense", "keyword", "context" (a conversation's context vectors) or "time" (dense
    candidates inside the window a query names) to candidates (each seq once a signal). ``exact`` seqs hold the query
    verbatim, ``near_exact`` ones hold it up to case, spacing and punctuation: both go first, in that order. "time"
    candidates get a fixed boost (``weights["time"]``) and, when the dense list missed them, their cosine on
    the dense scale. ``times`` ({seq: created_at} of the candidates; None: unknown) limits the neighbours' share
    to neighbours written within ``NEIGHBOUR_GAP`` of each other. ``named`` candidates (spoken by someone the
    query names: :mod:`ltm.store.search.speakers`) get ``weights["speaker"]`` added, after the neighbours' share; then
    each candidate gets ``sitting`` x the best score of another candidate of its sitting (written within
    ``NEIGHBOUR_GAP`` and ``SITTING_SPAN`` messages of it; none when ``times`` is None). Last, the
    :data:`PRIOR_DEPTH` best get ``priors(their seqs)`` ({seq: :func:`prior`}, e.g. :func:`prior_source`) added.

    A search fuses ~100 candidates: each step is one pass over plain dicts (arrays would cost more to build than
    the arithmetic they would save: docs/SEARCH_SPEED.md).
    """
    found: dict[int, list[str]] = {}
    score: dict[int, float] = {}
    for name, hits in signals.items():
        if name == "time":
            continue
        weight, scale = weights.get(name, 0.0), _scale(hits, depth, zero_floor=name == "keyword")
        for seq, value in hits:
            names = found.get(seq)
            if names is None:
                found[seq], before = [name], 0.0
            else:
                names.append(name)
                before = score[seq]
            score[seq] = before + weight * ((value - scale[0]) / scale[1] if scale is not None else 0.0)
    dense_hits = signals.get("dense", ())
    for seq, cosine in signals.get("time", ()):  # inside the window the query names: a fixed boost, by meaning
        if seq not in found:
            found[seq] = []
            score[seq] = 0.0
            if len(dense_hits) > 1 and dense_hits[0][1] > dense_hits[-1][1]:
                top, floor = dense_hits[0][1], dense_hits[-1][1]
                score[seq] = weights["dense"] * max(0.0, (cosine - floor) / (top - floor))
        found[seq].append("time")
        score[seq] += weights["time"]
    speaker = weights.get("speaker", 0.0) if named else 0.0
    if neighbours or speaker:
        score = _lent(score, neighbours, times, named, speaker)
    if sitting and times is not None and len(score) > 1:
        score = _with_sitting(score, times, sitting)
    if priors is not None and score:
        best = sorted(score.items(), key=_SCORE_THEN_SEQ, reverse=True)[:PRIOR_DEPTH]
        for seq, bonus in priors([s for s, _ in best]).items():
            if seq in score:
                score[seq] += bonus
    for seq in [*exact, *near_exact]:
        if seq not in found:
            found[seq], score[seq] = ["exact"], 0.0
    dense = {seq: value for seq, value in signals.get("dense", ())}
    keyword = {seq: value for seq, value in signals.get("keyword", ())}
    if exact or near_exact:
        first = {seq: 2 for seq in exact} | {seq: 1 for seq in near_exact if seq not in exact}
        order = sorted(
            score, key=lambda s: (first.get(s, 0), score[s], dense.get(s, -2.0), keyword.get(s, -1.0), s), reverse=True
        )
    else:
        order = sorted(score, key=lambda s: (score[s], dense.get(s, -2.0), keyword.get(s, -1.0), s), reverse=True)
    return [(s, score[s], tuple(found[s])) for s in order[:k]]


def _lent(
    score: dict[int, float],
    neighbours: float,
    times: Mapping[int, float] | None,
    named: Collection[int],
    speaker: float,
) -> dict[int, float]:
    """Each score plus ``neighbours`` x the better of its neighbours' (seq +- 1, when they are candidates written
    within NEIGHBOUR_GAP of it, or of unknown times when ``times`` is None), then plus ``speaker`` when ``named``."""
    out = {}
    for seq, value in score.items():
        if neighbours:
            before, after = score.get(seq - 1), score.get(seq + 1)
            if times is not None and (before is not None or after is not None):
                at = times.get(seq, 0.0)
                if before is not None and abs(at - times.get(seq - 1, math.inf)) > NEIGHBOUR_GAP:
                    before = None
                if after is not None and abs(at - times.get(seq + 1, math.inf)) > NEIGHBOUR_GAP:
                    after = None
            value = value + neighbours * max(0.0 if before is None else before, 0.0 if after is None else after)
        if speaker:
            value = value + (speaker if seq in named else 0.0)
        out[seq] = value
    return out
