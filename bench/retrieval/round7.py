"""The seventh round of search levers (issue 15; docs/RETRIEVAL.md): what ships now with one thing changed.

Run like :mod:`bench.retrieval.levers` (same harness, dev / test halves, ``LEVERS`` and ``SETS`` filters)::

    python -m bench.retrieval.round7
    LEVERS='^(shipped|no sitting|span)' SETS=realtalk python -m bench.retrieval.round7

Two levers of this round shipped: the *sitting share* (:data:`ltm.store.search.fusion.SITTING_SHARE`: each candidate
gets
a share of the best score among the other candidates of its sitting) and the *pronouns* of a question about one
named person put in the first person with the name (:func:`ltm.store.search.speakers.first_person`; "no pronouns" takes
them away). The rows vary the share, replace "the same sitting" (time and position, as the store sees its
candidates) by the exact one (runs of turns without a gap past ``NEIGHBOUR_GAP``), or try the other families of the
round (phrases, a sitting's centroid, distribution-based fusion, a blended dense query, a length prior, a "when"
bonus), none of which paid.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np

from bench.retrieval import levers as lv
from bench.retrieval.harness import Cand, Lever, Question, shipped, spoken
from ltm.store.search import fusion, speakers
from ltm.store.search.query import STOPWORDS, query_terms

_WORD = re.compile(r"\w+", re.UNICODE)
Bonus = Callable[[dict[int, float], Mapping[int, float], float], dict[int, float]]


@contextmanager
def patched(**values: object) -> Iterator[None]:
    """``ltm.store.search.fusion``'s module attributes replaced for the duration (the fusion reads them per call)."""
    saved = {name: getattr(fusion, name) for name in values}
    for name, value in values.items():
        setattr(fusion, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(fusion, name, value)


def with_bonus(make: Callable[[Question], Bonus]) -> Lever:
    """Shipped, with the sitting share's step replaced by ``make(q)`` (same place in the fusion)."""
    def run(q: Question) -> list[int]:
        with patched(_with_sitting=make(q)):
            return shipped(q)
    return run


def span(n: int, share: float = fusion.SITTING_SHARE) -> Lever:
    """Shipped with "the same sitting" meaning at most ``n`` messages apart (and the share ``share``)."""
    def run(q: Question) -> list[int]:
        with patched(SITTING_SPAN=n):
            return shipped(q, sitting=share)
    return run


def sitting_numbers(q: Question) -> np.ndarray:
    """The exact sitting of each turn (row i = seq i + 1): a new one after a gap past NEIGHBOUR_GAP."""
    c = q.conv
    if "sitting" not in c.extra:
        t = np.array([c.times[i + 1] for i in range(len(c.vectors))])
        c.extra["sitting"] = np.concatenate([[0], np.cumsum(np.abs(np.diff(t)) > fusion.NEIGHBOUR_GAP)])
    return c.extra["sitting"]


def exact_sittings(q: Question) -> Bonus:
    """The share of the best other candidate of the exact sitting (the store cannot see it: it knows only its
    candidates' times and seqs)."""
    sit = sitting_numbers(q)

    def bonus(score: dict[int, float], times: Mapping[int, float], share: float) -> dict[int, float]:
        best: dict[int, list[float]] = {}
        for s, v in score.items():
            best.setdefault(int(sit[s - 1]), []).append(v)
        out = {}
        for s, v in score.items():
            others = sorted(best[int(sit[s - 1])], reverse=True)
            others.remove(v)
            out[s] = v + share * (others[0] if others else 0.0)
        return out
    return bonus


def centroid(weight: float) -> Callable[[Question], Bonus]:
    """Instead of the share: ``weight`` x the dense query's cosine to the mean vector of every turn of the exact
    sitting, min-max scaled over the candidates."""
    def make(q: Question) -> Bonus:
        c, sit, qv = q.conv, sitting_numbers(q), spoken(q).vector
        if "centroids" not in c.extra:
            sums = np.zeros((int(sit.max()) + 1, c.vectors.shape[1]), dtype=np.float32)
            np.add.at(sums, sit, c.vectors)
            c.extra["centroids"] = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-9)

        def bonus(score: dict[int, float], times: Mapping[int, float], share: float) -> dict[int, float]:
            rel = {s: float(c.extra["centroids"][sit[s - 1]] @ qv) for s in score}
            lo, hi = min(rel.values()), max(rel.values())
            if hi - lo <= 1e-9:
                return score
            return {s: v + weight * (rel[s] - lo) / (hi - lo) for s, v in score.items()}
        return bonus
    return make


def per_turn(q: Question, key: str, feature: Callable[[str], float]) -> np.ndarray:
    """``feature`` of each stored turn's content (row i = seq i + 1), computed once per conversation."""
    c = q.conv
    if key not in c.extra:
        rows = dict(c.log.db.execute("SELECT rowid, content FROM fts").fetchall())
        c.extra[key] = np.array([feature(rows.get(i + 1, "")) for i in range(len(c.vectors))])
    return c.extra[key]


def short_turns(penalty: float, words: int = 4) -> Callable[[Question], Bonus]:
    """After the sitting share: a candidate of fewer than ``words`` words loses ``penalty`` (a length prior)."""
    def make(q: Question) -> Bonus:
        n = per_turn(q, "lengths", lambda text: len(_WORD.findall(text)))
        shared = fusion._with_sitting

        def bonus(score: dict[int, float], times: Mapping[int, float], share: float) -> dict[int, float]:
            out = shared(score, times, share)
            return {s: v - (penalty if n[s - 1] < words else 0.0) for s, v in out.items()}
        return bonus
    return make


_WHEN_Q = re.compile(r"^\W*(when|what (time|day|date|month|year))\b|\bhow long ago\b", re.IGNORECASE)
_TIME_WORDS = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|this (morning|afternoon|evening|week|weekend|month|year)|"
    r"(last|next|past) (night|week|weekend|month|year|summer|winter|spring|fall|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday)|(on|this) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(january|february|march|april|may|june|july|august|september|october|november|december)|"
    r"\d{1,2}(st|nd|rd|th)|(19|20)\d\d|a (few|couple of) (days|weeks|months|years))\b", re.IGNORECASE)


def time_words(delta: float) -> Callable[[Question], Bonus]:
    """After the sitting share: a "When ..." question adds ``delta`` to candidates that say when (a relative or
    named time: "yesterday", "last week", "in May", "ago")."""
    def make(q: Question) -> Bonus:
        timed = per_turn(q, "timed", lambda text: bool(_TIME_WORDS.search(text)))
        asks = bool(_WHEN_Q.search(q.text))
        shared = fusion._with_sitting

        def bonus(score: dict[int, float], times: Mapping[int, float], share: float) -> dict[int, float]:
            out = shared(score, times, share)
            return {s: v + (delta if asks and timed[s - 1] else 0.0) for s, v in out.items()} if asks else out
        return bonus
    return make


def _quoted(t: str) -> str:
    return '"' + t.replace('"', '""') + '"'


def phrase_match(text: str, kind: str) -> str | None:
    """The keyword query's terms OR-ed, plus each pair of words adjacent in the question (neither a stopword) as a
    phrase (``kind="phrase"``) or within a NEAR window (``"near5"``: at most 5 tokens apart)."""
    words = [w.lower() for w in _WORD.findall(text)]
    parts = [_quoted(t) for t in query_terms(text)]  # the store's own keyword terms
    pairs = dict.fromkeys((a, b) for a, b in zip(words, words[1:], strict=False)
                          if a not in STOPWORDS and b not in STOPWORDS and a != b)
    for a, b in pairs:
        parts.append(_quoted(f"{a} {b}") if kind == "phrase" else f"NEAR({_quoted(a)} {_quoted(b)}, {kind[4:]})")
    return " OR ".join(parts) if parts else None


def phrases(kind: str) -> Lever:
    return lambda q: shipped(q, keyword=lambda q: q.conv.keyword(phrase_match(q.text, kind))[:50])


def dbsf(q: Question) -> list[int]:
    """Distribution-based score fusion: each signal's scores as (x - mean) / (6 std) + 0.5 over its candidates,
    clipped to [0, 1], instead of best-to-floor."""
    def scaled(hits: Cand, depth: int, zero_floor: bool) -> dict[int, float]:
        v = np.array([h[1] for h in hits])
        if len(v) < 2 or float(v.std()) <= 1e-9:
            return {}
        mu, sd = float(v.mean()), float(v.std())
        return {s: float(np.clip((x - mu) / (6 * sd) + 0.5, 0, 1)) for s, x in hits}

    with patched(_scaled=scaled):
        return shipped(q)


def blend(alpha: float) -> Lever:
    """The dense query: the first-person vector + ``alpha`` x the question's own (names kept), re-normalised."""
    def run(q: Question) -> list[int]:
        fp = spoken(q)
        v = fp.vector + alpha * q.vector
        return shipped(Question(q.conv, q.text, v / np.linalg.norm(v), q.evidence, q.category, q.dev),
                       first_person=False)
    return run


def no_pronouns(q: Question) -> list[int]:
    """Shipped without the pronouns of a question about one named person put in the first person (names only, as
    before the seventh round; ``ltm.store.search.speakers._THIRD_PERSON`` emptied)."""
    saved = speakers._THIRD_PERSON
    speakers._THIRD_PERSON = []
    try:
        return shipped(q)
    finally:
        speakers._THIRD_PERSON = saved


def seventh_round() -> dict[str, Lever]:
    out: dict[str, Lever] = {"shipped": shipped, "no sitting share": lambda q: shipped(q, sitting=0.0)}
    for share in (0.1, 0.15, 0.25, 0.3):
        out[f"sitting share {share}"] = (lambda s: lambda q: shipped(q, sitting=s))(share)
    for n in (8, 16, 64, 100_000):
        out[f"span {n}"] = span(n)
    out["exact sittings"] = with_bonus(exact_sittings)
    for w in (0.05, 0.1, 0.2):
        out[f"sitting centroid {w}"] = with_bonus(centroid(w))
    for penalty in (0.05, 0.1, 0.2):
        out[f"short turns -{penalty}"] = with_bonus(short_turns(penalty))
    for delta in (0.05, 0.1, 0.2):
        out[f"time words +{delta}"] = with_bonus(time_words(delta))
    for kind in ("phrase", "near3", "near6"):
        out[f"phrases {kind}"] = phrases(kind)
    out["dbsf"] = dbsf
    out["no pronouns"] = no_pronouns
    for alpha in (0.25, 0.5):
        out[f"blend {alpha}"] = blend(alpha)
    return out


if __name__ == "__main__":
    raise SystemExit(lv.main(seventh_round))
